#!/usr/bin/env bash
# The core, the CLI and the city view: numpy, networkx, pygame-ce, imageio(+ffmpeg), pydantic.
set -euo pipefail
if [ "$MODE" = test ]; then
    "$PY" -m pip install -q -e ".[dev,gym]"
else
    "$PY" -m pip install -q -e .
fi
