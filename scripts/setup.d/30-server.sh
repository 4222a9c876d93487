#!/usr/bin/env bash
# The OpenEnv server (server.py, evgrid_openenv/). Both modes: the `server` extra
# (openenv==0.10.0 with FastAPI, uvicorn, websockets), the second front end beside
# the city view. MODE=test adds schemathesis for the API fuzz test.
# No apt packages: everything is a Python wheel.
set -euo pipefail
if ! "$PY" -c "import importlib.metadata as m, sys; sys.exit(m.version('openenv') != '0.10.0')" 2>/dev/null; then
    "$PY" -m pip install -q -e ".[server]"
fi
if [ "$MODE" = test ]; then
    "$PY" -c "import importlib.metadata as m, sys; sys.exit(m.version('schemathesis') != '4.32.5')" 2>/dev/null \
        || "$PY" -m pip install -q "schemathesis==4.32.5"
fi
"$PY" -c "import openenv.core, uvicorn, websockets" >/dev/null
