"""The view's driver: the episode, the policy in a worker thread, manual choices.

No pygame here. The display clock (``display_minute``) trails the core's clock
and catches up at a pace set by the caller: by the wall clock when live, or by a
fixed sub-step per frame when recording (frame-exact). A decision is asked for
only when the display has caught up, so every decision is shown at its tick.
Policies always run in a worker thread, so a slow (LLM) policy never freezes the
window. Manual actions go through the core's ``validate_action`` and are not sent
when invalid.
"""

from __future__ import annotations

import concurrent.futures as cf
from collections import Counter, deque
from dataclasses import dataclass, field
from typing import Any

from evgrid_core import (
    ChargerKind,
    Defer,
    EVGridEnv,
    LoadShift,
    Route,
    SimConfig,
    format_action,
)
from evgrid_core.actions import DEFER_MINUTES, SHIFT_CAP_PCT, SHIFT_MINUTES
from evgrid_core.chargers import CHARGER_KW, N_KINDS
from evgrid_core.policies import make_policy, policy_names
from evgrid_core.trace import episode_trace

from .events import event_log, scenario_events

VERBS = ("ROUTE", "DEFER", "LOAD_SHIFT")
# The kind preselected for a new request: FAST where it can, else the most power.
PRESELECT_KINDS = sorted(
    range(N_KINDS), key=lambda k: (k != ChargerKind.FAST, -CHARGER_KW[k])
)


@dataclass
class Decision:
    """One decision as it was applied, with what the core answered."""

    minute: float  # [min since start] when it was decided
    clock: str
    source: str  # policy name, or "manual"
    action: str
    valid: bool
    reason: str
    reward: float
    parts: dict[str, float]
    ev: int
    origin: str | None  # locality of the EV (for the route highlight)
    station: int | None  # routed-to station, when a valid ROUTE
    debug: dict[str, Any] | None = None
    gave_up: tuple[int, ...] = ()  # EVs whose patience ran out as the clock ran on
    place: str = ""  # the named station's name (ROUTE, LOAD_SHIFT), as the map shows it
    verb: str = ""  # ROUTE, DEFER or LOAD_SHIFT (the applied action's; "" if invalid)
    forced: bool = False  # invalid because the EV had no valid action left at all
    obs: Any = field(default=None, repr=False)  # what it saw (the "why" box, key W)


@dataclass
class ManualChoice:
    """What the keyboard has composed so far in manual mode."""

    verb: str = "ROUTE"
    ev_pos: int = 0  # index into the pending list
    station: int = 1  # 1-based
    kind: int = int(ChargerKind.FAST)
    defer_idx: int = 2
    cap_idx: int = 1
    shift_idx: int = 1
    fresh_for: tuple[int, int] | None = field(default=None, repr=False)


def build_policy(name: str, model_path: str | None = None):  # noqa: ANN201
    """``make_policy`` (the core's registry, plugins such as the Oracle included),
    with ``model_path`` given to the Oracle."""
    # --model names the Oracle's GGUF: no other policy gets it (distilled reads its
    # own committed trees).
    kwargs = {"model_path": model_path} if model_path and name == "oracle" else {}
    return make_policy(name, **kwargs)


class Controller:
    """Runs one episode for the view. ``threaded=False`` decides inline (tests)."""

    def __init__(
        self,
        scenario: str,
        seed: int,
        policy: str,
        model_path: str | None = None,
        threaded: bool = True,
        history: int = 6,
        grid: str = "feeder_sum",  # the grid model (evgrid_core.grid.GRID_MODELS)
    ) -> None:
        self.scenario, self.seed, self.model_path = scenario, seed, model_path
        self.grid = grid
        self.env = EVGridEnv(SimConfig(grid=grid))
        self.tick_minutes = self.env.config.tick_minutes
        self.soft_limit = self.env.config.soft_limit
        self.policy_name = policy
        self.policy = build_policy(policy, model_path)
        self.threaded = threaded
        self._pool = (
            cf.ThreadPoolExecutor(1, thread_name_prefix="policy") if threaded else None
        )
        self.decisions: deque[Decision] = deque(maxlen=history)
        self.recent: deque[Decision] = deque(maxlen=64)  # for route highlights
        self.paused = False
        self.manual = False
        self.choice = ManualChoice()
        self.message = ""
        self.reset(seed)

    # --- Episode --------------------------------------------------------------------
    def reset(self, seed: int | None = None) -> None:
        if seed is not None:
            self.seed = seed
        self._cancel()
        self.env.reset(seed=self.seed, scenario=self.scenario)
        self.policy.reset(self.seed)
        self.display_minute = self.env_minute
        self.decisions.clear()
        self.recent.clear()
        self.feeder_history: list[tuple[float, tuple[float, ...]]] = []
        # The scenario's events (fault, derating, closure, DT swap, surge) and the
        # log's lines for their starts and ends; each feeder's limit per tick [kW]
        # and its rating [kW] (the chart's limit lines, the MW figures).
        sc, city = self.env.scenario, self.env.city
        self.events = scenario_events(sc, city)
        self.event_lines = event_log(
            self.events, self.tick_minutes, sc.start_minute, sc.n_ticks
        )
        self.feeder_limit_kw = episode_trace(self.env).capacity_kw  # (T, F)
        self.feeder_rated_kw = tuple(float(f.capacity_kw) for f in city.feeders)
        self.sources: Counter[str] = Counter()  # decisions per policy (or manual)
        self.forced: list[Decision] = []  # invalid with no valid action left
        self._step_once = False
        self.refresh()

    def refresh(self) -> None:
        """Snapshot the core's state (after each step); drawing reads only this."""
        self.state = self.env.state()
        self.obs = self.env.observation()
        self.network = self.env.network  # bus voltages...; None: the feeder sum
        # The core's per-tick feeder utilisation; tick i is plotted at its end.
        history = self.env.kpis.feeder_util_history
        for i in range(len(self.feeder_history), len(history)):
            minute = float((i + 1) * self.tick_minutes)
            self.feeder_history.append((minute, tuple(history[i])))

    @property
    def env_minute(self) -> float:
        return float(self.env.tick * self.tick_minutes)

    def logged_events(self, minute: float) -> list[tuple[float, str]]:
        """The events' log lines due by ``minute`` (the display clock), newest first."""
        return [e for e in reversed(self.event_lines) if e[0] <= minute + 1e-9]

    @property
    def end_minute(self) -> float:
        return float(self.env.scenario.n_ticks * self.tick_minutes)

    @property
    def done(self) -> bool:
        return self.env.done

    @property
    def caught_up(self) -> bool:
        return self.display_minute >= self.env_minute - 1e-9

    @property
    def deciding(self) -> bool:
        return self._future is not None

    def advance_display(self, minutes: float) -> None:
        """Move the display clock forward, never past the core's clock."""
        limit = self.end_minute if self.done else self.env_minute
        self.display_minute = min(self.display_minute + minutes, limit)

    # --- Decisions ------------------------------------------------------------------
    def poll(self, block: bool = False) -> int:
        """Make the decisions that are due now; returns how many were applied.

        With ``block`` every decision due at the current tick is made before
        returning (recording); otherwise at most one finished decision is applied
        and a new one is started in the worker (live).
        """
        applied = 0
        while not self.done and self.caught_up:
            if self.manual or (self.paused and not self._step_once):
                return applied
            if self._future is None:
                self._start_decision()
            fut = self._future
            if fut is None:
                return applied
            if not (block or fut.done()):
                return applied
            self._future = None
            try:
                action, debug = fut.result()
            except Exception as e:  # noqa: BLE001 - show it, don't crash the view
                self.message = f"policy {self.policy_name} failed: {e!r}"[:160]
                self.paused = True
                return applied
            try:
                self.apply(action, self.policy_name, debug)
            except TypeError as e:  # not an action: the core changed nothing
                self.message = f"policy {self.policy_name}: {e}"[:160]
                self.paused = True
                return applied
            applied += 1
            if self._step_once:
                self._step_once = False
                self.paused = True
                return applied
            if not block:
                return applied
        return applied

    def _start_decision(self) -> None:
        obs, policy = self.obs, self.policy

        def decide():  # noqa: ANN202
            action = policy.act(obs)
            debug = getattr(policy, "last_debug", None)
            return action, dict(debug) if isinstance(debug, dict) else None

        if self._pool is None:
            fut: cf.Future = cf.Future()
            try:
                fut.set_result(decide())
            except Exception as e:  # noqa: BLE001
                fut.set_exception(e)
            self._future = fut
        else:
            self._future = self._pool.submit(decide)

    _future: cf.Future | None = None

    def _cancel(self) -> None:
        """Forget a decision in flight (its result is never applied)."""
        if self._future is not None:
            self._future.cancel()
            self._future = None

    def apply(self, action, source: str, debug: dict | None = None) -> Decision:  # noqa: ANN001
        """Send one action to the core and record what it answered."""
        request = self.state["request"]
        origin = None
        if request is not None:
            origin = next(
                (e["node"] for e in self.state["evs"] if e["id"] == request), None
            )
        minute, clock = self.env_minute, self.state["clock"]
        obs = self.obs  # what the decision saw: had the EV any valid action left?
        stuck = obs.request is not None and not obs.has_valid_answer
        res = self.env.step(action)
        info = res.info
        applied = self.env.last_action  # the typed action applied; None: refused
        station = applied.station if isinstance(applied, Route) else None
        named = getattr(applied, "station", None)
        stations = self.state["stations"]
        place = stations[named - 1]["name"] if named and named <= len(stations) else ""
        d = Decision(
            minute=minute,
            clock=clock,
            source=source,
            action=str(info["action"]),
            valid=bool(info["valid"]),
            reason=str(info["reason"]),
            reward=float(res.reward),
            parts=dict(info["reward_parts"]),
            ev=int(info["ev"]),
            origin=origin,
            station=station,
            debug=debug,
            gave_up=tuple(info.get("gave_up", ())),
            place=place,
            verb=type(applied).__name__.upper().replace("LOADSHIFT", "LOAD_SHIFT")
            if applied is not None
            else "",
            forced=stuck and not info["valid"],
            obs=obs,
        )
        self.sources[source] += 1
        if d.forced:
            self.forced.append(d)
        self.decisions.appendleft(d)
        self.recent.appendleft(d)
        self.refresh()
        return d

    # --- Keyboard-level commands ------------------------------------------------------
    def toggle_pause(self) -> None:
        self.paused = not self.paused

    def step_once(self) -> None:
        """One decision now (when paused): finish the animation, then decide once."""
        self.display_minute = max(self.display_minute, self.env_minute)
        self.paused = True
        self._step_once = True

    def cycle_policy(self, direction: int = 1) -> str:
        names = (
            policy_names()
        )  # a policy that cannot be built is skipped, with its reason
        i = names.index(self.policy_name) if self.policy_name in names else -1
        for k in range(1, len(names) + 1):
            name = names[(i + direction * k) % len(names)]
            try:
                policy = build_policy(name, self.model_path)
            except Exception as e:  # noqa: BLE001
                self.message = f"cannot use {name}: {e}"[:160]
                continue
            self._cancel()
            policy.reset(self.seed)
            self.policy, self.policy_name = policy, name
            self.message = f"policy: {name}"
            return name
        return self.policy_name

    def set_manual(self, on: bool) -> None:
        self.manual = on
        if on:
            self._cancel()
            self.message = "manual control: compose an action, Enter sends it"

    # --- Manual control -------------------------------------------------------------
    def manual_sync(self) -> None:
        """On a new request, preselect its EV and its nearest valid station."""
        key = (self.env.steps, self.state["request"] or 0)
        c = self.choice
        if c.fresh_for == key or self.obs.request is None:
            return
        c.fresh_for, c.ev_pos = key, 0
        mask = self.obs.route_mask
        usable = [s for s in range(mask.shape[0]) if mask[s].any()]
        if usable:
            s = min(usable, key=lambda s: self.obs.travel_min[s])
            c.station = s + 1
            c.kind = next(k for k in PRESELECT_KINDS if mask[s, k])

    def selected_ev(self) -> dict | None:
        """The pending EV that manual control has selected (``Tab``), as the core's
        state describes it; None when nothing is waiting."""
        pending = self.state["pending"]
        if not pending:
            return None
        ev = pending[self.choice.ev_pos % len(pending)]
        return next((e for e in self.state["evs"] if e["id"] == ev), None)

    def manual_check(self) -> tuple[bool, str]:
        """The core's verdict on the composed action (asked once per change)."""
        action = self.manual_action()
        key = (self.env.steps, format_action(action))
        if self._check is None or self._check[0] != key:
            verdict = self.env.validate(action) if not self.done else (False, "")
            self._check = (key, verdict)
        return self._check[1]

    _check: tuple[tuple[int, str], tuple[bool, str]] | None = None

    def _preselect_for(self, ev: int) -> None:
        """The selected EV's nearest station (road km) that the core would take,
        with the first charger kind it would take there."""
        city = self.env.city
        node = next((e["node"] for e in self.state["evs"] if e["id"] == ev), None)
        if node is None:
            return
        row = city.road_km[city.node_index(node)]
        for s in sorted(range(city.n_stations), key=lambda s: row[s]):
            for k in PRESELECT_KINDS:
                if self.env.validate(Route(ev, s + 1, ChargerKind(k)))[0]:
                    self.choice.station, self.choice.kind = s + 1, int(k)
                    return

    def manual_action(self):  # noqa: ANN201
        """The typed action the keyboard has composed."""
        c = self.choice
        pending = self.state["pending"] or [0]
        ev = pending[c.ev_pos % len(pending)]
        if c.verb == "ROUTE":
            return Route(ev, c.station, ChargerKind(c.kind))
        if c.verb == "DEFER":
            return Defer(ev, DEFER_MINUTES[c.defer_idx % len(DEFER_MINUTES)])
        return LoadShift(
            c.station,
            SHIFT_CAP_PCT[c.cap_idx % len(SHIFT_CAP_PCT)],
            SHIFT_MINUTES[c.shift_idx % len(SHIFT_MINUTES)],
        )

    def manual_key(self, command: str) -> None:
        """Change the composed action: verb, ev, station+/-, value+/-, value2+/-."""
        c = self.choice
        n = len(self.state["stations"])
        if command == "verb":
            c.verb = VERBS[(VERBS.index(c.verb) + 1) % len(VERBS)]
        elif command == "ev":
            pending = self.state["pending"]
            c.ev_pos = (c.ev_pos + 1) % max(1, len(pending))
            if pending and c.verb == "ROUTE":
                self._preselect_for(pending[c.ev_pos])
        elif command in ("station+", "station-"):
            c.station = (c.station - 1 + (1 if command == "station+" else -1)) % n + 1
        elif command in ("value+", "value-"):
            step = 1 if command == "value+" else -1
            if c.verb == "ROUTE":
                c.kind = (c.kind + step) % N_KINDS
            elif c.verb == "DEFER":
                c.defer_idx = (c.defer_idx + step) % len(DEFER_MINUTES)
            else:
                c.cap_idx = (c.cap_idx + step) % len(SHIFT_CAP_PCT)
        elif command in ("value2+", "value2-") and c.verb == "LOAD_SHIFT":
            step = 1 if command == "value2+" else -1
            c.shift_idx = (c.shift_idx + step) % len(SHIFT_MINUTES)

    def select_station(self, station: int) -> None:
        self.choice.station = station

    def manual_submit(self) -> Decision | None:
        """Validate the composed action with the core; send it only if valid."""
        if self.done or not self.manual:
            return None
        if not self.caught_up:
            self.display_minute = self.env_minute
        action = self.manual_action()
        ok, reason = self.env.validate(action)
        if not ok:
            self.message = f"not sent: {format_action(action)}: {reason}"
            return None
        self.message = f"sent {format_action(action)}"
        return self.apply(action, "manual")

    def close(self) -> None:
        self._cancel()
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
