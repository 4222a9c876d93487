#!/usr/bin/env bash
# One set-up for a fresh machine. `bash scripts/setup.sh` installs what `python main.py`
# needs; `bash scripts/setup.sh test` adds everything the test suite needs.
# Each component adds its own steps as scripts/setup.d/NN-name.sh; they are run in
# order with MODE=main|test in the environment.
set -euo pipefail
cd "$(dirname "$0")/.."
export MODE="${1:-main}"
case "$MODE" in main|test) ;; *) echo "usage: $0 [main|test]" >&2; exit 2 ;; esac
export PIP_DISABLE_PIP_VERSION_CHECK=1
PY="${PYTHON:-python3}"
export PY
for step in scripts/setup.d/*.sh; do
    echo "--- setup: $step ($MODE)"
    bash "$step"
done
echo "--- setup done ($MODE)"
