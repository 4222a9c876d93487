#!/usr/bin/env bash
# Training the distilled policy (`evgrid distill`, tests/training/test_training_distill.py):
# LightGBM, which needs the GNU OpenMP runtime (Debian's libgomp1; a bare Debian 12
# may lack it). MODE=main: nothing -- the policy itself runs on numpy alone, from
# the committed trees (evgrid_core/data/distilled.json).
set -euo pipefail
[ "$MODE" = test ] || exit 0

if ! /sbin/ldconfig -p 2>/dev/null | grep -q 'libgomp\.so\.1'; then
    echo "setup: installing Debian's libgomp1 (LightGBM's OpenMP runtime)"
    $SUDO apt-get update -q
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends libgomp1
fi
"$PY" -m pip install -q -e ".[distill]"
