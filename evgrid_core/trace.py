"""An episode's exogenous trace: everything in an episode that no policy can change.

Arrivals with every EV attribute, per-tick background load (with the episode's
noise), usable feeder capacity, tariff, renewable share, road speed and station
opening, plus the static city arrays a planner needs. The hindsight optimum
(``evaluation/optimum.py``) plans on this; ``to_dict`` gives plain JSON.

``travel_minutes`` reads the trace with the world's travel rule
(``tables.drive_minutes``); the optimum's replay tests check the plans it builds
from a trace against the world step by step.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

import numpy as np

from .chargers import CHARGER_KW
from .tables import drive_minutes

if TYPE_CHECKING:
    from .env import EVGridEnv
    from .world import World


@dataclass(frozen=True)
class EpisodeTrace:
    """The exogenous world of one episode, as arrays (EV index = id - 1)."""

    scenario: str
    seed: int | None
    tick_minutes: int  # [min]
    n_ticks: int
    start_minute: int  # [min of day] clock at tick 0
    # --- EVs (n,) ------------------------------------------------------------------
    ev_tick: np.ndarray  # first request tick
    ev_minute: np.ndarray  # [min since start] first request
    klass: np.ndarray  # index into fleet.EV_CLASSES
    node: np.ndarray  # index into City.nodes
    battery_kwh: np.ndarray  # [kWh]
    soc: np.ndarray  # [0-1] on request
    target: np.ndarray  # [0-1] leaves when reached
    max_ac_kw: np.ndarray  # [kW]
    max_dc_kw: np.ndarray  # [kW] 0 = no DC inlet
    km_per_kwh: np.ndarray  # [km/kWh]
    patience_min: np.ndarray  # [min after request] gives up unless plugged in by then
    critical: np.ndarray  # bool
    deadline_min: np.ndarray  # [min after request] inf when not critical
    # --- Per tick (T,) and (T, F) / (T, S) -------------------------------------------
    minute_of_day: np.ndarray  # [min]
    tariff_inr: np.ndarray  # [INR/kWh]
    renewable_share: np.ndarray  # [0-1]
    speed_kmh: np.ndarray  # [km/h]
    background_kw: np.ndarray  # (T, F) [kW] including this episode's noise
    capacity_kw: np.ndarray  # (T, F) [kW] usable, after faults / DR events
    station_open: np.ndarray  # (T, S) bool
    # --- Static -----------------------------------------------------------------------
    road_km: np.ndarray  # (nodes, S) [km]
    feeder_of: np.ndarray  # (S,) feeder index (0-based)
    limit_kw: np.ndarray  # (S,) [kW] connection limit
    plugs: np.ndarray  # (S, K) plugs per kind
    charger_kw: np.ndarray  # (K,) [kW] per charger kind (chargers.CHARGERS)

    @property
    def n_evs(self) -> int:
        return len(self.ev_tick)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able data (arrays as lists, inf as None)."""

        def plain(v: Any) -> Any:
            if isinstance(v, np.ndarray):
                if v.dtype.kind == "f":
                    return [plain(x) for x in v.tolist()]
                return v.tolist()
            if isinstance(v, list):
                return [plain(x) for x in v]
            if isinstance(v, float) and not math.isfinite(v):
                return None
            return v

        return {f.name: plain(getattr(self, f.name)) for f in fields(self)}


def episode_trace(source: EVGridEnv | World) -> EpisodeTrace:
    """The exogenous trace of the episode an env (after ``reset``) or world holds."""
    w = getattr(source, "world", source)
    if w is None:
        raise ValueError("call reset() first")
    a, tb, sc = w.arrivals, w.tables, w.scenario
    seed = getattr(source, "seed", None)
    return EpisodeTrace(
        scenario=sc.name,
        seed=seed,
        tick_minutes=w.config.tick_minutes,
        n_ticks=w.n_ticks,
        start_minute=sc.start_minute,
        ev_tick=a.tick.astype(np.int64).copy(),
        ev_minute=a.minute.astype(float).copy(),
        klass=a.klass.copy(),
        node=a.node.copy(),
        battery_kwh=a.battery_kwh.astype(float).copy(),
        soc=a.soc.astype(float).copy(),
        target=a.target.astype(float).copy(),
        max_ac_kw=a.max_ac_kw.astype(float).copy(),
        max_dc_kw=a.max_dc_kw.astype(float).copy(),
        km_per_kwh=a.km_per_kwh.astype(float).copy(),
        patience_min=a.patience_min.astype(float).copy(),
        critical=a.critical.astype(bool).copy(),
        deadline_min=a.deadline_min.astype(float).copy(),
        minute_of_day=tb.minute_of_day.copy(),
        tariff_inr=tb.tariff.copy(),
        renewable_share=tb.renewable.copy(),
        speed_kmh=tb.speed.copy(),
        background_kw=np.asarray(w.background, dtype=float).copy(),
        capacity_kw=tb.capacity_kw.copy(),
        station_open=tb.station_open.copy(),
        road_km=tb.city.road_km.copy(),
        feeder_of=tb.feeder_of.copy(),
        limit_kw=tb.limit_kw.astype(float).copy(),
        plugs=tb.plugs.copy(),
        charger_kw=CHARGER_KW.copy(),
    )


# --- Travel ------------------------------------------------------------------------
def travel_minutes(trace: EpisodeTrace, ev: int, station: int, tick: int) -> float:
    """[min] drive from EV ``ev``'s locality to station index ``station`` leaving at ``tick``."""
    t = min(tick, trace.n_ticks - 1)
    return float(
        drive_minutes(trace.road_km[trace.node[ev], station], trace.speed_kmh[t])
    )
