"""The episode's state as named arrays, and the scenario's rules as numbers.

What the kernels (``ticks.py``, ``decide.py``) read and write: ``EpisodeState``
(the EVs, the stations' plugs and queues, the feeders' last tick, the counters,
one episode's), and ``Rules`` (the scenario's tables and the config's numbers, read
only, shared by every episode of a scenario). ``World`` is a view over them; a
batch of episodes is a batch of these records.

Lists are arrays with their length in ``ints``: ``pending`` (EVs waiting for a
decision now, in EV order), ``plugged`` (charging, in plug-in order), ``waits``
(each plug-in's wait), ``gave_up_now`` (EVs that gave up since the env cleared it).
Queues are the EVs with status QUEUED at a (station, kind), first in by ``order``
(a counter each ROUTE and each arrival at a station draws from).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .chargers import CHARGER_KW, N_KINDS, inlet
from .charging import taper_start
from .config import SimConfig
from .fleet import Arrivals
from .jit import b1_1, b1_2, b1_5, f8_1, f8_2, f8_3, i8_1, i8_2, i8_3, kernel, part, row
from .reward import REWARD_KEYS
from .scenarios import Scenario
from .tables import ScenarioTables

# EV status codes
# (stranded: turned away by an invalid answer; gave_up: its patience ran out first)
WAITING, PENDING, DEFERRED, TRAVELING, QUEUED, CHARGING, SERVED, STRANDED, GAVE_UP = (
    range(9)
)
STATUS_NAMES = ("waiting", "pending", "deferred", "traveling", "queued", "charging",
                "served", "stranded", "gave_up")  # fmt: skip
NEVER = np.iinfo(np.int64).max  # a give-up tick past every episode

# The reward's parts, by position in a parts array (``REWARD_KEYS``'s order)
(P_WAIT, P_GRID_STRESS, P_PEAK, P_RENEWABLE, P_COST, P_URGENCY, P_STRANDED, P_INVALID,
 P_DEFER_ABUSE, P_LOAD_SHIFT, P_UNMET, P_UNDERVOLTAGE, P_TRANSFORMER) = range(13)  # fmt: skip
assert REWARD_KEYS[P_TRANSFORMER] == "transformer_overload" and len(REWARD_KEYS) == 13

# ``EpisodeState.ints``: the clock, list lengths, counters (``World._sync`` reads the
# first three in one call: keep them first)
(I_TICK, I_FINISHED, I_N_PENDING, I_SHIFTS, I_N_PLUGGED, I_N_WAITS, I_N_GAVE_UP_NOW,
 I_ORDER, I_SHED, I_SERVED, I_STRANDED, I_GAVE_UP, I_ON_TIME, I_OVERLOAD_TICKS,
 I_STRESS_EVENTS, I_LO, I_HI) = range(17)  # fmt: skip
# I_LO..I_HI: the EVs a tick can touch. Arrivals are in tick order, so the EVs from
# I_HI on have not asked yet; those before I_LO have left (served or not).
# ``EpisodeState.floats``: the KPIs' sums
F_ENERGY, F_RENEWABLE, F_COST, F_SHED_KWH, F_PEAK_UTIL, F_UNMET = range(6)
N_INTS, N_FLOATS = I_HI + 1, F_UNMET + 1

# ``Rules.numbers``: the config's numbers
(R_TICK_MINUTES, R_DT_H, R_SOFT_LIMIT, R_EFFICIENCY, R_TAPER_FLOOR, R_MAX_DEFERS,
 R_MAX_SHIFTS, R_START_MINUTE, R_INVALID) = range(9)  # fmt: skip
N_NUMBERS = 9


class Rules(NamedTuple):
    """A scenario under a config, as the kernels read it (read-only, shared)."""

    numbers: np.ndarray  # (N_NUMBERS,) the config's and scenario's numbers (R_*)
    weights: np.ndarray  # (13,) the reward's weights, in REWARD_KEYS order
    charger_kw: np.ndarray  # (K,) [kW]
    taper_start: np.ndarray  # (K,) [0-1] per kind
    travel_ticks: np.ndarray  # (T, N, S) int
    road_km: np.ndarray  # (N, S) [km]
    limit_kw: np.ndarray  # (S,) [kW]
    feeder_of: np.ndarray  # (S,) int
    plugs: np.ndarray  # (S, K) int
    station_open: np.ndarray  # (T, S) bool
    tariff: np.ndarray  # (T,) [INR/kWh]
    renewable: np.ndarray  # (T,) [0-1]
    routable: np.ndarray  # (T, N, 4, S, K) bool: ``tables.routable_by_inlet``
    travel_min: np.ndarray  # (T, N, S) [min]


class EpisodeState(NamedTuple):
    """One episode's state: the EVs (n), stations (S, K), feeders (F), counters."""

    # The EVs as they arrive (fixed)
    arrive_tick: np.ndarray  # (n,) tick of the first request
    node: np.ndarray  # (n,) locality index
    battery_kwh: np.ndarray
    km_per_kwh: np.ndarray
    target: np.ndarray  # [0-1]
    max_ac_kw: np.ndarray
    max_dc_kw: np.ndarray
    critical: np.ndarray  # bool
    request_minute: np.ndarray  # [min since start] first request
    deadline_minute: np.ndarray  # [min since start] critical EVs plug in by
    patience_minute: np.ndarray  # [min since start] gives up if not plugged in by
    inlet: np.ndarray  # 1 * (has AC) + 2 * (has DC) (``chargers.inlet_of``)
    give_up_tick: np.ndarray  # the tick at whose end it gives up (NEVER: not within)
    # The EVs as they go
    status: np.ndarray  # the codes above
    soc: np.ndarray
    station: np.ndarray  # station index, -1 before a ROUTE
    kind: np.ndarray  # charger kind, -1 before a ROUTE
    defers: np.ndarray  # times deferred
    due_tick: np.ndarray  # tick a deferred EV asks again, a driving one arrives
    order: np.ndarray  # ROUTE order while driving, arrival order while queued
    late: np.ndarray  # bool: a critical EV past its deadline
    waiting_critical: np.ndarray  # bool: critical, asked, not yet plugged in or late
    depart_minute: np.ndarray  # NaN until it happens
    arrive_minute: np.ndarray
    plug_minute: np.ndarray
    unplug_minute: np.ndarray
    plug_kw: np.ndarray  # [kW] min(charger, vehicle) while plugged
    taper_start: np.ndarray
    energy_kwh: np.ndarray  # [kWh] grid energy delivered
    # Lists (lengths in ints)
    pending: np.ndarray
    plugged: np.ndarray
    waits: np.ndarray  # [min]
    gave_up_now: np.ndarray
    # Stations
    busy: np.ndarray  # (S, K)
    queue_len: np.ndarray  # (S, K)
    inbound: np.ndarray  # (S, K) EVs driving there
    shift_until: np.ndarray  # (S,) LOAD_SHIFT holds before this tick
    shift_cap_kw: np.ndarray  # (S,)
    station_kw: np.ndarray  # (S,) [kW] mean power over the last tick
    # Feeders: the episode's background (T, F) and the last tick carried
    background_kw: np.ndarray
    capacity_kw: np.ndarray  # (T, F) the scenario's
    headroom_kw: np.ndarray  # (T, F) capacity - background
    grid_capacity_kw: np.ndarray  # (F,) [kW] the last tick carried
    grid_background_kw: np.ndarray  # (F,)
    grid_ev_kw: np.ndarray  # (F,) carried
    grid_shed_kw: np.ndarray  # (F,)
    grid_util: np.ndarray  # (F,)
    station_factor: np.ndarray  # (S,) when ints[I_SHED]
    above_soft: np.ndarray  # (F,) bool
    util_history: np.ndarray  # (T, F)
    # Counters and sums
    ints: np.ndarray  # I_*
    floats: np.ndarray  # F_*
    # Per-session scratch of a tick carried from Python (``world.py``): [kWh]
    scratch_energy: np.ndarray
    scratch_need: np.ndarray
    scratch_evs: np.ndarray  # a tick's EVs in order (``ticks._by_order``)


# --- Patience ----------------------------------------------------------------------
@kernel(inline=True)
def give_up_at(patience_minute: float, tick_minutes: int) -> float:
    """The tick at whose end an EV gives up if not plugged in by then: the first
    tick that ends after its ``patience_minute`` (request + patience [min since start]).

    Patience runs from the EV's first request until it plugs in, whatever it does
    meanwhile (pending, deferred, driving, queued). An EV that reaches its station
    in tick a plugs in during tick a (if a plug is free), before that tick's end, so
    it is served iff patience_minute >= a * tick_minutes. A float: inf for endless
    patience.
    """
    g = np.floor(patience_minute / tick_minutes)
    # Exactly the end-of-tick test (patience < end of tick g), whatever the rounding.
    early = 1.0 if patience_minute < g * tick_minutes else 0.0
    late = 1.0 if patience_minute >= (g + 1) * tick_minutes else 0.0
    return g - early + late


@kernel
def give_up_into(patience_minute, tick_minutes: int, out) -> None:  # noqa: ANN001
    """``give_up_at`` of each EV, into ``out``."""
    for i in range(out.size):
        out[i] = give_up_at(patience_minute[i], tick_minutes)


# --- Packing -------------------------------------------------------------------------
# A compiled call from Python pays for every array it is handed (about 0.3 us each,
# 17 us for the 50 of a state): the state travels as a few 2-D blocks (a plain tuple,
# ``Packed``) and the kernels name their rows (``unpack``), views of the same memory.
# The rows of each block, in ``EpisodeState``'s order:
EV_FLOATS = ("battery_kwh", "km_per_kwh", "target", "max_ac_kw", "max_dc_kw",
             "request_minute", "deadline_minute", "soc", "depart_minute",
             "arrive_minute", "plug_minute", "unplug_minute", "plug_kw", "taper_start",
             "energy_kwh", "waits", "scratch_energy", "scratch_need",
             "patience_minute")  # fmt: skip
EV_INTS = ("arrive_tick", "node", "give_up_tick", "status", "station", "kind", "defers",
           "due_tick", "order", "pending", "plugged", "gave_up_now", "inlet",
           "scratch_evs")  # fmt: skip
EV_BOOLS = ("critical", "late", "waiting_critical")
STATION_FLOATS = ("shift_cap_kw", "station_kw", "station_factor")
FEEDER_FLOATS = ("grid_capacity_kw", "grid_background_kw", "grid_ev_kw",
                 "grid_shed_kw", "grid_util")  # fmt: skip
TICK_FEEDER = ("background_kw", "capacity_kw", "headroom_kw", "util_history")

# (ev floats, ev ints, ev bools, station counts (3, S, K): busy, queue_len, inbound,
#  shift_until (S,), station floats, feeder floats, above_soft (F,), (4, T, F), ints,
#  floats)
Packed = tuple


@kernel(inline=True)
def unpack(b) -> EpisodeState:  # noqa: ANN001
    """The named views of a packed state's handle (``jit.handle``; no copy)."""
    f, i, o, c = f8_2(b, 0), i8_2(b, 1), b1_2(b, 2), i8_3(b, 3)
    s, fe, tf = f8_2(b, 5), f8_2(b, 6), f8_3(b, 8)
    return EpisodeState(
        row(i, 0), row(i, 1), row(f, 0), row(f, 1), row(f, 2), row(f, 3), row(f, 4), row(o, 0), row(f, 5), row(f, 6), row(f, 18), row(i, 12), row(i, 2),
        row(i, 3), row(f, 7), row(i, 4), row(i, 5), row(i, 6), row(i, 7), row(i, 8), row(o, 1), row(o, 2), row(f, 8), row(f, 9), row(f, 10),
        row(f, 11), row(f, 12), row(f, 13), row(f, 14), row(i, 9), row(i, 10), row(f, 15), row(i, 11),
        row(c, 0), row(c, 1), row(c, 2), i8_1(b, 4), row(s, 0), row(s, 1),
        row(tf, 0), row(tf, 1), row(tf, 2), row(fe, 0), row(fe, 1), row(fe, 2), row(fe, 3), row(fe, 4),
        row(s, 2), b1_1(b, 7), row(tf, 3), i8_1(b, 9), f8_1(b, 10), row(f, 16), row(f, 17), row(i, 13),
    )  # fmt: skip


@kernel(inline=True)
def unpack_rules(r) -> Rules:  # noqa: ANN001
    """The named parts of packed rules' handle (no copy)."""
    c, tr = f8_1(r, 0), f8_2(r, 7)
    return Rules(part(c, 0, 9), part(c, 9, 22), part(c, 22, 25), part(c, 25, 28), i8_3(r, 1), f8_2(r, 2), f8_1(r, 3), i8_1(r, 4), i8_2(r, 5),
                 b1_2(r, 6), row(tr, 0), row(tr, 1), b1_5(r, 8), f8_3(r, 9))  # fmt: skip


def make_rules(config: SimConfig, scenario: Scenario, tables: ScenarioTables) -> tuple:
    """The kernels' numbers for a scenario under a config, packed (``unpack_rules``)."""
    w = config.weights
    consts = np.concatenate([
        [config.tick_minutes, config.tick_minutes / 60.0, config.soft_limit,
         config.charge_efficiency, config.taper_floor, config.max_defers,
         config.max_load_shifts_per_tick, scenario.start_minute, w.invalid],
        [getattr(w, k) for k in REWARD_KEYS],
        np.asarray(CHARGER_KW, dtype=float),
        [taper_start(config, k) for k in range(N_KINDS)],
    ]).astype(float)  # fmt: skip
    assert len(consts) == N_NUMBERS + 13 + 2 * N_KINDS and N_KINDS == 3
    assert tables.station_open.shape[0] == scenario.n_ticks
    packed = (
        consts,
        np.ascontiguousarray(tables.travel_ticks, dtype=np.int64),
        np.ascontiguousarray(tables.city.road_km, dtype=float),
        np.asarray(tables.limit_kw, dtype=float).copy(),
        np.asarray(tables.feeder_of, dtype=np.int64).copy(),
        np.ascontiguousarray(tables.plugs, dtype=np.int64),
        np.ascontiguousarray(tables.station_open, dtype=bool),
        np.stack([tables.tariff, tables.renewable]).astype(float),
        np.ascontiguousarray(tables.routable_by_inlet, dtype=bool),
        np.ascontiguousarray(tables.travel_min, dtype=float),
    )
    for a in packed:
        a.flags.writeable = False
    return packed


def make_state(
    config: SimConfig,
    scenario: Scenario,
    tables: ScenarioTables,
    a: Arrivals,
    background_kw: np.ndarray,
) -> tuple:
    """A new episode's state, packed: every EV waiting for its first request, tick 0."""
    if len(a) and np.any(np.diff(a.tick) < 0):
        raise ValueError(
            "arrivals must be in tick order (fleet.arrivals_from_records sorts)"
        )
    assert background_kw.shape[0] == scenario.n_ticks
    floats = [np.asarray(x, dtype=float) for x in (
        a.minute, a.battery_kwh, a.soc, a.target, a.max_ac_kw, a.max_dc_kw, a.km_per_kwh,
        a.patience_min)]  # fmt: skip
    return pack_state(
        np.asarray(a.tick, dtype=np.int64), floats[0], np.asarray(a.node, dtype=np.int64),
        *floats[1:], np.asarray(a.critical, dtype=bool),
        np.asarray(a.deadline_min, dtype=float),
        np.ascontiguousarray(background_kw, dtype=float),
        np.ascontiguousarray(tables.capacity_kw, dtype=float),
        np.asarray(tables.limit_kw, dtype=float), config.tick_minutes,
    )  # fmt: skip


_EVF = {name: k for k, name in enumerate(EV_FLOATS)}
_EVI = {name: k for k, name in enumerate(EV_INTS)}
(_BATTERY, _KM, _TARGET, _AC, _DC, _REQUEST, _DEADLINE, _SOC, _PATIENCE, _TAPER) = (
    _EVF[k] for k in ("battery_kwh", "km_per_kwh", "target", "max_ac_kw", "max_dc_kw",
                      "request_minute", "deadline_minute", "soc", "patience_minute",
                      "taper_start"))  # fmt: skip
_NAN_ROWS = tuple(_EVF[k] for k in ("depart_minute", "arrive_minute", "plug_minute",
                                    "unplug_minute"))  # fmt: skip
(_ARRIVE, _NODE, _GIVE_UP, _INLET) = (
    _EVI[k] for k in ("arrive_tick", "node", "give_up_tick", "inlet"))  # fmt: skip
_UNSET_ROWS = tuple(_EVI[k] for k in ("station", "kind", "due_tick"))


@kernel
def pack_state(tick, minute, node, battery_kwh, soc, target, max_ac_kw, max_dc_kw,
               km_per_kwh, patience_min, critical, deadline_min, background_kw,
               capacity_kw, limit_kw, tick_minutes: int) -> tuple:  # fmt: skip  # noqa: ANN001, PLR0913
    """``make_state``'s packed state from the EVs' arrays (``fleet.Arrivals``'
    fields), the feeders' background and capacity (T, F) and the stations'
    limits (S,) [kW]: every EV waiting for its first request, tick 0."""
    T, F = background_kw.shape
    blocks = empty_state(tick.size, limit_kw.size, F, T)
    pack_into(blocks, tick, minute, node, battery_kwh, soc, target, max_ac_kw,
              max_dc_kw, km_per_kwh, patience_min, critical, deadline_min,
              background_kw, capacity_kw, limit_kw, tick_minutes)  # fmt: skip
    return blocks


@kernel(inline=True)
def empty_state(n: int, n_stations: int, n_feeders: int, n_ticks: int) -> tuple:
    """The blocks of a packed state for ``n`` EVs, unfilled (``pack_into`` fills)."""
    S, F, T = n_stations, n_feeders, n_ticks
    return (
        np.empty((len(EV_FLOATS), n)), np.empty((len(EV_INTS), n), dtype=np.int64),
        np.empty((len(EV_BOOLS), n), dtype=np.bool_),
        np.empty((3, S, N_KINDS), dtype=np.int64),  # busy, queue_len, inbound
        np.empty(S, dtype=np.int64),  # shift_until
        np.empty((len(STATION_FLOATS), S)), np.empty((len(FEEDER_FLOATS), F)),
        np.empty(F, dtype=np.bool_),  # above_soft
        np.empty((len(TICK_FEEDER), T, F)), np.empty(N_INTS, dtype=np.int64),
        np.empty(N_FLOATS),
    )  # fmt: skip


@kernel(inline=True)
def pack_into(blocks, tick, minute, node, battery_kwh, soc, target, max_ac_kw,
              max_dc_kw, km_per_kwh, patience_min, critical, deadline_min,
              background_kw, capacity_kw, limit_kw, tick_minutes: int) -> None:  # fmt: skip  # noqa: ANN001, PLR0913
    """``pack_state`` into ``blocks`` (``empty_state``'s, for ``tick.size`` EVs, or
    views of the same shapes): every number of the state written."""
    n, T, F = tick.size, background_kw.shape[0], background_kw.shape[1]
    ev_f, ev_i, ev_b, tf = blocks[0], blocks[1], blocks[2], blocks[8]
    ev_f[:] = 0.0
    ev_i[:] = 0
    ev_b[:] = False
    for e in range(n):
        ev_f[_BATTERY, e], ev_f[_KM, e] = battery_kwh[e], km_per_kwh[e]
        ev_f[_TARGET, e], ev_f[_SOC, e] = target[e], soc[e]
        ev_f[_AC, e], ev_f[_DC, e] = max_ac_kw[e], max_dc_kw[e]
        ev_f[_REQUEST, e] = minute[e]
        ev_f[_DEADLINE, e] = minute[e] + deadline_min[e]
        patience = minute[e] + patience_min[e]
        ev_f[_PATIENCE, e] = patience
        for r in _NAN_ROWS:
            ev_f[r, e] = np.nan
        ev_f[_TAPER, e] = 1.0
        ev_i[_ARRIVE, e], ev_i[_NODE, e] = tick[e], node[e]
        give_up = give_up_at(patience, tick_minutes)
        ev_i[_GIVE_UP, e] = int(give_up) if give_up < T else NEVER
        ev_i[_INLET, e] = inlet(max_ac_kw[e], max_dc_kw[e])
        for r in _UNSET_ROWS:
            ev_i[r, e] = -1
        ev_b[0, e] = critical[e]
    blocks[3][:] = 0
    blocks[4][:] = 0
    stations = blocks[5]
    stations[:] = 0.0
    stations[0] = limit_kw  # shift_cap_kw
    stations[2] = 1.0  # station_factor
    blocks[6][:] = 0.0
    blocks[7][:] = False
    tf[:] = 0.0
    for t in range(T):
        for f in range(F):
            tf[0, t, f], tf[1, t, f] = background_kw[t, f], capacity_kw[t, f]
            tf[2, t, f] = capacity_kw[t, f] - background_kw[t, f]
    blocks[9][:] = 0
    blocks[10][:] = 0.0
