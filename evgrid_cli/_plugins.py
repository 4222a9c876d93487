"""Policies registered by layers above the core (the LLM Oracle), loaded on demand."""

from __future__ import annotations

import importlib

PLUGIN_MODULES = ("oracle.policy",)


def load_policy_plugins() -> list[str]:
    """Import the modules that register extra policies; skip those not installed."""
    loaded = []
    for name in PLUGIN_MODULES:
        try:
            importlib.import_module(name)
        except ImportError:
            continue
        loaded.append(name)
    return loaded
