"""The README names every reward part, in the core's order (``REWARD_KEYS`` is built
from ``RewardWeights``: a new term must be documented where users read first)."""

from __future__ import annotations

import re
from pathlib import Path

from evgrid_core.reward import REWARD_KEYS

README = Path(__file__).resolve().parents[2] / "README.md"


def test_the_readme_lists_every_reward_key_in_order() -> None:
    text = README.read_text()
    m = re.search(r"\*\*Reward\.\*\* A weighted sum of named costs \(([^)]*)\)", text)
    assert m, "the README's Reward paragraph is gone"
    named = re.findall(r"`(\w+)`", m.group(1))
    assert tuple(named) == REWARD_KEYS
