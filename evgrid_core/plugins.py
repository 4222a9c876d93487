"""Plugins of the layers above the core: modules named by entry points.

A layer above the core (the Oracle's policy, the AC grid model) declares an entry
point in ``pyproject.toml``; its name is what a user asks for, its value the module
whose import registers it. The core reads the table, never imports the layer itself
until asked.
"""

from __future__ import annotations

import tomllib
from importlib.metadata import entry_points
from pathlib import Path

CHECKOUT_PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def entry_point_modules(group: str) -> dict[str, str]:
    """name -> module of every entry point of ``group``, sorted by name.

    The installed entry points, and those the source checkout's ``pyproject.toml``
    declares: the same table read directly, so a checkout run without
    ``pip install -e .`` since a plugin was added still finds it.
    """
    found = {ep.name: ep.module for ep in entry_points(group=group)}
    if CHECKOUT_PYPROJECT.is_file():
        with CHECKOUT_PYPROJECT.open("rb") as f:
            project = tomllib.load(f).get("project", {})
        for name, value in project.get("entry-points", {}).get(group, {}).items():
            found.setdefault(name, value.partition(":")[0].strip())
    return dict(sorted(found.items()))
