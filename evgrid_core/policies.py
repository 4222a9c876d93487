"""Policies behind one interface: the baseline ladder and the adversarial set.

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

import numpy as np

from .actions import Action, ChargerKind, Defer, LoadShift, Route
from .chargers import CHARGER_KW, KINDS, vehicle_kw
from .config import DEFAULTS
from .estimates import argmin, eta_minutes, expected_wait, plug_kw_by_kind
from .observation import Observation
from .plugins import entry_point_modules


class Policy(Protocol):
    name: str

    def reset(self, seed: int) -> None: ...

    def act(self, obs: Observation) -> Action | str: ...


# --- Shared estimates (the rest: ``estimates.py``) ---------------------------------------
# Policies see the observation, not the config: they estimate with the default
# world's numbers (charge efficiency, soft limit).
FASTEST_FIRST = np.argsort(np.argsort(-CHARGER_KW)).astype(float)  # (K,) 0 = fastest


def _route(obs: Observation, s: int, k: int) -> Route:
    assert obs.request is not None
    return Route(obs.request.id, s + 1, KINDS[k])


def _fallback(obs: Observation) -> Action | str:
    """No station can take the EV: wait if allowed, else admit it (an invalid answer)."""
    r = obs.request
    if r is not None and obs.defer_options:
        return Defer(r.id, obs.defer_options[0])
    return "NO_STATION"


# --- Baseline ladder ---------------------------------------------------------------------
class _Base:
    name = "base"

    def __init__(self) -> None:
        self.rng = np.random.default_rng(0)

    def reset(self, seed: int) -> None:
        self.rng = np.random.default_rng([seed, 0xB0])

    def act(self, obs: Observation) -> Action | str:
        if obs.request is None:
            return "NO_REQUEST"
        best = argmin(self.score(obs))
        return _fallback(obs) if best is None else _route(obs, *best)

    def score(self, obs: Observation) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError


class RandomValid(_Base):
    """Uniform over the valid ROUTE targets."""

    name = "random_valid"

    def score(self, obs: Observation) -> np.ndarray:
        return np.where(obs.route_mask, self.rng.random(obs.route_mask.shape), np.inf)


class Nearest(_Base):
    """Nearest valid station by drive time, fastest charger kind there."""

    name = "nearest"

    def score(self, obs: Observation) -> np.ndarray:
        kind_pref = FASTEST_FIRST * 1e-3
        return np.where(obs.route_mask, obs.travel_min[:, None] + kind_pref, np.inf)


class GreedyETA(_Base):
    """Earliest expected finish: travel + expected queue wait + charging time."""

    name = "greedy_eta"

    def score(self, obs: Observation) -> np.ndarray:
        return eta_minutes(obs)


class LeastLoadedFeeder(_Base):
    """Among stations within 15 min of the nearest, the least-loaded feeder's."""

    name = "least_loaded_feeder"

    def score(self, obs: Observation) -> np.ndarray:
        eta = eta_minutes(obs)
        if not np.isfinite(eta).any():
            return eta
        near = obs.travel_min <= obs.travel_min[obs.route_mask.any(axis=1)].min() + 15.0
        util = obs.feeder_forecast[obs.feeder_of]
        return np.where(
            near[:, None] & np.isfinite(eta),
            util[:, None] * 1000.0 + eta * 1e-3,
            np.inf,
        )


class PriceRenewable(_Base):
    """ETA plus the price of the grid: stressed feeders and expensive kW cost extra.

    It also issues a LOAD_SHIFT on the hungriest station of a feeder forecast to
    overload, at most once per tick.
    """

    name = "price_renewable"
    stress_weight = 3.0  # [min per kW per point of forecast utilisation above soft]

    def act(self, obs: Observation) -> Action | str:
        shift = _overload_shift(obs)
        return shift if shift is not None else super().act(obs)

    def score(self, obs: Observation) -> np.ndarray:
        r = obs.request
        assert r is not None
        kw = plug_kw_by_kind(r)[None, :]
        over = np.maximum(0.0, obs.feeder_forecast[obs.feeder_of] - DEFAULTS.soft_limit)
        over = over[:, None]
        price = obs.tariff_inr * (1.5 - obs.renewable_share)
        return (
            eta_minutes(obs) + self.stress_weight * over * 100 * kw / 50.0 * price / 4.5
        )


class UrgencyFirst(_Base):
    """EDF-like: critical or impatient EVs get the earliest finish; others the grid-aware pick."""

    name = "urgency_first"

    def __init__(self) -> None:
        super().__init__()
        self.grid = PriceRenewable()

    def score(self, obs: Observation) -> np.ndarray:
        r = obs.request
        assert r is not None
        slack = (
            r.deadline_in_min
            if r.critical and r.deadline_in_min is not None
            else r.patience_left_min
        )
        if slack < 45.0:
            plug_in = obs.travel_min[:, None] + expected_wait(obs)
            return np.where(obs.route_mask, plug_in, np.inf)
        return self.grid.score(obs)


def _overload_shift(obs: Observation) -> LoadShift | None:
    if obs.load_shifts_left == 0:
        return None
    over = np.flatnonzero(obs.feeder_forecast > 1.0)
    for f in over[np.argsort(-obs.feeder_forecast[over])]:
        on_f = np.flatnonzero(
            (obs.feeder_of == f) & ~obs.shifted & (obs.station_kw > 0)
        )
        if len(on_f):
            s = int(on_f[np.argmax(obs.station_kw[on_f])])
            return LoadShift(s + 1, 75, 15)
    return None


# --- Adversarial set ----------------------------------------------------------------------
class AlwaysDefer(_Base):
    """Defers every request as long as possible (then defers anyway: invalid)."""

    name = "always_defer"

    def act(self, obs: Observation) -> Action | str:
        r = obs.request
        if r is None:
            return "NO_REQUEST"
        return Defer(r.id, obs.defer_options[-1] if obs.defer_options else 60)


class AlwaysInvalid(_Base):
    """Answers with text that is not an action."""

    name = "always_invalid"

    def act(self, obs: Observation) -> Action | str:
        return "I think the EV should charge somewhere nice."


class AllToOneStation(_Base):
    """Sends every EV to S1 (Majestic) on its fastest kind, valid or not."""

    name = "all_to_one_station"

    def act(self, obs: Observation) -> Action | str:
        r = obs.request
        if r is None:
            return "NO_REQUEST"
        ultra = vehicle_kw(ChargerKind.ULTRA, r.max_ac_kw, r.max_dc_kw) > 0
        kind = ChargerKind.ULTRA if ultra else ChargerKind.SLOW
        return Route(r.id, 1, kind)


class LoadShiftSpam(GreedyETA):
    """Caps every station it can, every tick, then routes greedily."""

    name = "load_shift_spam"

    def act(self, obs: Observation) -> Action | str:
        if obs.load_shifts_left > 0:
            free = np.flatnonzero(~obs.shifted)
            if len(free):
                return LoadShift(int(self.rng.choice(free)) + 1, 25, 60)
        return super().act(obs)


class DeferIntoThePast(GreedyETA):
    """Typed DEFERs of -5 minutes for EVs whose patience outlasts the episode, else greedy."""

    # The exploit once found in the typed API: such an EV was scheduled into a past
    # tick, never came back and was never billed. The validator refuses it now.
    name = "defer_into_the_past"

    def act(self, obs: Observation) -> Action | str:
        r = obs.request
        left = (obs.n_ticks - obs.tick) * DEFAULTS.tick_minutes  # [min] to the end
        if r is not None and r.patience_left_min > left:
            return Defer(r.id, -5)
        return super().act(obs)


# --- Registry ------------------------------------------------------------------------------
BASELINES = (
    RandomValid,
    Nearest,
    GreedyETA,
    LeastLoadedFeeder,
    PriceRenewable,
    UrgencyFirst,
)
ADVERSARIAL = (
    AlwaysDefer,
    AlwaysInvalid,
    AllToOneStation,
    LoadShiftSpam,
    DeferIntoThePast,
)
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
