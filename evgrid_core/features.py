"""The fixed-size view RL reads: the observation vector, the action index, the mask.

The layout (``OBS_SIZE`` floats, ``N_ACTIONS`` discrete actions: ROUTE station x
kind, then DEFER minutes, then LOAD_SHIFT station x cap x minutes) is defined here
once, for the Gymnasium env (``evgrid_gym``), the multi-agent env and the batch of
episodes (``batch.py``). ``encode_into`` and ``mask_into`` fill them from the state
as kernels (the batch's path); ``evgrid_gym.encode_observation`` builds the same
vector from an ``Observation`` (a policy's path). Tests compare the two, bit for
bit, at every step of every scenario. The clock, the request's features and the
rules' answers (``judge.py``) are read, never restated.
"""

from __future__ import annotations

from .actions import DEFER_MINUTES, SHIFT_CAP_PCT, SHIFT_MINUTES
from .chargers import N_KINDS
from .city import FEEDERS, N_STATIONS
from .grid import forecast_into
from .jit import kernel
from .judge import (
    A_DEFER,
    A_LOAD_SHIFT,
    A_ROUTE,
    defer_count,
    range_km,
    route_row,
)  # fmt: skip
from .state import (
    I_N_PENDING,
    I_SHIFTS,
    I_TICK,
    R_MAX_SHIFTS,
    R_START_MINUTE,
    R_TICK_MINUTES,
)  # fmt: skip

N_FEEDERS = len(FEEDERS)
N_ROUTE = N_STATIONS * N_KINDS
N_DEFER = len(DEFER_MINUTES)
SHIFTS_PER_STATION = len(SHIFT_CAP_PCT) * len(SHIFT_MINUTES)
N_SHIFT = N_STATIONS * SHIFTS_PER_STATION
N_ACTIONS = N_ROUTE + N_DEFER + N_SHIFT
PER_STATION = 4 + 2 * N_KINDS  # drive, free and queue per kind, open, shifted, feeder
REQUEST = slice(6, 17)  # the request's own features in the vector
OBS_SIZE = 6 + 11 + N_STATIONS * PER_STATION + N_FEEDERS * 2 + N_ROUTE
OBS_LOW, OBS_HIGH = -10.0, 100.0  # every feature is scaled to about [0, 1]; clipped
FORECAST_TICKS = 6  # the "peak risk" look-ahead: 30 minutes


@kernel(inline=True)
def decode_index(index: int) -> tuple[int, int, int]:
    """A discrete action index as (kind of action, and its two or three numbers
    after the EV): (A_ROUTE, station, kind), (A_DEFER, minutes, 0),
    (A_LOAD_SHIFT, station, cap %, minutes) packed as (A_LOAD_SHIFT, station,
    cap_index * len(SHIFT_MINUTES) + minutes_index)."""
    if index < N_ROUTE:
        return A_ROUTE, index // N_KINDS + 1, index % N_KINDS
    index -= N_ROUTE
    if index < N_DEFER:
        return A_DEFER, DEFER_MINUTES[index], 0
    index -= N_DEFER
    return A_LOAD_SHIFT, index // SHIFTS_PER_STATION + 1, index % SHIFTS_PER_STATION


@kernel(inline=True)
def shift_numbers(rest: int) -> tuple[int, int]:
    """(cap %, minutes) of ``decode_index``'s packed LOAD_SHIFT numbers."""
    return SHIFT_CAP_PCT[rest // len(SHIFT_MINUTES)], SHIFT_MINUTES[
        rest % len(SHIFT_MINUTES)
    ]


@kernel(inline=True)
def _put(v, i: int, x: float) -> None:  # noqa: ANN001
    v[i] = min(max(x, OBS_LOW), OBS_HIGH)


@kernel(inline=True)
def encode_into(st, rules, done: bool, v, mask, scratch, forecast_given: bool) -> None:  # noqa: ANN001
    """The observation vector ``v`` (OBS_SIZE,) float32 and the action ``mask``
    (N_ACTIONS,) bool of the state now (``done``: the episode has ended, no request);
    ``scratch`` (2, F) float64. The feeders' forecast is the feeder sum's
    (``grid.forecast_into``), or, ``forecast_given``, the grid model's, in
    ``scratch[1]``."""
    v[:] = 0.0
    mask[:] = False
    _encode_tick(st, rules, v, scratch, forecast_given)
    _encode_shifts(st, rules, v)
    _encode_request(st, rules, done, v, mask)


@kernel(inline=True)
def encode_cached(st, rules, done: bool, v, mask, scratch, cache, key) -> None:  # noqa: ANN001
    """``encode_into`` under the feeder sum, the entries that hold for a tick
    (``_encode_tick``'s) copied from ``cache`` (OBS_SIZE,) float32, made again when
    ``key`` (1,) int64 (the tick the cache holds; -1: none) differs from the state's.
    Within a tick only the decisions' rules write the state, and none of them
    touches what the cache holds (the clock, the stations' plugs, queues and
    opening, the feeders' carried tick): a LOAD_SHIFT's mark is written each time."""
    tick = st.ints[I_TICK]
    if key[0] != tick:
        cache[:] = 0.0
        _encode_tick(st, rules, cache, scratch, False)
        key[0] = tick
    v[:] = cache
    mask[:] = False
    _encode_shifts(st, rules, v)
    _encode_request(st, rules, done, v, mask)


@kernel(inline=True)
def _encode_tick(st, rules, v, scratch, forecast_given: bool) -> None:  # noqa: ANN001
    """The vector's entries that hold for a tick (over zeros): the clock, the
    stations' plugs, queues, opening and feeder load, the feeders' load and
    forecast."""
    n_ticks = rules.station_open.shape[0]
    tick = st.ints[I_TICK]
    t = min(tick, n_ticks - 1)
    now = float(tick * int(rules.numbers[R_TICK_MINUTES]))
    _put(v, 0, tick / n_ticks)
    _put(v, 1, int((rules.numbers[R_START_MINUTE] + now) % 1440) / 1440)
    _put(v, 2, rules.tariff[t] / 10)
    _put(v, 3, rules.renewable[t])
    o, K = 17, N_KINDS
    for s in range(N_STATIONS):
        for k in range(K):
            _put(v, o + 1 + k, (rules.plugs[s, k] - st.busy[s, k]) / 16)
            _put(v, o + 1 + K + k, st.queue_len[s, k] / 10)
        _put(v, o + 1 + 2 * K, 1.0 if rules.station_open[t, s] else 0.0)
        _put(v, o + 3 + 2 * K, st.grid_util[rules.feeder_of[s]])
        o += PER_STATION
    asked, forecast = scratch[0], scratch[1]
    if not forecast_given:
        for f in range(N_FEEDERS):  # the asked load: carried and shed
            asked[f] = st.grid_ev_kw[f] + st.grid_shed_kw[f]
        forecast_into(st.background_kw, st.capacity_kw, asked, t, FORECAST_TICKS,
                      forecast)  # fmt: skip
    for f in range(N_FEEDERS):
        _put(v, o + 2 * f, st.grid_util[f])
        _put(v, o + 2 * f + 1, forecast[f])


@kernel(inline=True)
def _encode_shifts(st, rules, v) -> None:  # noqa: ANN001
    """The LOAD_SHIFTs left this tick and each station's mark while under a cap."""
    tick = st.ints[I_TICK]
    shifts_left = max(0, int(rules.numbers[R_MAX_SHIFTS]) - st.ints[I_SHIFTS])
    _put(v, 5, shifts_left / 2)
    o = 17 + 2 + 2 * N_KINDS
    for s in range(N_STATIONS):
        _put(v, o, 1.0 if st.shift_until[s] > tick else 0.0)
        o += PER_STATION


@kernel(inline=True)
def _encode_request(st, rules, done: bool, v, mask) -> None:  # noqa: ANN001
    """The vector's entries for the request now (over zeros in its slots: the
    requests waiting, the EV, its drive to each station, its allowed ROUTEs) and
    the ``mask`` (over all False)."""
    n_ticks = rules.station_open.shape[0]
    tick = st.ints[I_TICK]
    t = min(tick, n_ticks - 1)
    now = float(tick * int(rules.numbers[R_TICK_MINUTES]))
    shifts_left = max(0, int(rules.numbers[R_MAX_SHIFTS]) - st.ints[I_SHIFTS])
    n_pending = st.ints[I_N_PENDING]
    _put(v, 4, n_pending / 10)
    if done or n_pending == 0:
        return
    ev = st.pending[0]
    crit = st.critical[ev]
    _put(v, 6, st.battery_kwh[ev] / 60)
    _put(v, 7, st.soc[ev])
    _put(v, 8, st.target[ev])
    _put(v, 9, st.max_ac_kw[ev] / 10)
    _put(v, 10, st.max_dc_kw[ev] / 150)
    _put(v, 11, range_km(st, ev) / 300)
    _put(v, 12, (now - st.request_minute[ev]) / 120)
    _put(v, 13, st.defers[ev] / 3)
    _put(v, 14, 1.0 if crit else 0.0)
    _put(v, 15, (st.deadline_minute[ev] - now) / 60 if crit else 0.0)
    _put(v, 16, (st.patience_minute[ev] - now) / 120)
    o = 17
    travel = rules.travel_min[t, st.node[ev]]  # (S,) [min]
    for s in range(N_STATIONS):
        _put(v, o, travel[s] / 90)
        if shifts_left > 0 and not st.shift_until[s] > tick:
            first = N_ROUTE + N_DEFER + s * SHIFTS_PER_STATION
            for j in range(first, first + SHIFTS_PER_STATION):
                mask[j] = True
        o += PER_STATION
    o += 2 * N_FEEDERS
    route_row(st, rules, ev, mask)  # the ROUTE pairs come first in the mask
    for i in range(N_ROUTE):
        if mask[i]:
            v[o + i] = 1.0
    mask[N_ROUTE : N_ROUTE + defer_count(st, rules, ev)] = True
