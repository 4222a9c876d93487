#!/usr/bin/env bash
# Check the Dockerfile without Docker: replay its steps in a clean virtual environment.
#
#     bash scripts/replay_dockerfile.sh [WORKDIR]     (default /tmp/evgrid-docker-replay)
#
# Each `COPY src... dest` copies from this checkout into WORKDIR/app, each `RUN` runs
# there with a fresh venv's python and pip first on PATH and the Dockerfile's ENV set,
# except the steps that need root on the image itself (apt-get, useradd, chown),
# which are reported and skipped (this machine's set-up installs the same packages).
# Then the image's CMD is started on a free port and /health, / and /web/ are asked
# for. Uses the system's python3 (Debian 12: 3.11.2; the image has python:3.11-slim).
# llama-cpp-python: the wheel the set-up built from the same sdist with the same
# CMAKE_ARGS (.cache/wheels/, found by pip as a link) when there is one, so it is not
# compiled a second time (5 to 25 minutes); without it, pip builds it as the image does.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
if ls "$ROOT"/.cache/wheels/llama_cpp_python-*.whl >/dev/null 2>&1; then
    export PIP_FIND_LINKS="$ROOT/.cache/wheels"
fi
WORK="${1:-/tmp/evgrid-docker-replay}"
rm -rf "$WORK"
mkdir -p "$WORK/app"
python3 -m venv "$WORK/venv"
export PATH="$WORK/venv/bin:$PATH"
cd "$WORK/app"

# The ENV lines (continued with backslashes), as `export` lines.
eval "$(python3 - "$ROOT/Dockerfile" <<'PY'
import re, shlex, sys
text = re.sub(r"\\\n", " ", open(sys.argv[1]).read())
for line in text.splitlines():
    if line.startswith("ENV "):
        for k, v in re.findall(r"(\w+)=(\S*)", line[4:]):
            print(f"export {k}={shlex.quote(v)}")
PY
)"
# COPY and RUN steps in order, one a line.
python3 - "$ROOT/Dockerfile" <<'PY' > "$WORK/steps"
import re, sys
text = re.sub(r"\\\n", " ", open(sys.argv[1]).read())
for line in text.splitlines():
    if line.startswith(("COPY ", "RUN ", "CMD ")):
        print(line)
PY
while IFS= read -r step; do
    case "$step" in
        COPY\ *)
            read -r -a parts <<<"${step#COPY }"
            dest="${parts[-1]}"
            for src in "${parts[@]:0:${#parts[@]}-1}"; do
                if [[ "$dest" == */ ]]; then mkdir -p "$dest"; else mkdir -p "$(dirname "$dest")"; fi
                cp -r "$ROOT/$src" "$dest"
            done
            echo "--- replayed: $step" ;;
        RUN\ *)
            cmd="${step#RUN }"
            if [[ "$cmd" == *apt-get* || "$cmd" == *useradd* ]]; then
                echo "--- skipped (root on the image): $cmd"
                continue
            fi
            cmd="${cmd/&& chown -R user:user \/home\/user\/app/}"
            echo "--- replaying: $cmd"
            bash -c "$cmd" ;;
        CMD\ *)
            echo "$step" >"$WORK/cmd" ;;
    esac
done <"$WORK/steps"

port=$(python3 -c "import socket; s=socket.socket(); s.bind(('127.0.0.1',0)); print(s.getsockname()[1])")
cmd=$(python3 -c "import json,sys; print(' '.join(json.loads(open(sys.argv[1]).read()[4:])))" "$WORK/cmd")
cmd="${cmd/--host 0.0.0.0/--host 127.0.0.1}"
cmd="${cmd/--port 8000/--port $port}"
echo "--- starting the image's CMD: $cmd"
$cmd >"$WORK/server.log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null || true' EXIT
for _ in $(seq 1 180); do
    curl -fs "http://127.0.0.1:$port/health" >/dev/null 2>&1 && break
    sleep 1
done
curl -fs "http://127.0.0.1:$port/health"; echo
curl -fs -o /dev/null -w "GET / -> %{http_code} %{redirect_url}\n" "http://127.0.0.1:$port/"
curl -fs -o /dev/null -w "GET /web/ -> %{http_code}\n" "http://127.0.0.1:$port/web/"
python -c "from evgrid_core.policies import make_policy; from evgrid_core import EVGridEnv; e = EVGridEnv(); o = e.reset(seed=0, scenario='quiet_night'); p = make_policy('oracle'); print('oracle decides:', p.act(o), p.last_debug['source'], round(p.last_debug['latency_ms']), 'ms')"
echo "--- the Dockerfile's steps replayed in $WORK: server up on port $port"
