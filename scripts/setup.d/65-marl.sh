#!/usr/bin/env bash
# Many operators and many machines (evgrid_marl, evgrid_rl; tests/marl, tests/rl):
# the `rl` extra, Ray 2.60.0 with RLlib, PettingZoo 1.27.0, and gymnasium 1.2.2 (RLlib
# pins it; 10-core.sh's dev extra may have brought a newer one). torch: the CPU wheel
# 60-train.sh installs first (a plain `torch` would pull CUDA); installed here too when
# that step did not run. Wheels only. MODE=main: nothing (`pip install -e .[rl]`).
set -euo pipefail
[ "$MODE" = test ] || exit 0
"$PY" -c "import torch, sys; sys.exit(torch.__version__.split('+')[0] != '2.13.0')" \
    2>/dev/null || "$PY" -m pip install -q "torch==2.13.0"
if ! "$PY" -c "import importlib.metadata as m, sys; sys.exit(m.version('ray') != '2.60.0' or m.version('pettingzoo') != '1.27.0')" 2>/dev/null; then
    "$PY" -m pip install -q -e ".[rl]"
fi
"$PY" -c "import ray, pettingzoo, ray.rllib" >/dev/null
