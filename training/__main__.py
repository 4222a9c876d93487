"""``python3 -m training --config cpu-smollm2``: the same as ``evgrid train``."""

from __future__ import annotations

import sys

from training.cli import main

if __name__ == "__main__":
    sys.exit(main())
