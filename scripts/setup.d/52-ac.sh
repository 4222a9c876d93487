#!/usr/bin/env bash
# The AC power-flow reference (evgrid_ac, `SimConfig(grid="ac")`, tests/ac): the `ac`
# extra, pandapower 3.5.6 (it pins pandas 2.3, which the `train` extra's datasets
# and TRL accept). Wheels only, no apt packages. MODE=main: nothing -- the core's
# grid models (the feeder sum, LinDistFlow) need only numpy.
set -euo pipefail
[ "$MODE" = test ] || exit 0
if ! "$PY" -c "import importlib.metadata as m, sys; sys.exit(m.version('pandapower') != '3.5.6')" 2>/dev/null; then
    "$PY" -m pip install -q -e ".[ac]"
fi
"$PY" -c "import pandapower" >/dev/null
