#!/usr/bin/env bash
# Evaluation (`evgrid compare`, `evgrid optimum`, tests/eval): the `eval` extra,
# scipy (sparse matrices, statistics), highspy (the HiGHS MILP solver) and matplotlib
# (Agg plots, no display). Wheels only, no apt packages. Both modes: the commands
# are part of the product; pip is quick when they are already there.
set -euo pipefail
"$PY" -m pip install -q -e ".[eval]"
