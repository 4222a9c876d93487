"""The decision's candidates: every valid answer to a request, with the numbers that decide.

One function, ``candidates(obs)``, lists the valid ROUTEs (station, kind) and
DEFERs of the request and describes each by a row of features read from the
observation alone (what any policy may see). The learned policy (``distilled``)
scores these rows, the LLM Oracle's prompt shows the best-described of them, and
its training labels are the optimum's pick among them: one definition for all.

Features are finite floats (no NaN): a number that does not apply to a candidate
(a DEFER's drive time) is written as ``NA`` (-1), so a tree model needs no rule
for missing values.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from .actions import DEFER_MINUTES, Action, Defer, Route, format_action
from .chargers import KINDS
from .config import DEFAULTS
from .estimates import (
    TYPICAL_SESSION_MIN,
    charge_minutes,
    expected_wait,
    plug_kw_by_kind,
)
from .observation import Observation

NA = -1.0  # a feature that does not apply to this candidate

# The request's and the tick's numbers: the same for every candidate of a decision.
CONTEXT_FEATURES = (
    "day_frac",  # [0-1] tick / ticks in the episode
    "tariff_inr",  # [INR/kWh] now
    "renewable",  # [0-1] now
    "pending",  # requests due now, this one included
    "soc",  # [0-1]
    "target",  # [0-1]
    "need_kwh",  # [kWh] battery energy to target
    "battery_kwh",
    "critical",  # 0/1
    "slack_min",  # [min] to the deadline (critical) or to giving up
    "patience_left_min",
    "waited_min",
    "defers",  # earlier defers of this EV
    "max_dc_kw",  # 0: no DC inlet
    "max_ac_kw",
    "range_km",
    "n_routes",  # valid ROUTE targets
    "min_eta_min",  # best expected finish over the valid ROUTEs
    "min_plug_in_min",  # soonest expected plug-in over the valid ROUTEs
    "max_forecast",  # [0-1] the most stressed feeder's 30-minute forecast
)
# The candidate's own numbers.
CANDIDATE_FEATURES = (
    "is_defer",  # 0/1
    "defer_min",  # [min] NA for a ROUTE
    "kind",  # 0 SLOW, 1 FAST, 2 ULTRA; NA for a DEFER
    "kw",  # [kW] what this EV draws from this kind
    "travel_min",
    "road_km",
    "travel_excess_min",  # over the nearest valid station
    "travel_rank",  # 0 = nearest station (by its stations, not kinds)
    "wait_min",  # expected queue wait at arrival
    "charge_min",  # to target at full power
    "plug_in_min",  # travel + wait
    "plug_in_excess_min",  # over the soonest plug-in
    "eta_min",  # travel + wait + charge
    "eta_excess_min",  # over the best ETA
    "eta_rank",  # 0 = best expected finish
    "free",  # free plugs of this kind at the station
    "plugs",
    "queue",
    "inbound",  # EVs already routed to this kind here and still driving
    "inbound_station",  # ... to any kind at this station
    "spare",  # free plugs left once the queue and the inbound EVs are served
    "wait_inbound_min",  # expected wait counting the inbound EVs as queued
    "eta_inbound_excess_min",  # travel + that wait + charge, over its best
    "kinds_here",  # valid kinds at this station
    "fastest_here",  # 0/1: the highest-power valid kind at this station
    "feeder_util",  # [0-1] last tick
    "feeder_forecast",  # [0-1] 30-minute peak if EV load stays
    "feeder_headroom_kw",  # capacity left below the forecast peak
    "load_share",  # this EV's kW over that headroom (large: it stresses the feeder)
    "forecast_with_ev",  # [0-1] forecast plus this EV's kW
    "feeder_shed_kw",  # EV load shed on this feeder last tick
    "station_kw",  # [kW] mean power last tick
    "station_cap_kw",
    "shifted",  # 0/1 under a LOAD_SHIFT cap
    "energy_cost_inr",  # the request's energy at today's tariff (grid side)
)
FEATURES = CONTEXT_FEATURES + CANDIDATE_FEATURES
N_CONTEXT = len(CONTEXT_FEATURES)


@dataclass(frozen=True)
class Candidates:
    """The valid answers to one request: actions, their text, their feature rows.

    The actions are made when first asked for (``distilled`` needs one of ~50)."""

    features: np.ndarray  # (n, len(FEATURES)) float64
    ev: int = 0  # the request's EV id
    stations: tuple[int, ...] = ()  # the ROUTEs' station indices (from 0)
    kinds: tuple[int, ...] = ()  # and their charger kinds
    defers: tuple[int, ...] = ()  # [min] the DEFERs
    # (n,) [0-1] what the EVs already driving to each candidate's feeder will draw on
    # arrival within the forecast's 30 minutes, over its capacity (0 for a DEFER);
    # None: nothing committed (``overloading``)
    committed: np.ndarray | None = None

    @cached_property
    def actions(self) -> tuple[Action, ...]:
        routes = [Route(self.ev, s + 1, KINDS[k])
                  for s, k in zip(self.stations, self.kinds, strict=True)]  # fmt: skip
        return (*routes, *(Defer(self.ev, m) for m in self.defers))

    @property
    def lines(self) -> list[str]:
        return [format_action(a) for a in self.actions]

    def column(self, name: str) -> np.ndarray:
        return self.features[:, FEATURES.index(name)]

    def late(self) -> np.ndarray:
        """(n,) True for a ROUTE expected to plug in after the request's slack.

        Expected plug-in: the drive plus the wait counting the EVs already routed
        to that kind as queued (``wait_inbound_min``, the wait the Oracle's prompt
        shows). Slack: the plug-in deadline of a critical EV, else when the EV gives
        up. A late ROUTE is expected to lose the EV (or its deadline) on the way or
        in the queue. DEFERs are never late: the validator keeps them within patience.
        """
        plug_in = self.column("travel_min") + self.column("wait_inbound_min")
        return (self.column("is_defer") == 0.0) & (plug_in > self.column("slack_min"))

    def overloading(self) -> np.ndarray:
        """(n,) True for a ROUTE that would push its feeder over its limit within
        the forecast horizon.

        The feeder's forecast peak over the next 30 minutes (the grid model's own
        forecast with the EV load it carries now, ``feeder_forecast``) plus this EV's
        kW from that charger kind (``forecast_with_ev``), plus what the EVs already
        driving to the feeder's stations will draw when they arrive within those 30
        minutes (``committed``: ``Observation.inbound_kw``), over the feeder's
        capacity: above 1.0 the feeder's protection would shed EV load there, which
        is what the ``peak`` reward part charges and what the report counts as
        feeder-minutes over a limit. DEFERs never overload: they add no load now.
        """
        load = self.column("forecast_with_ev")
        if self.committed is not None:
            load = load + self.committed
        return (self.column("is_defer") == 0.0) & (load > 1.0)

    def sparing(self) -> np.ndarray:
        """(n,) True for the candidates a policy that spares the feeders chooses
        among: those ``overloading`` does not name (a DEFER always qualifies), or all
        of them when each one overloads. ``distilled`` and the Oracle's "+spare"
        listing choose among these."""
        ok = ~self.overloading()
        return ok if ok.any() else np.ones(len(self), dtype=bool)

    def __len__(self) -> int:
        return len(self.features)


def candidates(obs: Observation) -> Candidates:
    """Every valid ROUTE and DEFER of the request (none when there is no request)."""
    r = obs.request
    if r is None or obs.done:
        return Candidates(np.zeros((0, len(FEATURES))))
    mask = obs.route_mask
    st, kd = np.nonzero(mask)  # row-major: by station, then kind
    n_route, defers = len(st), obs.defer_options
    n = n_route + len(defers)
    X = np.full((n, len(FEATURES)), NA)

    kw_kind = plug_kw_by_kind(r)  # (K,)
    travel = obs.travel_min[st]
    wait = expected_wait(obs)[st, kd]
    spare = (obs.plugs - obs.busy - obs.queue - obs.inbound)[st, kd]
    typical = TYPICAL_SESSION_MIN[kd]
    wait_in = np.maximum(0, 1 - spare) * typical / np.maximum(obs.plugs[st, kd], 1)
    charge = charge_minutes(obs)[st, kd]
    plug_in = travel + wait
    eta = plug_in + charge
    fe = obs.feeder_of[st]
    cap = obs.feeder_capacity_kw[fe]
    forecast = obs.feeder_forecast[fe]
    headroom = np.maximum(cap * (1.0 - forecast), 0.0)
    kw = kw_kind[kd]
    need_kwh = max(0.0, r.target - r.soc) * r.battery_kwh
    slack = r.deadline_in_min if r.critical and r.deadline_in_min is not None else None

    context = [
        obs.tick / max(obs.n_ticks, 1),
        obs.tariff_inr,
        obs.renewable_share,
        obs.pending,
        r.soc,
        r.target,
        need_kwh,
        r.battery_kwh,
        float(r.critical),
        r.patience_left_min if slack is None else slack,
        r.patience_left_min,
        r.waited_min,
        r.defers,
        r.max_dc_kw,
        r.max_ac_kw,
        r.range_km,
        n_route,
        float(eta.min()) if n_route else NA,
        float(plug_in.min()) if n_route else NA,
        float(obs.feeder_forecast.max()) if obs.feeder_forecast.size else 0.0,
    ]
    X[:, :N_CONTEXT] = context
    c = {name: N_CONTEXT + i for i, name in enumerate(CANDIDATE_FEATURES)}
    X[:, c["is_defer"]] = 0.0
    if n_route:
        kinds_here = mask.sum(axis=1)
        fastest = np.where(mask, kw_kind[None, :], -1.0).max(axis=1)
        station_rank = _ranks(obs.travel_min, mask.any(axis=1))
        rows = slice(0, n_route)
        for name, values in (
            ("kind", kd),
            ("kw", kw),
            ("travel_min", travel),
            ("road_km", obs.road_km[st]),
            ("travel_excess_min", travel - travel.min()),
            ("travel_rank", station_rank[st]),
            ("wait_min", np.minimum(wait, 1e4)),
            ("charge_min", np.minimum(charge, 1e4)),
            ("plug_in_min", np.minimum(plug_in, 1e4)),
            ("plug_in_excess_min", np.minimum(plug_in - plug_in.min(), 1e4)),
            ("eta_min", np.minimum(eta, 1e4)),
            ("eta_excess_min", np.minimum(eta - eta.min(), 1e4)),
            ("eta_rank", np.argsort(np.argsort(eta, kind="stable"), kind="stable")),
            ("free", (obs.plugs - obs.busy)[st, kd]),
            ("plugs", obs.plugs[st, kd]),
            ("queue", obs.queue[st, kd]),
            ("inbound", obs.inbound[st, kd]),
            ("inbound_station", obs.inbound.sum(axis=1)[st]),
            ("spare", spare),
            ("wait_inbound_min", wait_in),
            ("eta_inbound_excess_min", _excess(travel + wait_in + charge)),
            ("kinds_here", kinds_here[st]),
            ("fastest_here", (kw >= fastest[st]).astype(float)),
            ("feeder_util", obs.feeder_util[fe]),
            ("feeder_forecast", forecast),
            ("feeder_headroom_kw", headroom),
            ("load_share", np.minimum(kw / np.maximum(headroom, 1.0), 100.0)),
            ("forecast_with_ev", forecast + kw / np.maximum(cap, 1.0)),
            ("feeder_shed_kw", obs.feeder_shed_kw[fe]),
            ("station_kw", obs.station_kw[st]),
            ("station_cap_kw", obs.cap_kw[st]),
            ("shifted", obs.shifted[st].astype(float)),
            (
                "energy_cost_inr",
                np.full(
                    n_route, need_kwh / DEFAULTS.charge_efficiency * obs.tariff_inr
                ),
            ),
        ):
            X[rows, c[name]] = values
    if defers:
        X[n_route:, c["is_defer"]] = 1.0
        X[n_route:, c["defer_min"]] = defers
    committed = np.zeros(n)
    if n_route:
        on_feeder = np.bincount(
            obs.feeder_of, weights=obs.inbound_kw, minlength=len(obs.feeder_capacity_kw)
        )
        committed[:n_route] = on_feeder[fe] / np.maximum(cap, 1.0)
    return Candidates(X, r.id, tuple(st.tolist()), tuple(kd.tolist()), tuple(defers),
                      committed)  # fmt: skip


def fixed_view(c: Candidates, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The candidates as RL reads them: ``k`` rows of squashed features, a mask, and
    which candidate each row is.

    Rows: the ROUTEs by expected finish (``eta_min``, ties to the first), then every
    DEFER; when there are more than ``k``, the ROUTEs finishing last are left out
    (the DEFERs always stay: at most ``len(DEFER_MINUTES)``). Each feature is
    squashed as sign(x) * log(1 + |x|), so minutes, kW and 0/1 flags share one scale
    without statistics learnt from data. Returns ``(rows (k, F) float32, mask (k,)
    bool, pick (k,) int64: the candidate index of each row, -1 for padding)``.
    """
    if k <= len(DEFER_MINUTES):
        raise ValueError(f"k={k}: must exceed the {len(DEFER_MINUTES)} DEFER options")
    n_route = len(c.stations)
    route_order = np.argsort(c.column("eta_min")[:n_route], kind="stable")
    keep = np.concatenate(
        [route_order[: k - len(c.defers)], np.arange(n_route, len(c))]
    ).astype(np.int64)
    rows = np.zeros((k, len(FEATURES)), dtype=np.float32)
    x = c.features[keep]
    rows[: len(keep)] = np.sign(x) * np.log1p(np.abs(x))
    mask = np.zeros(k, dtype=bool)
    mask[: len(keep)] = True
    pick = np.full(k, -1, dtype=np.int64)
    pick[: len(keep)] = keep
    return rows, mask, pick


def _excess(v: np.ndarray) -> np.ndarray:
    return np.minimum(v - v.min(), 1e4)


def _ranks(values: np.ndarray, usable: np.ndarray) -> np.ndarray:
    """(S,) the rank of each usable entry by value (ties by index); NA elsewhere."""
    out = np.full(values.shape, NA)
    idx = np.flatnonzero(usable)
    order = idx[np.argsort(values[idx], kind="stable")]
    out[order] = np.arange(len(order))
    return out
