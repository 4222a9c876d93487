#!/usr/bin/env bash
# One set-up for a fresh machine. `bash scripts/setup.sh` installs what
# `.venv/bin/python main.py` needs; `bash scripts/setup.sh test` adds everything the
# test suite needs.
#
# Everything Python goes into the project's own virtual environment, `.venv/`, made
# from the system's `python3` (Debian 12's 3.11.2 is the floor; `PYTHON=/path/python3`
# picks another). Nothing is installed into the system Python (Debian refuses it: PEP
# 668). Debian's `python3-venv` is installed when the venv module is missing.
#
# Each component adds its own steps as scripts/setup.d/NN-name.sh; they are run in
# order with MODE=main|test, PY=<the venv's python> and SUDO in the environment.
set -euo pipefail
cd "$(dirname "$0")/.."
export MODE="${1:-main}"
case "$MODE" in main|test) ;; *) echo "usage: $0 [main|test]" >&2; exit 2 ;; esac
export PIP_DISABLE_PIP_VERSION_CHECK=1
SUDO=""
[ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1 && SUDO="sudo"
export SUDO

BASE_PY="${PYTHON:-python3}"
if ! command -v "$BASE_PY" >/dev/null 2>&1; then
    echo "setup: $BASE_PY not found; install Python 3.11 (Debian: apt-get install python3)" >&2
    exit 1
fi
if ! "$BASE_PY" -c 'import sys; sys.exit(sys.version_info < (3, 11, 2))'; then
    echo "setup: $("$BASE_PY" --version 2>&1) is too old; Python 3.11.2 or newer is needed" >&2
    exit 1
fi

VENV="$PWD/.venv"
if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -m pip --version >/dev/null 2>&1; then
    rm -rf "$VENV"
    echo "--- setup: creating $VENV with $("$BASE_PY" --version 2>&1) ($(command -v "$BASE_PY"))"
    if ! "$BASE_PY" -m venv "$VENV" >/dev/null 2>&1; then
        # Debian ships the venv module (with ensurepip) in a package of its own.
        rm -rf "$VENV"
        echo "--- setup: the venv module is missing; installing Debian's python3-venv"
        $SUDO apt-get update -q
        DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends python3-venv
        "$BASE_PY" -m venv "$VENV"
    fi
fi
PY="$VENV/bin/python"
export PY
echo "--- setup: $("$PY" --version) in $VENV ($MODE)"

# A set-up that already ran with the same scripts, project file and Python is not
# repeated (a second run takes a second); any change to them runs every step again.
stamp_key() {
    { cat pyproject.toml scripts/setup.sh scripts/heartbeat.sh scripts/setup.d/*.sh; "$PY" --version; echo "$1"; } \
        | sha256sum | cut -d' ' -f1
}
done_already() {  # MODE: test covers main
    local m
    for m in "$MODE" test; do
        [ -f "$VENV/.setup-$m" ] && [ "$(cat "$VENV/.setup-$m")" = "$(stamp_key "$m")" ] && return 0
    done
    return 1
}
if done_already && "$PY" -c "import evgrid_core, viz.app, pygame, imageio_ffmpeg" 2>/dev/null; then
    echo "--- setup done ($MODE): already set up, nothing changed (rm $VENV/.setup-* to redo)"
    exit 0
fi
for step in scripts/setup.d/*.sh; do
    echo "--- setup: $step ($MODE)"
    bash "$step"
done
stamp_key "$MODE" >"$VENV/.setup-$MODE"
echo "--- setup done ($MODE): run the project with $VENV/bin/python (or source $VENV/bin/activate)"
