"""A station operator's choices as rows: hold (NOOP), or cap one of its stations.

The candidate interface for the operators (the fleets' is ``evgrid_core.candidates``):
each row is one answer the operator may give now, described by named features read
from the core's ``Observation`` alone, so one network can score the rows of every
operator with the same weights. Row 0 is always NOOP (hold: no cap); then one row
per (own station, cap, minutes) the core would accept now (the station not already
capped, the tick's LOAD_SHIFT budget not spent) on a station drawing power (a cap
on an idle one cuts nothing now), stations in id order, caps and minutes in
``SHIFT_CAP_PCT`` x ``SHIFT_MINUTES`` order.

Features are squashed as ``fixed_view`` squashes the fleets' (sign(x) log(1 + |x|)):
minutes, kW and flags on one scale, no statistics learnt from data.
"""

from __future__ import annotations

import numpy as np

from evgrid_core import LoadShift, Observation
from evgrid_core.actions import SHIFT_CAP_PCT, SHIFT_MINUTES

SHIFT_OPTIONS: tuple[tuple[int, int], ...] = tuple(
    (cap, minutes) for cap in SHIFT_CAP_PCT for minutes in SHIFT_MINUTES
)
OPERATOR_FEATURES = (
    "noop",  # 1 for the hold row
    "cap_frac",  # [0-1] the cap, of the station's limit (1 for NOOP)
    "cap_hours",  # [h] how long the cap holds (0 for NOOP)
    "station_kw",  # [kW] the station's mean power last tick
    "station_cap_kw",  # [kW] its limit now
    "cut_kw",  # [kW] power the cap takes off at last tick's draw (0 for NOOP)
    "station_share",  # [0-1] the station's part of its feeder's EV load
    "station_busy",  # plugs in use
    "station_queue",  # EVs waiting
    "feeder_util",  # [0-1] the feeder's loading last tick
    "feeder_forecast",  # [0-1] its max loading in 30 min if EV load stays
    "feeder_over",  # [0-1] forecast above the limit (0 when under)
    "feeder_shed_kw",  # [kW] EV load shed by protection last tick
    "feeder_capacity_kw",  # [kW] usable now
    "feeder_stations_capped",  # own stations already capped
    "shifts_left",  # LOAD_SHIFTs left this tick
    "tariff_inr",  # [INR/kWh]
    "renewable_share",  # [0-1]
    "day_frac",  # [0-1] of the episode gone
)
N_OPERATOR_FEATURES = len(OPERATOR_FEATURES)
_COL = {name: i for i, name in enumerate(OPERATOR_FEATURES)}


def operator_rows_k(stations_per_operator: int) -> int:
    """Rows an operator with that many stations needs: NOOP and every option."""
    return 1 + stations_per_operator * len(SHIFT_OPTIONS)


def operator_rows(
    obs: Observation, stations: tuple[int, ...]
) -> tuple[np.ndarray, list[LoadShift | None]]:
    """The operator's rows now (raw, not squashed) and each row's action (None: NOOP).
    ``stations`` are its own, 1-based."""
    s0 = np.asarray(stations, dtype=np.int64) - 1
    open_ = (
        []
        if obs.load_shifts_left <= 0 or obs.request is None
        else [int(s) for s in s0 if not obs.shifted[s] and obs.station_kw[s] > 0]
    )
    n = 1 + len(open_) * len(SHIFT_OPTIONS)
    x = np.zeros((n, N_OPERATOR_FEATURES), dtype=np.float64)
    feeder = int(obs.feeder_of[s0[0]]) if len(s0) else 0
    ev_load = float(obs.station_kw[obs.feeder_of == feeder].sum())
    forecast = float(obs.feeder_forecast[feeder])
    x[:, _COL["feeder_util"]] = obs.feeder_util[feeder]
    x[:, _COL["feeder_forecast"]] = forecast
    x[:, _COL["feeder_over"]] = max(0.0, forecast - 1.0)
    x[:, _COL["feeder_shed_kw"]] = obs.feeder_shed_kw[feeder]
    x[:, _COL["feeder_capacity_kw"]] = obs.feeder_capacity_kw[feeder]
    x[:, _COL["feeder_stations_capped"]] = float(obs.shifted[s0].sum())
    x[:, _COL["shifts_left"]] = obs.load_shifts_left
    x[:, _COL["tariff_inr"]] = obs.tariff_inr
    x[:, _COL["renewable_share"]] = obs.renewable_share
    x[:, _COL["day_frac"]] = obs.tick / max(1, obs.n_ticks)
    x[0, _COL["noop"]] = 1.0
    x[0, _COL["cap_frac"]] = 1.0
    actions: list[LoadShift | None] = [None]
    row = 1
    for s in open_:
        kw, cap_kw = float(obs.station_kw[s]), float(obs.cap_kw[s])
        for cap, minutes in SHIFT_OPTIONS:
            x[row, _COL["cap_frac"]] = cap / 100.0
            x[row, _COL["cap_hours"]] = minutes / 60.0
            x[row, _COL["station_kw"]] = kw
            x[row, _COL["station_cap_kw"]] = cap_kw
            x[row, _COL["cut_kw"]] = max(0.0, kw - cap / 100.0 * cap_kw)
            x[row, _COL["station_share"]] = kw / ev_load if ev_load > 0 else 0.0
            x[row, _COL["station_busy"]] = float(obs.busy[s].sum())
            x[row, _COL["station_queue"]] = float(obs.queue[s].sum())
            actions.append(LoadShift(s + 1, cap, minutes))
            row += 1
    return x, actions


def squash_rows(x: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """``k`` rows (float32, squashed, zero padding) and the mask of real ones."""
    if len(x) > k:
        raise ValueError(f"{len(x)} operator rows do not fit in k={k}")
    rows = np.zeros((k, x.shape[1]), dtype=np.float32)
    rows[: len(x)] = np.sign(x) * np.log1p(np.abs(x))
    mask = np.zeros(k, dtype=bool)
    mask[: len(x)] = True
    return rows, mask


def operators_due(
    obs: Observation, last_tick: int, stations_of: dict[str, tuple[int, ...]]
) -> list[str]:
    """The operators who answer before this request's fleet, in roster order: those
    whose feeder is forecast over its limit (``feeder_forecast`` > 1), at the first
    request with a choice in a tick at which any is (``last_tick``: the tick they last
    answered), while the tick's LOAD_SHIFT budget lasts. A cap can only pay on a
    feeder headed over its limit; elsewhere it costs its ``load_shift`` and relieves
    nothing. The candidate multi-agent env and the ``mappo`` policy both take turns
    by this rule."""
    if obs.request is None or obs.tick == last_tick or obs.load_shifts_left <= 0:
        return []
    return [
        op
        for op, stations in stations_of.items()
        if obs.feeder_forecast[int(obs.feeder_of[stations[0] - 1])] > 1.0
    ]
