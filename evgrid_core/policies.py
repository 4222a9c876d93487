"""Policies behind one interface, and the one registry of them.

A policy maps an ``Observation`` to an action (typed, or one text line, as the
LLM Oracle answers). ``make_policy(name)`` builds any registered policy. Policies
that live above the core (the Oracle) are plugins: a module that calls
``register_policy`` when imported, named in the ``evgrid.policies`` entry-point
group; ``load_plugins`` imports them the first time a name is not found here.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from .actions import Action
from .adversarial import ADVERSARIAL
from .baselines import BASELINES
from .observation import Observation
from .plugins import entry_point_modules


class Policy(Protocol):
    name: str

    def reset(self, seed: int) -> None: ...

    def act(self, obs: Observation) -> Action | str: ...


# --- Registry ------------------------------------------------------------------------------
_REGISTRY: dict[str, Callable[..., Policy]] = {
    cls.name: cls for cls in (*BASELINES, *ADVERSARIAL)
}
_DESCRIPTIONS: dict[str, str] = {
    cls.name: (cls.__doc__ or "").strip().splitlines()[0]
    for cls in (*BASELINES, *ADVERSARIAL)
}


def _distilled(**kwargs: object) -> Policy:
    from .distilled import Distilled  # imported (and its model read) on first use

    return Distilled(**kwargs)  # type: ignore[arg-type]


_REGISTRY["distilled"] = _distilled
_DESCRIPTIONS["distilled"] = (
    "The hindsight optimum's choices learnt by gradient-boosted trees (evgrid distill), "
    "never onto a feeder forecast over its limit while another answer exists"
)


def register_policy(
    name: str, factory: Callable[..., Policy], description: str = ""
) -> None:
    """Add a policy (e.g. the LLM Oracle) to the registry."""
    _REGISTRY[name] = factory
    _DESCRIPTIONS[name] = description


def policy_names() -> list[str]:
    """Every policy there is: the core's, then the plugins' (loaded first)."""
    load_plugins()
    return list(_REGISTRY)


def describe_policy(name: str) -> str:
    if name not in _DESCRIPTIONS:
        load_plugins()
    return _DESCRIPTIONS.get(name, "")


def make_policy(name: str, **kwargs: object) -> Policy:
    if name not in _REGISTRY:
        load_plugins()
    try:
        factory = _REGISTRY[name]
    except KeyError:
        skipped = "; ".join(
            f"plugin {p.name} ({p.module}) not loaded: {p.error}"
            for p in load_plugins()
            if p.error
        )
        raise ValueError(
            f"unknown policy {name!r}; choose one of: {', '.join(_REGISTRY)}"
            + (f" ({skipped})" if skipped else "")
        ) from None
    return factory(**kwargs)


# --- Plugins: policies registered by layers above the core ---------------------------
PLUGIN_GROUP = "evgrid.policies"  # entry points: name = "module that registers it"


@dataclass(frozen=True)
class Plugin:
    """One entry of ``PLUGIN_GROUP`` and what importing it did."""

    name: str  # the entry point's name, e.g. "oracle"
    module: str  # importing it registers the policy, e.g. "oracle.policy"
    error: str = ""  # why it was skipped (its ImportError); "" when loaded


def plugin_modules() -> dict[str, str]:
    """name -> module of every policy plugin, sorted by name (``plugins``)."""
    return entry_point_modules(PLUGIN_GROUP)


_plugins: tuple[Plugin, ...] | None = None
_plugins_lock = threading.RLock()


def load_plugins() -> tuple[Plugin, ...]:
    """Import every policy plugin, once; later calls answer the same.

    A plugin whose import raises ImportError (a missing package) is skipped and
    its reason kept in ``Plugin.error``; any other error is a bug and propagates.
    """
    global _plugins
    with _plugins_lock:
        if _plugins is None:
            _plugins = ()  # a plugin that asks for the registry as it loads sees none
            try:
                _plugins = tuple(_load(n, m) for n, m in plugin_modules().items())
            except BaseException:
                # Not left half-loaded: the next call tries (and fails) again.
                _plugins = None
                raise
        return _plugins


def _load(name: str, module: str) -> Plugin:
    try:
        importlib.import_module(module)
    except ImportError as e:
        return Plugin(name, module, f"{type(e).__name__}: {e}")
    return Plugin(name, module)
