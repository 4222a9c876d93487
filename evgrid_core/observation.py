"""What an agent sees: a structured ``Observation`` and its compact text form.

The text form is what the LLM Oracle reads: every number the decision needs and
nothing else (about 300 tokens for the default scenario), because every prompt
token costs a 3B model on a CPU about 13 ms.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .chargers import KIND_NAMES, N_KINDS, vehicle_kw
from .fast import built, city_part_of_the_tick
from .features import FORECAST_TICKS
from .fleet import CLASS_NAMES
from .network import VOLTAGE_BANDS
from .rules import defer_options, route_mask
from .world import World


@dataclass(frozen=True)
class EVRequest:
    """The EV whose request is being decided."""

    id: int
    klass: str  # car | 3w | cab
    node: str  # locality it is at
    battery_kwh: float
    soc: float  # [0-1]
    target: float  # [0-1]
    max_ac_kw: float
    max_dc_kw: float  # 0 = no DC inlet
    range_km: float
    waited_min: float  # since its first request
    defers: int
    critical: bool
    deadline_in_min: float | None  # must plug in within (critical EVs)
    patience_left_min: float  # gives up after


@dataclass(frozen=True)
class Observation:
    """A snapshot: arrays are per station (S=25), per charger kind (K=3) or per feeder (F=6)."""

    done: bool
    tick: int
    n_ticks: int
    clock: str  # HH:MM
    tariff_inr: float  # [INR/kWh] now
    renewable_share: float  # [0-1] now
    request: EVRequest | None
    pending: int  # requests due now, this one included
    travel_min: np.ndarray  # (S,) [min] from the request's locality
    road_km: np.ndarray  # (S,) [km]
    route_mask: np.ndarray  # (S, K) bool: valid ROUTE targets
    defer_options: tuple[int, ...]  # valid DEFER minutes
    plugs: np.ndarray  # (S, K)
    busy: np.ndarray  # (S, K)
    queue: np.ndarray  # (S, K)
    inbound: np.ndarray  # (S, K) EVs routed there and still driving (this decision's)
    # (S,) [kW] what those arriving within the forecast's 30 minutes will draw there
    inbound_kw: np.ndarray
    open: np.ndarray  # (S,) bool
    cap_kw: np.ndarray  # (S,) [kW] limit now (LOAD_SHIFT cap when shifted)
    station_kw: np.ndarray  # (S,) [kW] mean power over the last tick
    shifted: np.ndarray  # (S,) bool: under a LOAD_SHIFT cap
    feeder_of: np.ndarray  # (S,) feeder index (0-based)
    feeder_util: np.ndarray  # (F,) [0-1] last tick
    feeder_capacity_kw: np.ndarray  # (F,) [kW] usable now
    feeder_forecast: np.ndarray  # (F,) [0-1] max utilisation in 30 min if EV load stays
    feeder_shed_kw: np.ndarray  # (F,) [kW] EV load shed by feeder protection last tick
    load_shifts_left: int
    station_names: tuple[str, ...]
    # The network grid models only (None under the feeder sum), last tick's:
    feeder_min_voltage_pu: np.ndarray | None = (
        None  # (F,) [p.u.] lowest at a point of supply
    )
    station_transformer_loading: np.ndarray | None = (
        None  # (S,) [0-1] DT kVA / rating (0: HT)
    )
    # Derived forms of the tick's part (the text's head lines): filled on first use
    # and shared by the observations of the tick, like its arrays. Not an argument,
    # so a ``dataclasses.replace`` copy starts with its own.
    tick_memo: dict[str, Any] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    @property
    def has_valid_answer(self) -> bool:
        """Whether the request has a valid ROUTE or DEFER left (with neither, any
        answer is an invalid one the policy could not avoid)."""
        return self.request is not None and (
            bool(self.route_mask.any()) or bool(self.defer_options)
        )

    @property
    def lists(self) -> dict[str, list]:
        """Every array (and ``station_names``) as plain Python lists, for text and JSON.

        Python numbers format and serialise several times faster than numpy's.
        Built on first use, for this observation alone. (Sharing the city's lists
        across a tick cost the server more than it saved: the JSON writer then read
        them from cold memory.)
        """
        done = self.__dict__.get("_lists")  # (functools.cached_property takes a lock)
        if done is None:
            done = self.__dict__["_lists"] = {
                "travel_min": self.travel_min.tolist(),
                "road_km": self.road_km.tolist(),
                "route_mask": self.route_mask.tolist(),
                "inbound": self.inbound.tolist(),
                "inbound_kw": self.inbound_kw.tolist(),
                **{name: getattr(self, name).tolist() for name in CITY_ARRAYS},
                "station_names": list(self.station_names),
                **{
                    name: None if (a := getattr(self, name)) is None else a.tolist()
                    for name in NETWORK_ARRAYS
                },
            }
        return done


# The observation's arrays that describe the city, not the request.
CITY_ARRAYS = ("plugs", "busy", "queue", "open", "cap_kw", "station_kw", "shifted",
               "feeder_of", "feeder_util", "feeder_capacity_kw", "feeder_forecast",
               "feeder_shed_kw")  # fmt: skip
# The network models' arrays (None under the feeder sum).
NETWORK_ARRAYS = ("feeder_min_voltage_pu", "station_transformer_loading")
# The voltage floor the text names: an 11 kV point of supply's (network.py).
HT_FLOOR_PU = VOLTAGE_BANDS["ht"].low


def build_observation(w: World, done: bool) -> Observation:
    city = w.tables.city
    S = city.n_stations
    req = None
    if done or not w.pending:
        travel, km, deferrals = np.zeros(S), np.zeros(S), ()
    else:
        ev = w.pending[0]
        travel = w.travel_minutes(ev)
        km = city.road_km[w.evs.node[ev]]  # read-only, like travel
        evs, crit, now = w.evs, w.evs.critical[ev], w.minute
        req = built(
            EVRequest,
            id=ev + 1,
            klass=CLASS_NAMES[evs.klass[ev]],
            node=city.nodes[w.evs.node[ev]],
            battery_kwh=evs.battery_kwh[ev],
            soc=float(w.soc[ev]),
            target=evs.target[ev],
            max_ac_kw=evs.max_ac_kw[ev],
            max_dc_kw=evs.max_dc_kw[ev],
            range_km=w.range_km(ev),
            waited_min=now - evs.request_minute[ev],
            defers=int(w.defers[ev]),
            critical=crit,
            deadline_in_min=evs.deadline_minute[ev] - now if crit else None,
            patience_left_min=evs.patience_minute[ev] - now,
        )
        deferrals = defer_options(w, ev)
    view, memo = city_part_of_the_tick(w, done, _city_view)
    return built(
        Observation,
        done=done,
        request=req,
        pending=len(w.pending),
        travel_min=travel,
        road_km=km,
        route_mask=route_mask(w),
        defer_options=deferrals,
        inbound=_frozen(w.inbound.copy()),  # changes with each ROUTE of the tick
        inbound_kw=_frozen(w.inbound_kw(FORECAST_TICKS)),
        **view,
        tick_memo=memo,
    )


def _city_view(w: World) -> dict[str, Any]:
    """The observation's city part: the same for every decision of one tick.

    Its arrays are read-only: ``fast.city_part_of_the_tick`` shares them between
    the tick's observations.
    """
    t = w.table_row()
    grid = w.grid_now
    asked = grid.ev_kw + grid.shed_kw  # [kW] EV load asked, shed included
    fc = w.grid.forecast(t, asked, FORECAST_TICKS)  # the grid model's rule
    shifted = w.shift_until > w.tick
    util = _frozen(np.array(grid.utilisation, dtype=float))
    net = grid.network
    return {
        "tick": w.tick,
        "n_ticks": w.n_ticks,
        "clock": w.clock(),
        "tariff_inr": w.tariff_now(),
        "renewable_share": w.renewable_now(),
        "plugs": w.tables.plugs,
        "busy": _frozen(w.busy.copy()),
        "queue": _frozen(w.queue_len.copy()),
        "open": w.tables.station_open[t],  # the scenario table's row (read-only)
        "cap_kw": _frozen(np.where(shifted, w.shift_cap_kw, w.tables.limit_kw)),
        "station_kw": _frozen(w.station_kw.copy()),
        "shifted": _frozen(shifted),
        "feeder_of": w.tables.feeder_of,
        "feeder_util": util,
        "feeder_capacity_kw": w.tables.capacity_kw[t],
        "feeder_forecast": _frozen(fc) if fc.size else util,
        "feeder_shed_kw": grid.shed_kw,  # read-only, replaced each tick
        "load_shifts_left": max(
            0, w.config.max_load_shifts_per_tick - w.shifts_this_tick
        ),
        "station_names": w.tables.station_names,
        "feeder_min_voltage_pu": None if net is None else _frozen(net.min_supply_vm_pu),
        "station_transformer_loading": None
        if net is None
        else _frozen(np.nan_to_num(net.station_transformer_loading, nan=0.0)),
    }


def _frozen(a: np.ndarray) -> np.ndarray:
    a.flags.writeable = False
    return a


def render_text(obs: Observation, max_stations: int = 8) -> str:
    """The compact text observation. Lists the nearest stations the EV may use."""
    head, feeders = _tick_text(obs)
    if obs.done or obs.request is None:
        return head + "\nEpisode over."
    r = obs.request
    kinds = [k for k in range(N_KINDS) if vehicle_kw(k, r.max_ac_kw, r.max_dc_kw) > 0]
    urgency = (
        f" CRITICAL plug in within {max(0.0, r.deadline_in_min or 0):.0f}m"
        if r.critical
        else ""
    )
    dc = f" DC{r.max_dc_kw:.0f}kW" if r.max_dc_kw > 0 else " no DC"
    lines = [
        head,
        f"REQUEST E{r.id} {r.klass} {r.battery_kwh:g}kWh SoC {r.soc * 100:.0f}%->{r.target * 100:.0f}%"
        f" AC{r.max_ac_kw:g}kW{dc} range {r.range_km:.0f}km at {r.node.split(' (')[0]}"
        f" waited {r.waited_min:.0f}m gives up in {r.patience_left_min:.0f}m{urgency}",
        feeders,
        "STATIONS drive-min feeder "
        + " ".join([KIND_NAMES[k] for k in kinds])
        + " (free/plugs+queued)",
    ]
    # Plain Python numbers format several times faster than numpy scalars, and for
    # 25 stations Python's sort (stable: ties by id) beats numpy's call overhead.
    lists = obs.lists
    mask, travel = lists["route_mask"], lists["travel_min"]
    usable = [s for s, m in enumerate(mask) if True in m]
    nearest = sorted(usable, key=travel.__getitem__)[:max_stations]
    plugs, busy, queue = lists["plugs"], lists["busy"], lists["queue"]
    feeder_of, shifted = lists["feeder_of"], lists["shifted"]
    dt_load = lists["station_transformer_loading"]  # None under the feeder sum
    for s in nearest:
        ok, n, b, q = mask[s], plugs[s], busy[s], queue[s]
        cells = " ".join(
            [
                (f"{n[k] - b[k]}/{n[k]}+{q[k]}" if q[k] else f"{n[k] - b[k]}/{n[k]}")
                if ok[k]
                else "-"
                for k in kinds
            ]
        )
        cap = f" capped{lists['cap_kw'][s]:.0f}kW" if shifted[s] else ""
        dt = f" DT{dt_load[s] * 100:.0f}%" if dt_load is not None else ""
        lines.append(f"S{s + 1} {travel[s]:.0f} F{feeder_of[s] + 1} {cells}{cap}{dt}")
    if not usable:
        lines.append("(no station can take this EV now)")
    defer = ",".join(map(str, obs.defer_options)) or "none"
    lines.append(
        f"DEFER options: {defer}. LOAD_SHIFT left this tick: {obs.load_shifts_left}."
    )
    return "\n".join(lines)


def _tick_text(obs: Observation) -> tuple[str, str]:
    """The head and FEEDERS lines: written once per tick, shared by its requests."""
    text = obs.tick_memo.get("text")
    if text is None:
        head = (
            f"{obs.clock} tick {obs.tick}/{obs.n_ticks} "
            f"tariff Rs{obs.tariff_inr:.2f}/kWh "
            f"renewable {obs.renewable_share * 100:.0f}%"
        )
        a = obs.lists
        feeders = "FEEDERS load% (30-min peak%): " + " ".join(
            [
                f"F{f} {u * 100:.0f}({p * 100:.0f})"
                + (f" SHED {shed:.0f}kW" if shed else "")
                for f, u, p, shed in zip(
                    range(1, len(a["feeder_util"]) + 1),
                    a["feeder_util"],
                    a["feeder_forecast"],
                    a["feeder_shed_kw"],
                    strict=True,
                )
            ]
        )
        volts = a["feeder_min_voltage_pu"]  # the network models only
        if volts is not None:
            feeders += f"\nVOLTS lowest p.u. (floor {HT_FLOOR_PU:g}): " + " ".join(
                [f"F{f} {v:.3f}" for f, v in enumerate(volts, 1)]
            )
        text = obs.tick_memo["text"] = (head, feeders)
    return text
