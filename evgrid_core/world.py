"""The world's state and its physics: travel, queues, charging, feeders.

Everything here is a rule of the world, and it lives only here. Energy is
accounted exactly per 5-minute tick: a session's power is
min(charger, vehicle acceptance, taper near full), then scaled down together with
the other sessions of its station to the station's limit (or its demand-response
cap); grid energy = min(power x tick, what the EV still needs), then scaled down
together with the other sessions of its feeder if the feeder would carry more than
its capacity (``feeder_protection``); battery energy = grid energy x efficiency.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache

import numpy as np

from .city import CHARGER_DC, CHARGER_KW, City, load_city, vehicle_kw
from .config import SimConfig
from .fleet import Arrivals
from .scenarios import Scenario
from .signals import load_shape, renewable_share, road_speed_kmh, tariff_inr

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


def inlet_of(max_ac_kw: np.ndarray, max_dc_kw: np.ndarray) -> np.ndarray:
    """EVs' inlets as one index each: 1 * (has AC) + 2 * (has DC)."""
    return 1 * (max_ac_kw > 0) + 2 * (max_dc_kw > 0)


# (4, 3) bool: the charger kinds (SLOW, FAST, ULTRA) an EV can take, by inlet index.
KINDS_BY_INLET = np.array(
    [[vehicle_kw(k, i & 1, i & 2) > 0 for k in range(3)] for i in range(4)]
)
KINDS_BY_INLET.flags.writeable = False


@dataclass(frozen=True)
class ScenarioTables:
    """Per-tick exogenous signals of a scenario, computed once per process."""

    city: City
    travel_min: np.ndarray  # (T, N, S) [min] drive from each locality to each station
    minute_of_day: np.ndarray  # (T,) [min]
    tariff: np.ndarray  # (T,) [INR/kWh]
    renewable: np.ndarray  # (T,) [0-1]
    speed: np.ndarray  # (T,) [km/h]
    background_kw: np.ndarray  # (T, F) [kW] before per-episode noise
    capacity_kw: np.ndarray  # (T, F) [kW] usable capacity after events
    station_open: np.ndarray  # (T, S) bool
    feeder_of: np.ndarray  # (S,) feeder index
    limit_kw: np.ndarray  # (S,) [kW]
    plugs: np.ndarray  # (S, 3)
    # (T, N, 4, S, 3) bool: in the dispatch radius, open now and on arrival, the
    # station has the kind, and an EV with these inlets (KINDS_BY_INLET's row) takes it
    routable_by_inlet: np.ndarray
    far_km: list[float]  # [node] [km] road distance to its farthest station
    # Python-list views of the same numbers, for scalar look-ups on the hot path.
    road_km_rows: list[list[float]]  # [node][station] [km]
    speed_list: list[float]  # [tick] [km/h]
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
    # Drive time from every locality to every station, leaving at every tick, and
    # whether a ROUTE there is reachable: within the dispatch radius, the station open
    # now and when the EV gets there. The validator restates this for one pair.
    travel = city.road_km[None, :, :] / speed[:, None, None] * 60.0  # (T, N, S) [min]
    ticks = np.maximum(1, np.ceil(travel / tick_minutes - 1e-9)).astype(np.int64)
    arrive = t[:, None, None] + ticks
    S = city.n_stations
    open_at_arrival = np.where(
        arrive < sc.n_ticks,
        is_open[np.minimum(arrive, sc.n_ticks - 1), np.arange(S)],
        True,
    )
    reachable = (travel <= max_travel_minutes) & is_open[:, None, :] & open_at_arrival
    plugs = np.array([st.plugs for st in city.stations])  # (S, 3)
    routable = reachable[..., None] & (plugs > 0)
    tables = ScenarioTables(
        city=city,
        travel_min=travel,
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
        routable_by_inlet=routable[:, :, None] & KINDS_BY_INLET[:, None, :],
        far_km=city.road_km.max(axis=1).tolist(),
        road_km_rows=city.road_km.tolist(),
        speed_list=speed.tolist(),
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


# --- Feeder protection ----------------------------------------------------------------
# A feeder asked to carry more than its capacity sheds EV charging pro rata, so it
# carries exactly its capacity (none at all if the background alone exceeds it) [A].
# No BESCOM relay setting or load-shedding protocol was found (facts §3.2, §6 [U]);
# a sustained overload trips the 11 kV breaker and blacks out every customer, so we
# assume the charging load, the one load the utility can curtail remotely (smart
# charging, OCPP charging limits), is curtailed first, at once, and only by the excess.
# An excess within a milliwatt is float rounding, not load: a plan that keeps EV load
# within capacity - background, to a solver's tolerance, is never shed.
SHED_TOLERANCE_KW = 1e-6  # [kW]


def feeder_protection(
    ev_kw: np.ndarray, headroom_kw: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Per feeder: the factor its EV charging is scaled by [0-1] and the kW shed.

    ``ev_kw`` [kW] is the EV load the feeder's sessions would draw this tick,
    ``headroom_kw`` [kW] its capacity minus its background load.
    """
    room = np.maximum(headroom_kw, 0.0)
    over = ev_kw > room + SHED_TOLERANCE_KW
    factor = np.where(over, room / np.maximum(ev_kw, 1e-12), 1.0)
    return factor, np.where(over, ev_kw - room, 0.0)


class World:
    """Mutable state of one episode. EVs are indices 0..n-1 (id = index + 1)."""

    # Every attribute declared: attribute look-ups are the hot path's commonest
    # operation, and slots make them cheaper and a World smaller.
    __slots__ = (
        "_sessions",
        "above_soft",
        "arrivals",
        "arrivals_at",
        "arrive_minute",
        "background",
        "background_rows",
        "battery",
        "battery_list",
        "busy",
        "charging",
        "config",
        "critical",
        "critical_list",
        "deadline_list",
        "deadline_minute",
        "defers",
        "depart_minute",
        "dt_h",
        "due_tick",
        "energy_kwh",
        "feeder_background",
        "feeder_capacity",
        "feeder_ev_kw",
        "feeder_headroom_kw",
        "feeder_shed_kw",
        "feeder_util",
        "finished",
        "gave_up_now",
        "give_up_at",
        "inbound",
        "kind",
        "inlet",
        "klass",
        "km_per_kwh",
        "km_per_kwh_list",
        "late",
        "max_ac_list",
        "max_dc_list",
        "n_ticks",
        "node",
        "node_list",
        "no_shed_kw",
        "nonempty",
        "obs_cache",
        "patience_list",
        "patience_minute",
        "pending",
        "plug_kw",
        "plug_minute",
        "queue_len",
        "queues",
        "reach_at",
        "request_list",
        "request_minute",
        "requests_at",
        "scenario",
        "shift_cap_kw",
        "shift_until",
        "shifts_this_tick",
        "soc",
        "station",
        "station_kw",
        "status",
        "tables",
        "taper_start",
        "target",
        "target_list",
        "tick",
        "unplug_minute",
        "waiting_critical",
    )

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
        # EV attributes (exogenous, read-only) and state
        a = arrivals
        self.klass, self.node, self.battery = a.klass, a.node, a.battery_kwh
        self.target, self.critical = a.target, a.critical
        self.km_per_kwh = a.km_per_kwh
        self.request_minute = a.minute.copy()  # first request [min since start]
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
        self.deadline_minute = a.minute + a.deadline_min
        self.patience_minute = a.minute + a.patience_min
        self.inlet = inlet_of(a.max_ac_kw, a.max_dc_kw).tolist()  # KINDS_BY_INLET row
        # Python-list views of the fixed attributes, for scalar look-ups on the hot path.
        self.node_list = a.node.tolist()
        self.km_per_kwh_list = a.km_per_kwh.tolist()
        self.battery_list = a.battery_kwh.tolist()
        self.target_list = a.target.tolist()
        self.max_ac_list = a.max_ac_kw.tolist()
        self.max_dc_list = a.max_dc_kw.tolist()
        self.critical_list = a.critical.tolist()
        self.request_list = self.request_minute.tolist()
        self.deadline_list = self.deadline_minute.tolist()
        self.patience_list = self.patience_minute.tolist()
        # Patience: EVs by the tick at whose end each gives up unless plugged in.
        self.gave_up_now: list[int] = []  # EVs that gave up since the env cleared it
        self.give_up_at: dict[int, list[int]] = {}
        give_up = give_up_ticks(self.patience_minute, config.tick_minutes)
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
        self.busy = np.zeros((S, 3), dtype=np.int64)
        self.queues: list[list[list[int]]] = [[[], [], []] for _ in range(S)]
        self.nonempty: set[tuple[int, int]] = set()  # (station, kind) with a queue
        self.queue_len = np.zeros((S, 3), dtype=np.int64)  # len(self.queues[s][k])
        self.inbound = np.zeros((S, 3), dtype=np.int64)  # EVs driving to (s, k)
        self.charging: list[int] = []
        self._sessions: tuple[np.ndarray, ...] | None = (
            None  # cached arrays of self.charging
        )
        self.shift_until = np.zeros(S, dtype=np.int64)
        self.shift_cap_kw = tables.limit_kw.copy()
        self.shifts_this_tick = 0
        self.station_kw = np.zeros(S)  # [kW] mean power over the last tick
        self.obs_cache: tuple | None = None  # observation.py's view of this tick
        # Feeders
        self.background = tables.background_kw * feeder_noise  # (T, F)
        F = len(tables.city.feeders)
        self.background_rows: list[list[float]] = self.background.tolist()
        self.feeder_capacity: list[float] = tables.capacity_rows[0]
        self.feeder_background: list[float] = self.background_rows[0]
        self.feeder_ev_kw = np.zeros(F)  # [kW] EV load the feeder carried last tick
        # [kW] EV load a feeder carries before its protection sheds any (T, F)
        self.feeder_headroom_kw = tables.capacity_kw - self.background
        self.no_shed_kw = np.zeros(F)
        self.no_shed_kw.flags.writeable = False  # handed out in observations
        self.feeder_shed_kw = self.no_shed_kw  # [kW] EV load shed last tick (F,)
        self.feeder_util = [
            b / c
            for b, c in zip(self.feeder_background, self.feeder_capacity, strict=True)
        ]
        self.above_soft = [False] * F

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
        return self.tables.travel_min[self._t(), self.node_list[ev]]

    def travel_minutes_to(self, ev: int, s: int) -> float:
        """Drive time [min] from the EV's locality to station index ``s``."""
        return (
            self.tables.road_km_rows[self.node_list[ev]][s]
            / self.tables.speed_list[self._t()]
            * 60.0
        )

    def travel_ticks(self, minutes: float) -> int:
        return max(1, math.ceil(minutes / self.config.tick_minutes - 1e-9))

    def range_km(self, ev: int) -> float:
        return float(self.soc[ev]) * self.battery_list[ev] * self.km_per_kwh_list[ev]

    # --- Decisions ------------------------------------------------------------------------
    def route(self, ev: int, station: int, kind: int, parts: dict[str, float]) -> None:
        s = station - 1
        km = self.tables.road_km_rows[self.node_list[ev]][s]
        ticks = self.travel_ticks(self.travel_minutes_to(ev, s))
        tm = self.config.tick_minutes
        self.pending.remove(ev)
        self.status[ev] = TRAVELING
        self.station[ev], self.kind[ev] = s, kind
        self.soc[ev] -= km / self.km_per_kwh_list[ev] / self.battery_list[ev]
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
            evs = due[self.due_tick[ev]]
            evs.remove(ev)
            if not evs:
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
        """At the end, energy still owed to EVs on their way, queued or charging costs.

        Without this, charging slowly (or late) would be cheaper simply because part of
        the energy falls after the episode ends.
        """
        owed = (self.status >= TRAVELING) & (self.status <= CHARGING)
        if owed.any():
            soc, battery, target = self.soc[owed], self.battery[owed], self.target[owed]
            kwh = float(
                np.maximum(
                    0.0, (target - soc) * battery / self.config.charge_efficiency
                ).sum()
            )
            parts["unmet"] -= self.config.weights.unmet * kwh
            kpis.unmet_kwh += kwh

    def _collect_requests(self) -> None:
        due = self.arrivals_at.pop(self.tick, []) + self.requests_at.pop(self.tick, [])
        if not due:
            return
        due.sort()
        for ev in due:
            self.status[ev] = PENDING
            if self.critical[ev] and not self.late[ev]:
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
        # Charging.
        if self.charging:
            self._charge(t, open_now, parts, kpis)
        else:
            self.station_kw[:] = 0.0
            self.feeder_ev_kw[:] = 0.0
            self.feeder_shed_kw = self.no_shed_kw
        # Feeders (six of them: plain floats are faster than numpy here). Stress is
        # charged on the EV load asked (carried + shed) above the soft limit, the peak
        # part on the EV load asked above capacity: what the protection shed.
        cap = tables.capacity_rows[t]
        bg = self.background_rows[t]
        ev_kw = self.feeder_ev_kw.tolist()
        shed_kw = self.feeder_shed_kw.tolist()
        soft_limit = cfg.soft_limit
        util = []  # [0-1] load carried / capacity
        stress_kw = over_kw = 0.0
        n_new_stress = n_over = 0
        for f, c in enumerate(cap):
            e, shed = ev_kw[f], shed_kw[f]
            asked = e + shed  # [kW] EV load asked of the feeder
            load = bg[f] + asked
            u = load / c
            util.append(u if not shed else (bg[f] + e) / c)
            if u > soft_limit:
                stress_kw += min(asked, load - soft_limit * c)
                n_new_stress += not self.above_soft[f]
                self.above_soft[f] = True
            else:
                self.above_soft[f] = False
            if shed:
                over_kw += shed  # = min(asked, load - c)
                n_over += 1
            elif bg[f] > c:  # the background alone above capacity: no EV load to shed
                n_over += 1
        self.feeder_capacity, self.feeder_background, self.feeder_util = cap, bg, util
        stress_kwh, over_kwh = stress_kw * self.dt_h, over_kw * self.dt_h
        parts["grid_stress"] -= w.grid_stress * stress_kwh
        parts["peak"] -= w.peak * over_kwh
        kpis.on_tick(util, n_new_stress, n_over)
        kpis.shed_kwh += over_kwh
        # Waiting in queues; patience and deadlines run out at the end of the tick.
        # Patience runs from the first request until the EV plugs in, whatever it
        # does meanwhile (deferred, driving, queued): see give_up_ticks.
        end = now + tm
        queued = sum(len(self.queues[s][k]) for s, k in self.nonempty)
        parts["wait"] -= w.wait * tm * queued
        for ev in self.give_up_at.pop(t, ()):
            self.give_up(ev, parts, kpis)
        for ev in sorted(self.waiting_critical):
            if self.deadline_minute[ev] < end:
                self.waiting_critical.discard(ev)
                self.late[ev] = True
                parts["urgency"] -= w.urgency

    def _plug_in(self, ev: int, s: int, k: int, now: float, kpis) -> None:  # noqa: ANN001
        cfg = self.config
        self.status[ev] = CHARGING
        self.plug_minute[ev] = now
        self.busy[s, k] += 1
        self.charging.append(ev)
        self._sessions = None
        vehicle = vehicle_kw(k, self.max_ac_list[ev], self.max_dc_list[ev])
        self.plug_kw[ev] = min(CHARGER_KW[k], vehicle)
        self.taper_start[ev] = (
            cfg.taper_start_dc if CHARGER_DC[k] else cfg.taper_start_ac
        )
        self.waiting_critical.discard(ev)
        on_time = (
            bool(self.critical[ev])
            and not self.late[ev]
            and now <= self.deadline_minute[ev]
        )
        kpis.on_plug_in(ev, now - self.request_minute[ev], on_time)

    def _charge(
        self, t: int, open_now: np.ndarray, parts: dict[str, float], kpis
    ) -> None:  # noqa: ANN001
        cfg, w, tables = self.config, self.config.weights, self.tables
        if self._sessions is None:  # rebuilt only when a session starts or ends
            ids = np.array(self.charging)
            self._sessions = (ids, self.station[ids], self.taper_start[ids], self.plug_kw[ids],
                              self.battery[ids], self.target[ids])  # fmt: skip
        ids, st, ts, plug_kw, battery, target = self._sessions
        soc = self.soc[ids]
        floor = cfg.taper_floor
        taper = np.where(
            soc > ts, 1.0 - (1.0 - floor) * (soc - ts) / np.maximum(1.0 - ts, 1e-9), 1.0
        )
        power = plug_kw * np.clip(taper, floor, 1.0)
        S = len(tables.limit_kw)
        demand = np.bincount(st, weights=power, minlength=S)
        limit = (
            np.where(self.shift_until > t, self.shift_cap_kw, tables.limit_kw)
            * open_now
        )
        if (demand > limit).any():
            scale = np.where(demand > limit, limit / np.maximum(demand, 1e-12), 1.0)
            power = power * scale[st]
        need = np.maximum(0.0, (target - soc) * battery / cfg.charge_efficiency)
        energy = np.minimum(power * self.dt_h, need)  # [kWh] grid side
        station_kw = np.bincount(st, weights=energy, minlength=S) / self.dt_h
        feeder_kw = np.bincount(
            tables.feeder_of, weights=station_kw, minlength=len(self.feeder_ev_kw)
        )
        headroom = self.feeder_headroom_kw[t]
        if (feeder_kw > headroom + SHED_TOLERANCE_KW).any():  # rare: only then shed
            factor, shed = feeder_protection(feeder_kw, headroom)
            shed.flags.writeable = False
            self.feeder_shed_kw = shed  # the shed kWh stay owed to their EVs
            energy = energy * factor[tables.feeder_of[st]]
            station_kw = np.bincount(st, weights=energy, minlength=S) / self.dt_h
            feeder_kw = feeder_kw - shed
        else:
            self.feeder_shed_kw = self.no_shed_kw
        done = energy >= need - 1e-9
        self.soc[ids] = np.where(
            done, target, soc + energy * cfg.charge_efficiency / battery
        )
        self.energy_kwh[ids] += energy
        self.station_kw, self.feeder_ev_kw = station_kw, feeder_kw
        total = float(energy.sum())
        cost = total * float(tables.tariff[t])
        fossil = total * (1.0 - float(tables.renewable[t]))
        parts["cost"] -= w.cost * cost
        parts["renewable"] -= w.renewable * fossil
        kpis.on_energy(total, total - fossil, cost)
        if done.any():
            self._sessions = None
            for ev in ids[done].tolist():
                self.charging.remove(ev)
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
