"""The episode's state and how it moves: EVs, queues, plugs, the clock.

``World`` owns one episode and composes the rules that live elsewhere: the
scenario's tables and the travel and route rules (``tables.py``), the charging
arithmetic (``charging.py``), the grid model that carries the load (``grid.py``)
and the reward's parts (``reward.py``). Here: travel, decisions, queues, patience
(``give_up_ticks``), plug-in, and the order of a tick's events.
"""

from __future__ import annotations

import numpy as np

from . import charging
from .chargers import N_KINDS
from .config import SimConfig
from .fleet import Arrivals, EVLists
from .grid import GridTick, make_grid_model
from .reward import feeder_stress, fossil_kwh, network_terms
from .scenarios import Scenario
from .tables import ScenarioTables

# EV status codes
# (stranded: turned away by an invalid answer; gave_up: its patience ran out first)
WAITING, PENDING, DEFERRED, TRAVELING, QUEUED, CHARGING, SERVED, STRANDED, GAVE_UP = (
    range(9)
)
STATUS_NAMES = (
    "waiting",
    "pending",
    "deferred",
    "traveling",
    "queued",
    "charging",
    "served",
    "stranded",
    "gave_up",
)


# --- Patience ----------------------------------------------------------------------
def give_up_ticks(patience_minute: np.ndarray, tick_minutes: int) -> np.ndarray:
    """Per EV, the tick at whose end it gives up if not plugged in by then: the first
    tick that ends after its ``patience_minute`` (request + patience [min since start]).

    Patience runs from the EV's first request until it plugs in, whatever it does
    meanwhile (pending, deferred, driving, queued). An EV that reaches its station
    in tick a plugs in during tick a (if a plug is free), before that tick's end, so
    it is served iff patience_minute >= a * tick_minutes. Floats: inf for endless
    patience.
    """
    p = np.asarray(patience_minute, dtype=float)
    g = np.floor(p / tick_minutes)
    # Exactly the end-of-tick test (patience < end of tick g), whatever the rounding.
    return g - (p < g * tick_minutes) + (p >= (g + 1) * tick_minutes)


def give_up_tick(patience_minute: float, tick_minutes: int) -> int:
    """``give_up_ticks`` for one EV (finite patience)."""
    return int(give_up_ticks(patience_minute, tick_minutes))


class World:
    """Mutable state of one episode. EVs are indices 0..n-1 (id = index + 1)."""

    # Every attribute declared: attribute look-ups are the hot path's commonest
    # operation, and slots make them cheaper and a World smaller.
    __slots__ = (
        "_sessions", "above_soft", "arrivals", "arrivals_at", "arrive_minute",
        "background", "busy", "config", "defers", "depart_minute", "dt_h",
        "due_tick", "energy_kwh", "evs", "finished", "gave_up_now", "give_up_at",
        "grid", "grid_now", "inbound", "kind", "late", "n_ticks", "nonempty",
        "obs_cache", "pending", "plug_kw", "plug_minute", "plugged", "queue_len",
        "queues", "reach_at", "requests_at", "scenario", "shift_cap_kw",
        "shift_until", "shifts_this_tick", "soc", "station", "station_kw", "status",
        "tables", "taper_start", "tick", "unplug_minute", "waiting_critical"
    )  # fmt: skip

    def __init__(
        self,
        config: SimConfig,
        scenario: Scenario,
        tables: ScenarioTables,
        arrivals: Arrivals,
        feeder_noise: np.ndarray,
    ) -> None:
        self.config, self.scenario, self.tables, self.arrivals = (
            config,
            scenario,
            tables,
            arrivals,
        )
        n, S = len(arrivals), tables.city.n_stations
        self.n_ticks = scenario.n_ticks
        self.tick = 0
        self.finished = False
        self.dt_h = config.tick_minutes / 60.0
        # The EVs: what each is (fixed) and where it stands (state)
        a = arrivals
        self.evs = EVLists(a)
        self.soc = a.soc.copy()
        self.status = np.zeros(n, dtype=np.int8)
        self.station = np.full(n, -1, dtype=np.int64)
        self.kind = np.full(n, -1, dtype=np.int64)
        self.defers = [0] * n  # times deferred
        self.due_tick = [-1] * n  # tick a deferred EV asks again, a driving one arrives
        self.late = np.zeros(n, dtype=bool)
        self.depart_minute = np.full(n, np.nan)
        self.arrive_minute = np.full(n, np.nan)
        self.plug_minute = np.full(n, np.nan)  # [min since start] plugged in
        self.unplug_minute = np.full(n, np.nan)  # [min since start] left charged
        self.plug_kw = np.zeros(n)  # [kW] min(charger, vehicle) while plugged
        self.taper_start = np.ones(n)
        self.energy_kwh = np.zeros(n)  # [kWh] grid energy delivered
        # Patience: EVs by the tick at whose end each gives up unless plugged in.
        self.gave_up_now: list[int] = []  # EVs that gave up since the env cleared it
        self.give_up_at: dict[int, list[int]] = {}
        give_up = give_up_ticks(a.minute + a.patience_min, config.tick_minutes)
        within = np.flatnonzero(give_up < self.n_ticks)  # in EV order
        ticks = give_up[within].astype(int).tolist()
        for i, g in zip(within.tolist(), ticks, strict=True):
            self.give_up_at.setdefault(g, []).append(i)
        # Scheduling
        self.arrivals_at: dict[int, list[int]] = {}
        for i, t in enumerate(a.tick.tolist()):
            self.arrivals_at.setdefault(t, []).append(i)
        self.requests_at: dict[int, list[int]] = {}  # deferred EVs coming back
        self.reach_at: dict[int, list[int]] = {}  # traveling EVs reaching a station
        self.pending: list[int] = []
        self.waiting_critical: set[int] = set()  # critical EVs not yet plugged in
        # Stations
        self.busy = np.zeros((S, N_KINDS), dtype=np.int64)
        self.queues: list[list[list[int]]] = [
            [[] for _ in range(N_KINDS)] for _ in range(S)
        ]
        self.nonempty: set[tuple[int, int]] = set()  # (station, kind) with a queue
        self.queue_len = np.zeros((S, N_KINDS), dtype=np.int64)  # len(queues[s][k])
        self.inbound = np.zeros((S, N_KINDS), dtype=np.int64)  # EVs driving to (s, k)
        self.plugged: list[int] = []  # EVs charging, in plug-in order
        self._sessions: tuple[np.ndarray, ...] | None = (
            None  # cached arrays of self.plugged
        )
        self.shift_until = np.zeros(S, dtype=np.int64)
        self.shift_cap_kw = tables.limit_kw.copy()
        self.shifts_this_tick = 0
        self.station_kw = np.zeros(S)  # [kW] mean power over the last tick
        self.obs_cache: tuple | None = None  # the tick's observation part (fast.py)
        # Feeders: the grid model carries the stations' load, tick by tick.
        self.background = tables.background_kw * feeder_noise  # (T, F) [kW]
        self.grid = make_grid_model(config.grid, tables, self.background, scenario)
        # What the feeders carried in the last tick (before the first: no EV load).
        self.grid_now: GridTick = self.grid.carry(0, self.station_kw)
        self.above_soft = [False] * len(tables.city.feeders)

    # --- Clock -----------------------------------------------------------------------
    @property
    def minute(self) -> float:
        """Minutes since the episode started, at the current tick."""
        return float(self.tick * self.config.tick_minutes)

    def minute_of_day(self) -> float:
        return float(self.scenario.start_minute + self.minute) % 1440

    def clock(self) -> str:
        m = int(self.minute_of_day())
        return f"{m // 60:02d}:{m % 60:02d}"

    def _t(self) -> int:
        return min(self.tick, self.n_ticks - 1)

    def tariff_now(self) -> float:
        return float(self.tables.tariff[self._t()])

    def renewable_now(self) -> float:
        return float(self.tables.renewable[self._t()])

    def station_open(self, s: int, tick: int | None = None) -> bool:
        t = self._t() if tick is None else tick
        return t < self.n_ticks and self.tables.open_rows[t][s]

    def cap_kw(self, s: int) -> float:
        """The station's power limit now: its connection limit or a LOAD_SHIFT cap."""
        return float(
            self.shift_cap_kw[s]
            if self.shift_until[s] > self.tick
            else self.tables.limit_kw[s]
        )

    # --- Travel ------------------------------------------------------------------------
    def travel_minutes(self, ev: int) -> np.ndarray:
        """Drive time [min] from the EV's locality to every station, at today's speed."""
        return self.tables.travel_min[self._t(), self.evs.node[ev]]

    def range_km(self, ev: int) -> float:
        return float(self.soc[ev]) * self.evs.battery_kwh[ev] * self.evs.km_per_kwh[ev]

    # --- Decisions ------------------------------------------------------------------------
    def route(self, ev: int, station: int, kind: int, parts: dict[str, float]) -> None:
        s, node = station - 1, self.evs.node[ev]
        km = self.tables.road_km_rows[node][s]
        ticks = int(self.tables.travel_ticks[self.tick, node, s])
        tm = self.config.tick_minutes
        self.pending.remove(ev)
        self.status[ev] = TRAVELING
        self.station[ev], self.kind[ev] = s, kind
        self.soc[ev] -= km / self.evs.km_per_kwh[ev] / self.evs.battery_kwh[ev]
        self.depart_minute[ev] = self.minute
        self.arrive_minute[ev] = self.minute + ticks * tm
        self.due_tick[ev] = self.tick + ticks
        self.reach_at.setdefault(self.tick + ticks, []).append(ev)
        self.inbound[s, kind] += 1
        parts["wait"] -= self.config.weights.wait * ticks * tm

    def defer(self, ev: int, minutes: int, parts: dict[str, float]) -> None:
        w = self.config.weights
        self.pending.remove(ev)
        self.status[ev] = DEFERRED
        parts["wait"] -= w.wait * minutes
        parts["defer_abuse"] -= w.defer_abuse * self.defers[ev]
        self.defers[ev] += 1
        back = self.tick + minutes // self.config.tick_minutes
        self.due_tick[ev] = back
        self.requests_at.setdefault(back, []).append(ev)

    def load_shift(
        self, station: int, cap_pct: int, minutes: int, parts: dict[str, float]
    ) -> None:
        s = station - 1
        self.shift_until[s] = self.tick + minutes // self.config.tick_minutes
        self.shift_cap_kw[s] = self.tables.limit_kw[s] * cap_pct / 100.0
        self.shifts_this_tick += 1
        parts["load_shift"] -= self.config.weights.load_shift

    def strand(self, ev: int, parts: dict[str, float], kpis) -> None:  # noqa: ANN001
        """An invalid answer turns away the EV being decided."""
        if self.pending and self.pending[0] == ev:
            self.pending.pop(0)
        self._leave_unserved(ev, STRANDED, parts, kpis)

    def give_up(self, ev: int, parts: dict[str, float], kpis) -> None:  # noqa: ANN001
        """Its patience ran out before it plugged in: the EV leaves from where it is.

        Deferred, driving or queued; an EV that has plugged in (or left) stays.
        """
        status = self.status[ev]
        if status == QUEUED:
            s, k = int(self.station[ev]), int(self.kind[ev])
            q = self.queues[s][k]
            q.remove(ev)
            self.queue_len[s, k] -= 1
            if not q:
                self.nonempty.discard((s, k))
        elif status in (DEFERRED, TRAVELING):
            due = self.requests_at if status == DEFERRED else self.reach_at
            at_tick = due[self.due_tick[ev]]
            at_tick.remove(ev)
            if not at_tick:
                del due[self.due_tick[ev]]
            if status == TRAVELING:
                self.inbound[int(self.station[ev]), int(self.kind[ev])] -= 1
        else:
            return
        self._leave_unserved(ev, GAVE_UP, parts, kpis)
        kpis.gave_up += 1
        self.gave_up_now.append(ev)

    def _leave_unserved(
        self,
        ev: int,
        status: int,
        parts: dict[str, float],
        kpis,  # noqa: ANN001
    ) -> None:
        """The EV leaves without charging: the stranded cost, and a critical EV is late."""
        self.status[ev] = status
        parts["stranded"] -= self.config.weights.stranded
        kpis.stranded += 1
        if ev in self.waiting_critical:
            self.waiting_critical.discard(ev)
            if not self.late[ev]:
                self.late[ev] = True
                parts["urgency"] -= self.config.weights.urgency

    # --- Clock advance ----------------------------------------------------------------
    def advance(self, parts: dict[str, float], kpis) -> None:  # noqa: ANN001
        """Run ticks until one has a request to decide, or the episode ends."""
        while True:
            if self.tick >= self.n_ticks:
                if not self.finished:
                    self._settle_unmet(parts, kpis)
                self.finished = True
                return
            if not self.pending:
                self._collect_requests()
            if self.pending:
                return
            self._physics(parts, kpis)
            self.tick += 1
            self.shifts_this_tick = 0

    def _settle_unmet(self, parts: dict[str, float], kpis) -> None:  # noqa: ANN001
        """At the end, energy still owed to EVs deferred, on their way, queued or
        charging costs.

        Without this, charging slowly (or late) would be cheaper simply because part of
        the energy falls after the episode ends. (The DEFER rule brings every deferred
        EV back before the end; were one still deferred, it is owed all the same.)
        """
        owed = (self.status >= DEFERRED) & (self.status <= CHARGING)
        if owed.any():
            a = self.arrivals
            need = charging.need_kwh(self.soc[owed], a.target[owed], a.battery_kwh[owed],
                                     self.config.charge_efficiency)  # fmt: skip
            kwh = float(need.sum())
            parts["unmet"] -= self.config.weights.unmet * kwh
            kpis.unmet_kwh += kwh

    def _collect_requests(self) -> None:
        due = self.arrivals_at.pop(self.tick, []) + self.requests_at.pop(self.tick, [])
        if not due:
            return
        due.sort()
        for ev in due:
            self.status[ev] = PENDING
            if self.evs.critical[ev] and not self.late[ev]:
                self.waiting_critical.add(ev)
        self.pending = due

    def _physics(self, parts: dict[str, float], kpis) -> None:  # noqa: ANN001
        """One tick: EVs reach stations, plug in, charge; feeders carry the load."""
        cfg, w, t = self.config, self.config.weights, self.tick
        tm = cfg.tick_minutes
        now = float(t * tm)
        tables = self.tables
        # EVs reach their stations and queue; free plugs are filled first come, first served.
        for ev in self.reach_at.pop(t, ()):
            s, k = int(self.station[ev]), int(self.kind[ev])
            self.status[ev] = QUEUED
            self.inbound[s, k] -= 1
            self.queues[s][k].append(ev)
            self.queue_len[s, k] += 1
            self.nonempty.add((s, k))
        open_now = tables.station_open[t]
        open_row = tables.open_rows[t]
        for s, k in sorted(self.nonempty):
            if not open_row[s]:
                continue
            q = self.queues[s][k]
            while q and self.busy[s, k] < tables.plugs_rows[s][k]:
                self._plug_in(q.pop(0), s, k, now, kpis)
                self.queue_len[s, k] -= 1
            if not q:
                self.nonempty.discard((s, k))
        # Charging: the sessions draw, the grid carries their load.
        if self.plugged:
            self._charge(t, open_now, parts, kpis)
        else:
            self.station_kw[:] = 0.0
            self.grid_now = self.grid.carry(t, self.station_kw)
        # The reward's grid terms and the feeders' KPIs.
        grid = self.grid_now
        stress_kw, over_kw, n_new_stress, n_over = feeder_stress(
            grid, cfg.soft_limit, self.above_soft
        )
        stress_kwh, over_kwh = stress_kw * self.dt_h, over_kw * self.dt_h
        parts["grid_stress"] -= w.grid_stress * stress_kwh
        parts["peak"] -= w.peak * over_kwh
        kpis.on_tick(grid.utilisation, n_new_stress, n_over)
        kpis.shed_kwh += over_kwh
        if grid.network is not None:  # the network models' limits
            deficit_pu, over_kva = network_terms(grid)
            parts["undervoltage"] -= w.undervoltage * deficit_pu * self.dt_h
            parts["transformer_overload"] -= (
                w.transformer_overload * over_kva * self.dt_h
            )
            kpis.on_network(grid.network, self.dt_h)
        # Waiting in queues; patience and deadlines run out at the end of the tick.
        # Patience runs from the first request until the EV plugs in, whatever it
        # does meanwhile (deferred, driving, queued): see give_up_ticks.
        end = now + tm
        queued = sum(len(self.queues[s][k]) for s, k in self.nonempty)
        parts["wait"] -= w.wait * tm * queued
        for ev in self.give_up_at.pop(t, ()):
            self.give_up(ev, parts, kpis)
        for ev in sorted(self.waiting_critical):
            if self.evs.deadline_minute[ev] < end:
                self.waiting_critical.discard(ev)
                self.late[ev] = True
                parts["urgency"] -= w.urgency

    def _plug_in(self, ev: int, s: int, k: int, now: float, kpis) -> None:  # noqa: ANN001
        self.status[ev] = CHARGING
        self.plug_minute[ev] = now
        self.busy[s, k] += 1
        self.plugged.append(ev)
        self._sessions = None
        self.plug_kw[ev] = charging.plug_kw(
            k, self.evs.max_ac_kw[ev], self.evs.max_dc_kw[ev]
        )
        self.taper_start[ev] = charging.taper_start(self.config, k)
        self.waiting_critical.discard(ev)
        on_time = (
            self.evs.critical[ev]
            and not self.late[ev]
            and now <= self.evs.deadline_minute[ev]
        )
        kpis.on_plug_in(ev, now - self.evs.request_minute[ev], on_time)

    def _charge(
        self, t: int, open_now: np.ndarray, parts: dict[str, float], kpis
    ) -> None:  # noqa: ANN001
        """One tick of every session (``charging.py``'s arithmetic on arrays).

        Each session draws its tapered power; a station asked for more than its
        limit (or LOAD_SHIFT cap; 0 while closed) scales its sessions down together;
        the grid model carries the stations' load and may scale a feeder's down.
        """
        cfg, w, tables = self.config, self.config.weights, self.tables
        if self._sessions is None:  # rebuilt only when a session starts or ends
            ids = np.array(self.plugged)
            a = self.arrivals
            self._sessions = (ids, self.station[ids], self.taper_start[ids], self.plug_kw[ids],
                              a.battery_kwh[ids], a.target[ids])  # fmt: skip
        ids, st, ts, plug, battery, target = self._sessions
        soc, eff, dt_h = self.soc[ids], cfg.charge_efficiency, self.dt_h
        power = charging.tapered_kw(plug, soc, ts, cfg.taper_floor)
        S = len(tables.limit_kw)
        demand = np.bincount(st, weights=power, minlength=S)
        limit = (
            np.where(self.shift_until > t, self.shift_cap_kw, tables.limit_kw)
            * open_now
        )
        if (demand > limit).any():
            scale = np.where(demand > limit, limit / np.maximum(demand, 1e-12), 1.0)
            power = power * scale[st]
        need = charging.need_kwh(soc, target, battery, eff)
        energy = charging.tick_energy_kwh(power, dt_h, need)  # [kWh] grid side
        station_kw = np.bincount(st, weights=energy, minlength=S) / dt_h
        grid = self.grid.carry(t, station_kw)
        if grid.station_factor is not None:  # the grid shed load: owed to its EVs
            energy = energy * grid.station_factor[st]
            station_kw = np.bincount(st, weights=energy, minlength=S) / dt_h
        self.grid_now, self.station_kw = grid, station_kw
        done = charging.reached(energy, need)
        self.soc[ids] = np.where(
            done, target, charging.soc_after(soc, energy, battery, eff)
        )
        self.energy_kwh[ids] += energy
        total = float(energy.sum())
        cost = total * float(tables.tariff[t])
        fossil = fossil_kwh(total, float(tables.renewable[t]))
        parts["cost"] -= w.cost * cost
        parts["renewable"] -= w.renewable * fossil
        kpis.on_energy(total, total - fossil, cost)
        if done.any():
            self._sessions = None
            for ev in ids[done].tolist():
                self.plugged.remove(ev)
                self.status[ev] = SERVED
                self.unplug_minute[ev] = (t + 1) * cfg.tick_minutes
                self.busy[self.station[ev], self.kind[ev]] -= 1
                kpis.served += 1

    # --- Introspection ---------------------------------------------------------------
    def active_evs(self) -> list[int]:
        """EVs currently in the system (requested and not yet gone)."""
        return [
            int(i)
            for i in np.flatnonzero(
                (self.status >= PENDING) & (self.status <= CHARGING)
            )
        ]

    def status_name(self, ev: int) -> str:
        return STATUS_NAMES[self.status[ev]]
