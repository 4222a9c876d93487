"""The episode's world: a view over its arrays, and the clock that moves it.

``World`` owns one episode's state (``state.EpisodeState``: named arrays) and the
scenario's numbers (``state.Rules``), and applies the rules that live as kernels:
the decisions (``decide.py``) and the ticks (``ticks.py``), compiled by numba or
run as Python (``jit.py``). Under the feeder sum a run of ticks is one compiled
call; another grid model carries each tick's load from Python between the tick's
kernels. What front ends and the observation read (``status``, ``busy``,
``pending``, ``grid_now``...) are views of the same arrays.
"""

from __future__ import annotations

import copy
from functools import lru_cache

import numpy as np

from . import entry
from .config import SimConfig
from .features import FORECAST_TICKS
from .fleet import Arrivals, EVLists
from .grid import FeederSum, GridTick, make_grid_model
from .jit import handle
from .reward import REWARD_KEYS, network_terms
from .scenarios import Scenario
from .state import (
    CHARGING,
    DEFERRED,
    GAVE_UP,
    I_N_GAVE_UP_NOW,
    I_N_PLUGGED,
    I_SHED,
    I_SHIFTS,
    I_TICK,
    P_TRANSFORMER,
    P_UNDERVOLTAGE,
    PENDING,
    QUEUED,
    SERVED,
    STATUS_NAMES,
    STRANDED,
    TRAVELING,
    WAITING,
    EpisodeState,
    give_up_into,
    make_rules,
    make_state,
    unpack,
)  # fmt: skip
from .tables import ScenarioTables, scenario_tables

__all__ = ["CHARGING", "DEFERRED", "GAVE_UP", "PENDING", "QUEUED", "SERVED",
           "STATUS_NAMES", "STRANDED", "TRAVELING", "WAITING", "World",
           "give_up_tick", "give_up_ticks"]  # fmt: skip


# --- Patience ----------------------------------------------------------------------
def give_up_ticks(patience_minute: np.ndarray, tick_minutes: int) -> np.ndarray:
    """``state.give_up_at`` for each EV (floats: inf for endless patience)."""
    p = np.atleast_1d(np.asarray(patience_minute, dtype=float))
    out = np.empty(p.shape)
    give_up_into(p.ravel(), tick_minutes, out.reshape(-1))
    return out.reshape(np.shape(patience_minute))


def give_up_tick(patience_minute: float, tick_minutes: int) -> int:
    """``give_up_ticks`` for one EV (finite patience)."""
    return int(give_up_ticks(patience_minute, tick_minutes))


@lru_cache(maxsize=64)
def scenario_rules(config: SimConfig, scenario: Scenario) -> tuple:
    """The kernels' numbers for a scenario under a config (packed), once per process."""
    return make_rules(config, scenario, scenario_tables(scenario, config))


def _views(packed: tuple) -> EpisodeState:
    """The state's named views, in Python (the kernels unpack their own)."""
    return getattr(unpack, "py_func", unpack)(packed)


_NO_PARTS = np.zeros(13)  # for the calls that charge nothing
# Not deep-copied: the read-only tables and rules, and what a copy rebuilds on its own
# arrays (a handle copied would point at the original's memory).
_SHARED_OR_REBUILT = ("state", "packed", "tables", "rules", "arrivals", "evs", "handle",
                      "rules_handle")  # fmt: skip


def new_parts() -> np.ndarray:
    """A step's reward parts before anything is charged (``REWARD_KEYS``'s order)."""
    return np.zeros(len(REWARD_KEYS))


class World:
    """One episode. EVs are indices 0..n-1 (id = index + 1)."""

    __slots__ = ("_finished", "_grid_now", "_pending", "_tick", "_view", "arrivals", "background", "config", "dt_h", "evs",
                 "grid", "handle", "n_ticks", "obs_cache", "packed", "rules",
                 "rules_handle", "scenario", "state", "tables")  # fmt: skip
    # ``handle`` and ``rules_handle``: what the kernels are handed (``jit.handle``),
    # the addresses of ``packed``'s and ``rules``' blocks, which this object owns.

    def __init__(
        self,
        config: SimConfig,
        scenario: Scenario,
        tables: ScenarioTables,
        arrivals: Arrivals,
        feeder_noise: np.ndarray,
    ) -> None:
        self.config, self.scenario, self.tables = config, scenario, tables
        self.arrivals = arrivals
        self.n_ticks = scenario.n_ticks
        self.dt_h = config.tick_minutes / 60.0
        self.evs = EVLists(arrivals)  # the same numbers as Python lists
        self.rules = scenario_rules(config, scenario)
        self.rules_handle = handle(self.rules)
        # Feeders: the grid model carries the stations' load, tick by tick.
        self.background = tables.background_kw * feeder_noise  # (T, F) [kW]
        self.packed = make_state(config, scenario, tables, arrivals, self.background)
        self.state = _views(self.packed)
        self.handle = handle(self.packed)
        self._sync()
        self.grid = make_grid_model(config.grid, tables, self.background, scenario)
        self.obs_cache: tuple | None = None  # the tick's observation part (fast.py)
        # What the feeders carried in the last tick (before the first: no EV load).
        self._carry(0)

    # --- Views of the state -----------------------------------------------------------
    @property
    def tick(self) -> int:
        return self._tick

    @tick.setter
    def tick(self, t: int) -> None:  # probes and tests look at a tick's tables
        self.state.ints[I_TICK] = t
        self.obs_cache = None
        self._sync()

    def _sync(self) -> None:
        """After a kernel ran: the clock and the pending list as Python values (read
        many times a step; the kernels change them only through ``_call``)."""
        # ``ints`` opens with the clock, whether it ended and the count pending
        tick, finished, n = self.state.ints[:3].tolist()  # one numpy call, not three
        self._tick, self._finished = tick, finished != 0
        self._pending = self.state.pending[:n].tolist() if n else []
        self._view: tuple | None = None  # (ev, route mask, DEFER count), as asked

    finished = property(lambda self: self._finished)
    # Whether a decision's kernel runs the clock too (the feeder sum's one call)
    fused = property(lambda self: type(self.grid) is FeederSum)
    shifts_this_tick = property(lambda self: int(self.state.ints[I_SHIFTS]))
    status = property(lambda self: self.state.status)
    soc = property(lambda self: self.state.soc)
    station = property(lambda self: self.state.station)
    kind = property(lambda self: self.state.kind)
    defers = property(lambda self: self.state.defers)
    due_tick = property(lambda self: self.state.due_tick)
    late = property(lambda self: self.state.late)
    depart_minute = property(lambda self: self.state.depart_minute)
    arrive_minute = property(lambda self: self.state.arrive_minute)
    plug_minute = property(lambda self: self.state.plug_minute)
    unplug_minute = property(lambda self: self.state.unplug_minute)
    plug_kw = property(lambda self: self.state.plug_kw)
    energy_kwh = property(lambda self: self.state.energy_kwh)
    busy = property(lambda self: self.state.busy)
    queue_len = property(lambda self: self.state.queue_len)
    inbound = property(lambda self: self.state.inbound)
    shift_until = property(lambda self: self.state.shift_until)
    shift_cap_kw = property(lambda self: self.state.shift_cap_kw)
    station_kw = property(lambda self: self.state.station_kw)

    @property
    def pending(self) -> list[int]:
        """EVs waiting for a decision now, in EV order (the first is the request)."""
        return self._pending

    @property
    def plugged(self) -> list[int]:
        """EVs charging, in plug-in order."""
        return self.state.plugged[: self.state.ints[I_N_PLUGGED]].tolist()

    @property
    def gave_up_now(self) -> list[int]:
        """EVs that gave up since ``clear_gave_up``."""
        n = self.state.ints[I_N_GAVE_UP_NOW]
        return self.state.gave_up_now[:n].tolist() if n else []

    def clear_gave_up(self) -> None:
        self.state.ints[I_N_GAVE_UP_NOW] = 0

    @property
    def grid_now(self) -> GridTick:
        """What the feeders carried in the last tick (the first: no EV load yet)."""
        if self._grid_now is None:
            st = self.state
            ev_kw, shed = st.grid_ev_kw.copy(), st.grid_shed_kw.copy()
            ev_kw.flags.writeable = shed.flags.writeable = False
            factor = st.station_factor.copy() if st.ints[I_SHED] else None
            self._grid_now = GridTick(
                st.grid_capacity_kw.tolist(), st.grid_background_kw.tolist(), ev_kw,
                shed, st.grid_util.tolist(), factor,
            )  # fmt: skip
        return self._grid_now

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

    def table_row(self) -> int:
        """The row of the per-tick tables for now (the last one once the episode ends)."""
        return min(self.tick, self.n_ticks - 1)

    def tariff_now(self) -> float:
        return float(self.tables.tariff[self.table_row()])

    def renewable_now(self) -> float:
        return float(self.tables.renewable[self.table_row()])

    def station_open(self, s: int, tick: int | None = None) -> bool:
        t = self.table_row() if tick is None else tick
        return t < self.n_ticks and self.tables.open_rows[t][s]

    def cap_kw(self, s: int) -> float:
        """The station's power limit now: its connection limit or a LOAD_SHIFT cap."""
        st = self.state
        return float(
            st.shift_cap_kw[s]
            if st.shift_until[s] > self.tick
            else self.tables.limit_kw[s]
        )

    # --- Travel ------------------------------------------------------------------------
    def travel_minutes(self, ev: int) -> np.ndarray:
        """Drive time [min] from the EV's locality to every station, at today's speed."""
        return self.tables.travel_min[self.table_row(), self.evs.node[ev]]

    def inbound_kw(self, ticks: int) -> np.ndarray:
        """(S,) [kW] what the EVs driving to each station will draw there, those that
        arrive within ``ticks`` ticks (``decide.inbound_kw``: the load the ROUTEs so
        far commit to its feeder). One compiled call."""
        out = np.empty(self.tables.city.n_stations)
        entry.call(entry.INBOUND_KW, self.handle, self.rules_handle, out, ticks, 0, 0)
        return out

    def range_km(self, ev: int) -> float:
        return (
            float(self.state.soc[ev])
            * self.evs.battery_kwh[ev]
            * self.evs.km_per_kwh[ev]
        )

    # --- Decisions (``decide.py``; a step judges and applies through ``try_step``) -----
    # ``defer`` applies one unjudged: for probes that set up a state the rules forbid.
    def defer(self, ev: int, minutes: int, parts: np.ndarray) -> None:
        self._call(entry.DEFER, parts, ev, minutes)

    def strand(self, ev: int, parts: np.ndarray) -> None:
        """An invalid answer turns away the EV being decided."""
        self._call(entry.STRAND, parts, ev)

    def ask(self, op: int, a: int = 0, b: int = 0, c: int = 0) -> int:
        """A question to the rules' kernels (``entry``'s ``*_CODE``): their
        answer; the state is not changed."""
        return entry.call(op, self.handle, self.rules_handle, _NO_PARTS, a, b, c)

    def request_view(self, ev: int) -> tuple[np.ndarray, int]:
        """For ``ev``, now: the ROUTE rule for every (station, kind) pair, (S, K)
        bool read-only, and how many of the DEFER options it may take (the
        shortest ones). One compiled call, kept until the state next changes."""
        view = self._view
        if view is None or view[0] != ev:
            out = np.empty(self.tables.plugs.size)
            count = entry.call(
                entry.REQUEST_VIEW, self.handle, self.rules_handle, out, ev, 0, 0
            )
            mask = (out > 0).reshape(self.tables.plugs.shape)
            mask.flags.writeable = False
            view = self._view = (ev, mask, count)
        return view[1], view[2]

    def encode(self, done: bool, v: np.ndarray, mask: np.ndarray) -> None:
        """The RL view now into ``v`` (OBS_SIZE float32) and ``mask`` (N_ACTIONS
        bool): ``features.encode_into``, with the grid model's own forecast unless
        it is the feeder sum (whose rule the kernel holds)."""
        scratch = np.zeros((2, len(self.tables.city.feeders)))
        given = not self.fused
        if given:
            st = self.state
            t = self.table_row()
            scratch[1] = self.grid.forecast(
                t, st.grid_ev_kw + st.grid_shed_kw, FORECAST_TICKS
            )
        entry.encode(
            self.handle, self.rules_handle, bool(done), v, mask, scratch, given
        )

    def try_step(self, what: int, a: int, b: int, c: int, parts: np.ndarray) -> int:
        """Judge a decision and apply it if allowed (``judge.try_action``), then run
        the clock if no request is left; its code (``judge.OK`` or why refused,
        nothing changed). The clock runs here only under the feeder sum: another
        grid model's caller runs ``advance`` itself."""
        op = entry.STEP_ROUTE if self.fused else entry.TRY_ROUTE
        tick = self._tick
        code = self._call(op + what, parts, a, b, c)
        if self._tick != tick or self.finished:  # the clock ran
            self.obs_cache = self._grid_now = None
        return code

    def _call(
        self, op: int, parts: np.ndarray, a: int = 0, b: int = 0, c: int = 0
    ) -> int:
        out = entry.call(
            op, self.handle, self.rules_handle, parts, int(a), int(b), int(c)
        )
        self._sync()
        return out

    # --- Clock advance ----------------------------------------------------------------
    def advance(self, parts: np.ndarray, kpis) -> None:  # noqa: ANN001
        """Run ticks until one has a request to decide, or the episode ends."""
        self.obs_cache = None
        if type(self.grid) is FeederSum:  # the whole run in one compiled call
            self._grid_now = None
            self._call(entry.ADVANCE, parts)
            return
        while True:
            now = self._call(entry.TICK_START, parts)
            if now == 1:
                self._call(entry.SETTLE_UNMET, parts)
                return
            if now == 2:
                return
            t = self.tick
            n = self._call(entry.REACH_AND_PLUG, parts, t)
            if n:
                self._call(entry.CHARGE_ASK, parts, t)
            else:
                self.state.station_kw[:] = 0.0
            grid = self._carry(t)
            if n:
                self._call(entry.CHARGE_SETTLE, parts, t)
            self._call(entry.GRID_TERMS, parts, t)
            if grid.network is not None:  # the network models' limits
                w = self.config.weights
                deficit_pu, over_kva = network_terms(grid.network)
                parts[P_UNDERVOLTAGE] -= w.undervoltage * deficit_pu * self.dt_h
                parts[P_TRANSFORMER] -= w.transformer_overload * over_kva * self.dt_h
                kpis.on_network(grid.network, self.dt_h)
            self._call(entry.WAIT_AND_PATIENCE, parts, t)
            self._call(entry.TICK_END, parts)

    def _carry(self, t: int) -> GridTick:
        """The grid model carries the stations' asked load in tick ``t``; the tick's
        feeders go into the state for the kernels that read them."""
        st = self.state
        if type(self.grid) is FeederSum:
            self._call(entry.CARRY_FEEDER_SUM, _NO_PARTS, t)
            self._grid_now = None
            return self.grid_now
        grid = self.grid.carry(t, st.station_kw.copy())
        st.grid_capacity_kw[:] = grid.capacity_kw
        st.grid_background_kw[:] = grid.background_kw
        st.grid_ev_kw[:] = grid.ev_kw
        st.grid_shed_kw[:] = grid.shed_kw
        st.grid_util[:] = grid.utilisation
        st.ints[I_SHED] = grid.station_factor is not None
        if grid.station_factor is not None:
            st.station_factor[:] = grid.station_factor
        self._grid_now = grid
        return grid

    # --- Copies -----------------------------------------------------------------------
    def __deepcopy__(self, memo: dict) -> World:
        """An independent episode: the state's arrays copied (the views rebuilt on
        the copies), the scenario's read-only tables and rules shared."""
        other = object.__new__(World)
        for name in self.__slots__:
            if name not in _SHARED_OR_REBUILT:
                setattr(other, name, copy.deepcopy(getattr(self, name), memo))
        other.tables, other.rules = self.tables, self.rules
        other.arrivals, other.evs = self.arrivals, self.evs  # never written
        other.rules_handle = self.rules_handle
        other.packed = tuple(a.copy() for a in self.packed)
        other.state = _views(other.packed)
        other.handle = handle(other.packed)
        return other

    def __getstate__(self) -> dict:  # addresses mean nothing in another process
        return {k: getattr(self, k) for k in self.__slots__
                if k not in ("state", "handle", "rules_handle")}  # fmt: skip

    def __setstate__(self, data: dict) -> None:
        for k, v in data.items():
            setattr(self, k, v)
        self.state = _views(self.packed)
        self.handle, self.rules_handle = handle(self.packed), handle(self.rules)

    # --- Introspection ---------------------------------------------------------------
    def active_evs(self) -> list[int]:
        """EVs currently in the system (requested and not yet gone)."""
        status = self.state.status
        return np.flatnonzero((status >= PENDING) & (status <= CHARGING)).tolist()

    def status_name(self, ev: int) -> str:
        return STATUS_NAMES[self.state.status[ev]]
