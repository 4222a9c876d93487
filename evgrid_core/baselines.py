"""The baseline ladder: heuristics that score every valid ROUTE target from the
observation (``estimates.py``) and answer the best, from random to urgency-first.
Registered by name in ``policies.py``."""

from __future__ import annotations

import numpy as np

from .actions import Action, Defer, LoadShift, Route
from .chargers import CHARGER_KW, KINDS
from .config import DEFAULTS
from .estimates import argmin, eta_minutes, expected_wait, plug_kw_by_kind
from .observation import Observation

# --- Shared estimates (the rest: ``estimates.py``) ---------------------------------------
# Policies see the observation, not the config: they estimate with the default
# world's numbers (charge efficiency, soft limit).
FASTEST_FIRST = np.argsort(np.argsort(-CHARGER_KW)).astype(float)  # (K,) 0 = fastest


def route_to(obs: Observation, s: int, k: int) -> Route:
    assert obs.request is not None
    return Route(obs.request.id, s + 1, KINDS[k])


def fallback(obs: Observation) -> Action | str:
    """No station can take the EV: wait if allowed, else admit it (an invalid answer)."""
    r = obs.request
    if r is not None and obs.defer_options:
        return Defer(r.id, obs.defer_options[0])
    return "NO_STATION"


# --- Baseline ladder ---------------------------------------------------------------------
class ScoredPolicy:
    name = "base"

    def __init__(self) -> None:
        self.rng = np.random.default_rng(0)

    def reset(self, seed: int) -> None:
        self.rng = np.random.default_rng([seed, 0xB0])

    def act(self, obs: Observation) -> Action | str:
        if obs.request is None:
            return "NO_REQUEST"
        best = argmin(self.score(obs))
        return fallback(obs) if best is None else route_to(obs, *best)

    def score(self, obs: Observation) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError


class RandomValid(ScoredPolicy):
    """Uniform over the valid ROUTE targets."""

    name = "random_valid"

    def score(self, obs: Observation) -> np.ndarray:
        return np.where(obs.route_mask, self.rng.random(obs.route_mask.shape), np.inf)


class Nearest(ScoredPolicy):
    """Nearest valid station by drive time, fastest charger kind there."""

    name = "nearest"

    def score(self, obs: Observation) -> np.ndarray:
        kind_pref = FASTEST_FIRST * 1e-3
        return np.where(obs.route_mask, obs.travel_min[:, None] + kind_pref, np.inf)


class GreedyETA(ScoredPolicy):
    """Earliest expected finish: travel + expected queue wait + charging time."""

    name = "greedy_eta"

    def score(self, obs: Observation) -> np.ndarray:
        return eta_minutes(obs)


class LeastLoadedFeeder(ScoredPolicy):
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


class PriceRenewable(ScoredPolicy):
    """ETA plus the price of the grid: stressed feeders and expensive kW cost extra.

    It also issues a LOAD_SHIFT on the hungriest station of a feeder forecast to
    overload, at most once per tick.
    """

    name = "price_renewable"
    stress_weight = 3.0  # [min per kW per point of forecast utilisation above soft]

    def act(self, obs: Observation) -> Action | str:
        shift = overload_shift(obs)
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


class UrgencyFirst(ScoredPolicy):
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


def overload_shift(obs: Observation) -> LoadShift | None:
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


BASELINES = (
    RandomValid,
    Nearest,
    GreedyETA,
    LeastLoadedFeeder,
    PriceRenewable,
    UrgencyFirst,
)
