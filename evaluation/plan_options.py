"""The hindsight optimum's columns: every (EV, defer, station, kind) plan one EV can take.

A plan option is "defer D minutes in total (as few DEFERs as add up to D), then
ROUTE to (station, kind); the EV plugs in the tick it arrives and charges to its
target (or until the episode ends)". Each option carries its exact cost parts,
the plug it holds tick by tick and the kW it draws tick by tick, all computed
from the exogenous trace with the world's rules. One more option per EV is "give
an invalid answer" (the EV is stranded), which is always feasible.

Patience runs while an EV is deferred or driving (``world.give_up_tick``: it gives
up at the end of the tick that ends past request + patience unless it has plugged
in by then), so a ROUTE that arrives later is not a charging option: the EV gives
up on the way (stranded, and urgency if critical, as an invalid answer costs, but
without ``invalid``; it pays the defer and travel wait). Of those, each EV gets
its cheapest one, and only where it is cheaper than the invalid answer.

Simplifications (the replay scores the plan in the real env, so none of them can
flatter the optimum; they can only make it weaker than the true one):
- no queueing: an EV plugs in on arrival (waiting is done with DEFERs, which cost
  the same per minute; a second or third DEFER pays ``defer_abuse``);
- no LOAD_SHIFT (a session whose station goes dark draws nothing meanwhile and
  holds its plug, as in the world);
- only the ``stations_per_kind`` nearest stations (road km) of each charger kind,
  and total defers up to ``max_defer_min``, are offered per EV.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from itertools import product

import numpy as np

from evgrid_core import SimConfig
from evgrid_core.actions import DEFER_MINUTES
from evgrid_core.chargers import N_KINDS
from evgrid_core.charging import plug_kw, session_energy, unmet_after
from evgrid_core.reward import defer_abuse_count, fossil_kwh
from evgrid_core.tables import reachable, travel_ticks
from evgrid_core.trace import EpisodeTrace, travel_minutes
from evgrid_core.world import give_up_tick

# The optimum's default settings (``evgrid optimum``, ``evgrid labels``, ``evgrid
# train``'s labels). The node limit is the solve's budget: deterministic, so the same
# seed gives the same plan and bound on any machine under any load; the time limit is
# only a safety net (a solve it stops depends on the machine: "time-limited").
DEFAULT_NODE_LIMIT = 500  # HiGHS branch-and-bound nodes per solve
DEFAULT_TIME_LIMIT_S = 600.0  # [s] wall-clock safety net per solve
DEFAULT_STATIONS_PER_KIND = 6  # nearest stations offered per EV and charger kind
DEFAULT_MAX_DEFER_MIN = 60  # [min] longest total defer offered per EV

STRAND = -1  # station index of the "invalid answer" option


@dataclass
class Options:
    """Columns of the model, one entry per option (arrays of equal length)."""

    ev: list[int] = field(default_factory=list)
    station: list[int] = field(default_factory=list)  # 0-based; STRAND = invalid
    kind: list[int] = field(default_factory=list)
    defers: list[tuple[int, ...]] = field(default_factory=list)  # DEFER minutes
    decide_tick: list[int] = field(default_factory=list)
    arrive_tick: list[int] = field(default_factory=list)
    cost: list[float] = field(default_factory=list)  # [reward units] all but grid
    parts: list[dict[str, float]] = field(default_factory=list)  # cost by reward key
    energy: list[np.ndarray] = field(default_factory=list)  # [kWh] per session tick
    plug_kw: list[float] = field(default_factory=list)  # [kW] demand bound per tick

    def __len__(self) -> int:
        return len(self.ev)

    def add(self, **kw: object) -> None:
        for k, v in kw.items():
            getattr(self, k).append(v)


def defer_plans(max_defers: int, limit_min: int) -> dict[int, tuple[int, ...]]:
    """Fewest DEFERs that add up to each reachable total D <= limit_min [min]."""
    best: dict[int, tuple[int, ...]] = {0: ()}
    for n in range(1, max_defers + 1):
        for combo in product(DEFER_MINUTES, repeat=n):
            d = sum(combo)
            if d <= limit_min and d not in best:
                best[d] = tuple(sorted(combo, reverse=True))
    return dict(sorted(best.items()))


def build_options(
    trace: EpisodeTrace,
    config: SimConfig,
    *,
    stations_per_kind: int = 6,
    max_defer_min: int = 60,
) -> Options:
    """Every plan option of every EV of the episode (see the module docstring)."""
    w = config.weights
    tm, T = config.tick_minutes, trace.n_ticks
    plans = defer_plans(config.max_defers, max_defer_min)
    fossil_per_kwh = fossil_kwh(1.0, trace.renewable_share)  # (T,) [kWh/kWh]
    opts = Options()
    for i in range(trace.n_evs):
        r = int(trace.ev_tick[i])
        deadline = trace.ev_minute[i] + trace.deadline_min[i]  # inf if not critical
        urgency = w.urgency if trace.critical[i] else 0.0
        # The invalid answer at the first request: always possible.
        opts.add(
            ev=i,
            station=STRAND,
            kind=-1,
            defers=(),
            decide_tick=r,
            arrive_tick=-1,
            cost=w.invalid + w.stranded + urgency,
            parts={"invalid": w.invalid, "stranded": w.stranded, "urgency": urgency},
            energy=np.zeros(0),
            plug_kw=0.0,
        )
        # the tick at whose end the EV gives up unless plugged in by then
        give_up = give_up_tick(trace.ev_minute[i] + trace.patience_min[i], tm)
        gives_up: tuple | None = None  # the cheapest option it gives up on the way
        node = int(trace.node[i])
        range_km = float(trace.soc[i] * trace.battery_kwh[i] * trace.km_per_kwh[i])
        for k in range(N_KINDS):
            kw = float(plug_kw(k, trace.max_ac_kw[i], trace.max_dc_kw[i]))
            if kw <= 0:
                continue
            has = np.flatnonzero(trace.plugs[:, k] > 0)
            near = has[np.argsort(trace.road_km[node, has], kind="stable")]
            for s in near[:stations_per_kind].tolist():
                km = float(trace.road_km[node, s])
                if km > range_km:
                    continue
                soc0 = float(
                    trace.soc[i] - km / trace.km_per_kwh[i] / trace.battery_kwh[i]
                )
                target, battery = float(trace.target[i]), float(trace.battery_kwh[i])
                session = partial(session_energy, config, soc=soc0, target=target,
                                  battery_kwh=battery, plug_kw=kw, kind=k)  # fmt: skip
                full = session(max_ticks=T)
                unmet = partial(unmet_after, config, soc=soc0, target=target,
                                battery_kwh=battery)  # fmt: skip
                owed_after = unmet(energies=full)  # [kWh] if it ends after n ticks
                for dmin, seq in plans.items():
                    if dmin > trace.patience_min[i]:
                        break
                    d = r + dmin // tm
                    if d >= T:
                        break
                    minutes = travel_minutes(trace, i, s, d)
                    a = d + travel_ticks(minutes, tm)
                    open_on_arrival = a >= T or trace.station_open[a, s]
                    if not reachable(minutes, trace.station_open[d, s],
                                     open_on_arrival, config.max_travel_minutes):  # fmt: skip
                        continue  # the env refuses the ROUTE
                    wait = w.wait * (dmin + (a - d) * tm)
                    abuse = w.defer_abuse * defer_abuse_count(len(seq))
                    if min(a, T) > give_up:  # patience ends on the way: it gives up
                        if gives_up is None or wait + abuse < gives_up[0]:
                            gives_up = (wait + abuse, wait, abuse, s, k, seq, d, a)
                        continue
                    n_ch = max(0, min(len(full), T - a))
                    e = np.array(full[:n_ch])
                    dark = ~trace.station_open[a : a + n_ch, s]
                    owed = owed_after[n_ch]
                    if dark.any():  # the station goes dark mid-session: recompute
                        e = np.array(
                            session(max_ticks=T - a, is_open=trace.station_open[a:, s])
                        )
                        n_ch = len(e)
                        owed = unmet(energies=e.tolist())[-1]
                    parts = {
                        "wait": wait,
                        "defer_abuse": abuse,
                        "cost": w.cost * float(e @ trace.tariff_inr[a : a + n_ch]),
                        "renewable": w.renewable
                        * float(e @ fossil_per_kwh[a : a + n_ch]),
                        "urgency": urgency if deadline < tm * min(a, T) else 0.0,
                        "unmet": w.unmet * owed,
                    }
                    opts.add(
                        ev=i,
                        station=s,
                        kind=k,
                        defers=seq,
                        decide_tick=d,
                        arrive_tick=a,
                        cost=sum(parts.values()),
                        parts=parts,
                        energy=e,
                        plug_kw=kw,
                    )
        if gives_up is not None and gives_up[0] < w.invalid:
            _, wait, abuse, s, k, seq, d, a = gives_up
            parts = {"wait": wait, "defer_abuse": abuse, "stranded": w.stranded,
                     "urgency": urgency}  # fmt: skip
            opts.add(ev=i, station=s, kind=k, defers=seq, decide_tick=d, arrive_tick=a,
                     cost=sum(parts.values()), parts=parts, energy=np.zeros(0),
                     plug_kw=0.0)  # fmt: skip
    return opts
