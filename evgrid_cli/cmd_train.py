"""``evgrid train``: optimum labels -> distilled -> SFT -> GRPO -> ship, from one preset.

The command is the training package's own (``training/cli.py``, also
``python3 -m training``); the CLI only names it.
"""

from __future__ import annotations

from training.cli import HELP, add_arguments, run

__all__ = ["HELP", "add_arguments", "run"]
