"""A scenario's tables: the city and every per-tick signal, and where a ROUTE may go.

Built once per (scenario, tick length, dispatch radius) in a process and shared,
read-only, by every episode of the scenario and the observations handed out.
The travel rules (drive minutes, drive ticks) and the trip part of the ROUTE rule
(within the dispatch radius, the station open now and on arrival) are stated
here once; the validator names a refused pair's problem from these tables.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache

import numpy as np

from .chargers import KINDS_BY_INLET
from .city import City, load_city
from .config import SimConfig
from .scenarios import Scenario
from .signals import load_shape, renewable_share, road_speed_kmh, tariff_inr

# --- Travel ---------------------------------------------------------------------
# The travel rules take floats (one trip) or numpy arrays (a whole table).
Value = float | np.ndarray


def drive_minutes(road_km: Value, speed_kmh: Value) -> Value:
    """[min] a drive of ``road_km`` at ``speed_kmh`` (floats, or arrays broadcast)."""
    return road_km / speed_kmh * 60.0


def travel_ticks(minutes: float, tick_minutes: int) -> int:
    """Ticks a drive of ``minutes`` takes: at least one, a part tick counts whole."""
    return max(1, math.ceil(minutes / tick_minutes - 1e-9))


def _travel_ticks_table(minutes: np.ndarray, tick_minutes: int) -> np.ndarray:
    """``travel_ticks`` over a whole table at once (a test compares every entry)."""
    return np.maximum(1, np.ceil(minutes / tick_minutes - 1e-9)).astype(np.int64)


def reachable(
    minutes: Value,
    open_now: bool | np.ndarray,
    open_on_arrival: bool | np.ndarray,
    max_travel_minutes: float,
) -> bool | np.ndarray:
    """The ROUTE rule's trip part: within the dispatch radius, the station open when
    the EV leaves and when it gets there."""
    return (minutes <= max_travel_minutes) & open_now & open_on_arrival


# --- Tables ---------------------------------------------------------------------
@dataclass(frozen=True)
class ScenarioTables:
    """Per-tick exogenous signals of a scenario, computed once per process."""

    city: City
    travel_min: np.ndarray  # (T, N, S) [min] drive from each locality to each station
    travel_ticks: np.ndarray  # (T, N, S) ticks that drive takes (``travel_ticks``)
    minute_of_day: np.ndarray  # (T,) [min]
    tariff: np.ndarray  # (T,) [INR/kWh]
    renewable: np.ndarray  # (T,) [0-1]
    speed: np.ndarray  # (T,) [km/h]
    background_kw: np.ndarray  # (T, F) [kW] before per-episode noise
    capacity_kw: np.ndarray  # (T, F) [kW] usable capacity after events
    station_open: np.ndarray  # (T, S) bool
    feeder_of: np.ndarray  # (S,) feeder index
    limit_kw: np.ndarray  # (S,) [kW]
    plugs: np.ndarray  # (S, K)
    # The ROUTE rule's radius part, (T, N, S) bool: the drive is within the dispatch
    # radius (``rules.route_problem`` names it when it fails)
    in_radius: np.ndarray
    # (T, N, 4, S, K) bool: ``reachable``, the station has the kind, and an EV with
    # these inlets (KINDS_BY_INLET's row) takes it
    routable_by_inlet: np.ndarray
    # Python-list views of the same numbers, for scalar look-ups on the hot path.
    road_km_rows: list[list[float]]  # [node][station] [km]
    open_rows: list[list[bool]]  # [tick][station]
    plugs_rows: list[list[int]]  # [station][kind]
    capacity_rows: list[list[float]]  # [tick][feeder] [kW]
    station_names: tuple[str, ...]


@cache
def _tables(
    sc: Scenario, tick_minutes: int, max_travel_minutes: float
) -> ScenarioTables:
    city = load_city()
    t = np.arange(sc.n_ticks)
    mod = (sc.start_minute + tick_minutes * t) % 1440
    caps = np.array([f.capacity_kw for f in city.feeders])
    peak = np.array([f.peak_background for f in city.feeders])
    shape = np.array([load_shape(m + tick_minutes / 2) for m in mod])
    background = np.outer(shape, caps * peak) * sc.background_scale
    capacity = np.tile(caps, (sc.n_ticks, 1))
    for ev in sc.feeder_events:
        capacity[ev.start_tick : ev.end_tick, ev.feeder - 1] *= ev.capacity_factor
        background[ev.start_tick : ev.end_tick, ev.feeder - 1] *= ev.background_factor
    is_open = np.array([[st.is_open(m) for st in city.stations] for m in mod])
    for c in sc.closures:
        is_open[c.start_tick : c.end_tick, c.station - 1] = False
    speed = np.array([road_speed_kmh(m) for m in mod]) * sc.speed_scale
    # From every locality to every station, leaving at every tick.
    travel = drive_minutes(city.road_km[None, :, :], speed[:, None, None])  # (T, N, S)
    ticks = _travel_ticks_table(travel, tick_minutes)
    arrive = t[:, None, None] + ticks
    S = city.n_stations
    open_on_arrival = np.where(
        arrive < sc.n_ticks,
        is_open[np.minimum(arrive, sc.n_ticks - 1), np.arange(S)],
        True,
    )
    in_radius = travel <= max_travel_minutes
    trip = reachable(travel, is_open[:, None, :], open_on_arrival, max_travel_minutes)
    plugs = np.array([st.plugs for st in city.stations])  # (S, K)
    routable = trip[..., None] & (plugs > 0)
    tables = ScenarioTables(
        city=city,
        travel_min=travel,
        travel_ticks=ticks,
        minute_of_day=mod.astype(float),
        tariff=np.array([tariff_inr(m) for m in mod]),
        renewable=np.array([renewable_share(m, sc.supply) for m in mod]),
        speed=speed,
        background_kw=background,
        capacity_kw=capacity,
        station_open=is_open,
        feeder_of=np.array([st.feeder for st in city.stations]),
        limit_kw=np.array([st.limit_kw for st in city.stations]),
        plugs=plugs,
        in_radius=in_radius,
        routable_by_inlet=routable[:, :, None] & KINDS_BY_INLET[:, None, :],
        road_km_rows=city.road_km.tolist(),
        open_rows=is_open.tolist(),
        plugs_rows=[list(st.plugs) for st in city.stations],
        capacity_rows=capacity.tolist(),
        station_names=tuple(st.name for st in city.stations),
    )
    # Shared by every episode of the scenario in this process, and handed out in
    # observations (rows of travel_min, routable_by_inlet, station_open, capacity_kw;
    # plugs, feeder_of): read-only, so none can change them.
    for value in vars(tables).values():
        if isinstance(value, np.ndarray):
            value.flags.writeable = False
    return tables


def scenario_tables(sc: Scenario, config: SimConfig) -> ScenarioTables:
    return _tables(sc, config.tick_minutes, config.max_travel_minutes)
