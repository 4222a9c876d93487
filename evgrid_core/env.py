"""EVGridEnv: the headless simulator. ``reset``, ``step``, ``state``.

One step = one decision. Requests due at a tick are decided one at a time; the
clock advances (5 simulated minutes a tick, physics in ``world.py``) only once
every request due at the current tick has been decided, then fast-forwards to the
next tick that has a request. Invalid actions strand their EV, so every step
either settles a request or is one of at most ``max_load_shifts_per_tick`` valid
LOAD_SHIFTs, and each EV can be deferred at most ``max_defers`` times: an episode
always ends within a bounded number of steps.

Front ends ask the env (``validate``, ``city``, ``tick``, ``request_id``,
``started``, ``state``), not its ``world``: the world's layout is the core's own.
"""

from __future__ import annotations

import copy
from typing import Any, NamedTuple

import numpy as np

from .actions import (
    Action,
    Defer,
    Invalid,
    LoadShift,
    Route,
    describe_action,
    field_problem,
    parse_action,
)
from .city import City, load_city
from .config import SimConfig
from .distflow import NetworkState
from .episode import episode_inputs
from .features import N_ACTIONS, OBS_SIZE
from .fleet import CLASS_NAMES, Arrivals
from .judge import A_DEFER, A_LOAD_SHIFT, A_ROUTE
from .kpis import KPITracker
from .observation import Observation, build_observation, render_text
from .reward import REWARD_KEYS
from .rules import refusal, validate_action
from .scenarios import DEFAULT_SCENARIO, Scenario, get_scenario
from .state import P_INVALID
from .tables import scenario_tables
from .world import World, new_parts


class EpisodeOverError(RuntimeError):
    """``step`` was called after the episode ended (or before ``reset``)."""


class StepResult(NamedTuple):
    """What ``step`` returns (immutable): the reward, whether the episode has ended,
    and the step's info."""

    reward: float
    done: bool
    info: dict[str, Any]


STEP_TYPES = (str, Route, Defer, LoadShift, Invalid)  # what step() accepts


class EVGridEnv:
    """Bengaluru EV-charging dispatch. Deterministic for a given (seed, scenario)."""

    def __init__(self, config: SimConfig | None = None) -> None:
        self.config = config or SimConfig()
        self.world: World | None = None
        self.scenario: Scenario | None = None
        self.seed: int | None = None
        # The typed action the last step applied (None: refused, or no step yet):
        # what a front end shows without parsing ``info["action"]`` back.
        self.last_action: Action | None = None

    # --- Episode ----------------------------------------------------------------------
    def reset(
        self,
        seed: int = 0,
        scenario: str | Scenario = DEFAULT_SCENARIO,
        *,
        arrivals: Arrivals | None = None,
        background_noise: np.ndarray | None = None,
    ) -> Observation:
        """Start an episode. Arrivals come from their own stream derived from ``seed``.

        ``arrivals`` (see ``fleet.arrivals_from_records``) and ``background_noise``
        (per-feeder multipliers, 1.0 = none) replace the drawn ones: for probe
        tests and hand-made studies.
        """
        sc = get_scenario(scenario) if isinstance(scenario, str) else scenario
        if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
            raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
        self.scenario, self.seed = sc, int(seed)
        tables = scenario_tables(sc, self.config)
        drawn, drawn_noise = episode_inputs(int(seed), sc, self.config,
                                            draw_noise=background_noise is None,
                                            draw=arrivals is None)  # fmt: skip
        arrivals = drawn if arrivals is None else arrivals
        if background_noise is None:
            noise = drawn_noise
        else:
            n_feeders = len(tables.city.feeders)
            noise = np.asarray(background_noise, dtype=float).reshape(n_feeders)
        self.world = World(self.config, sc, tables, arrivals, noise)
        self.kpis = KPITracker(self.world)
        self.steps = 0
        self.done = False
        self.last_info: dict[str, Any] = {}
        self.last_action = None
        self.world.advance(new_parts(), self.kpis)  # to the first tick with a request
        self.done = self.world.finished
        return self.observation()

    def step(self, action: Action | Invalid | str) -> StepResult:
        """Apply one decision (typed, or one text line) and return reward and info.

        Text that does not parse (or the parser's ``Invalid``) is an invalid action;
        anything else that is not an action is a caller's bug: ``TypeError``, raised
        before anything changes.
        """
        if not isinstance(action, STEP_TYPES):
            raise TypeError(
                "step() takes a text line (str) or a Route, Defer or LoadShift "
                f"(or the parser's Invalid), got {type(action).__name__}"
            )
        w = self.world
        if w is None or self.done:
            raise EpisodeOverError(
                "episode is over; call reset()" if w else "call reset() first"
            )
        if type(action) is str:
            text, parsed = action, parse_action(action)
        else:  # the parser's Invalid keeps its text
            text, parsed = getattr(action, "text", None), action
        first = w.pending[0]  # the request being decided
        parts = new_parts()
        if isinstance(parsed, Invalid):
            code, reason = -1, "; ".join(parsed.errors)
        elif (reason := field_problem(parsed)) is not None:
            code = -1
        else:
            if not w.fused:
                w.clear_gave_up()
            code = w.try_step(*_fields(parsed), parts)  # judged, applied if allowed
            reason = "" if code == 0 else refusal(w, parsed, code)
        ok = code == 0
        self.last_action = parsed if ok else None
        if ok:
            ev = parsed.ev - 1 if isinstance(parsed, (Route, Defer)) else first
            if isinstance(parsed, LoadShift):
                self.kpis.load_shifts += 1
        else:  # an invalid answer fails the request being decided
            ev = first
            w.clear_gave_up()
            parts[P_INVALID] -= self.config.weights.invalid
            self.kpis.invalid += 1
            w.strand(ev, parts)
        if not w.pending and not w.finished:  # the clock's run (the fused one ran)
            w.advance(parts, self.kpis)
        self.steps += 1
        kpis = self.kpis
        kpis.steps += 1
        self.done = w.finished
        values = parts.tolist()
        reward = float(sum(values))  # the named parts' sum, in their order
        kpis.add_reward(reward, parts)
        self.last_info = {
            "valid": ok,
            "reason": reason,
            "action": text if text is not None else describe_action(parsed),
            "ev": ev + 1,
            "reward_parts": dict(zip(REWARD_KEYS, values)),  # noqa: B905  # both 13
            "tick": w.tick,
            "gave_up": [i + 1 for i in w.gave_up_now],  # out of patience, as it ran
        }
        return StepResult(reward, self.done, self.last_info)

    def validate(self, action: Action | Invalid | str) -> tuple[bool, str]:
        """Would ``step(action)`` accept it now? (ok, reason); reason is "" when ok.

        Changes nothing: what a manual composer or a reward function asks first.
        """
        if not isinstance(action, STEP_TYPES):
            raise TypeError(f"not an action: {type(action).__name__}")
        w = self.world
        if w is None:
            raise EpisodeOverError("call reset() first")
        return self._judge(
            w, parse_action(action) if isinstance(action, str) else action
        )

    @staticmethod
    def _judge(w: World, parsed: Action | Invalid) -> tuple[bool, str]:
        if isinstance(parsed, Invalid):
            return False, "; ".join(parsed.errors)
        return validate_action(w, parsed)

    # --- Views ------------------------------------------------------------------------
    @property
    def started(self) -> bool:
        """Whether ``reset`` has started an episode (it may have ended since)."""
        return self.world is not None

    @property
    def city(self) -> City:
        """The static city: stations, feeders, localities, roads (the same for
        every scenario and episode)."""
        return load_city()

    @property
    def tick(self) -> int:
        """The current tick of the episode (``n_ticks`` once it has ended)."""
        self._require()
        return self.world.tick  # type: ignore[union-attr]

    @property
    def request_id(self) -> int | None:
        """The id of the EV whose request is being decided (None when none is)."""
        self._require()
        pending = self.world.pending  # type: ignore[union-attr]
        return pending[0] + 1 if pending else None

    @property
    def network(self) -> NetworkState | None:
        """The network's state in the last tick (every bus's voltage, the OLTCs'
        taps, ...) under a network grid model; None under the feeder sum."""
        self._require()
        return self.world.grid_now.network  # type: ignore[union-attr]

    def observation(self) -> Observation:
        """What the agent sees now: the request to decide and the city around it."""
        self._require()
        return build_observation(self.world, self.done)  # type: ignore[arg-type]

    def features(self) -> tuple[np.ndarray, np.ndarray]:
        """The fixed-size RL view now (``features.py``): the observation vector
        (``OBS_SIZE`` float32) and the action mask (``N_ACTIONS`` bool), exactly what
        ``evgrid_gym.encode_observation`` and ``action_mask`` make of
        ``observation()`` (tested), in one compiled call without building it."""
        self._require()
        v, mask = np.empty(OBS_SIZE, dtype=np.float32), np.empty(N_ACTIONS, dtype=bool)
        self.world.encode(self.done, v, mask)  # type: ignore[union-attr]
        return v, mask

    def render_text(self) -> str:
        """The compact text observation an LLM reads (about 300 tokens)."""
        return render_text(self.observation(), self.config.obs_stations)

    def kpi_summary(self) -> dict[str, float]:
        """The episode's KPIs so far (final once ``done``)."""
        self._require()
        return self.kpis.summary()

    def state(self) -> dict[str, Any]:
        """The whole state as plain JSON-able data (for viewers, servers, logs)."""
        self._require()
        w = self.world
        assert w is not None and self.scenario is not None
        city, grid, fixed = w.tables.city, w.grid_now, w.evs
        evs = []
        for i in w.active_evs():
            evs.append(
                {
                    "id": i + 1,
                    "class": CLASS_NAMES[fixed.klass[i]],
                    "status": w.status_name(i),
                    "node": city.nodes[fixed.node[i]],
                    "soc": round(float(w.soc[i]), 4),
                    "target": float(fixed.target[i]),
                    "battery_kwh": float(fixed.battery_kwh[i]),
                    "critical": bool(fixed.critical[i]),
                    "station": int(w.station[i]) + 1 if w.station[i] >= 0 else None,
                    "kind": int(w.kind[i]) if w.kind[i] >= 0 else None,
                    "depart_minute": _minute(w.depart_minute[i]),
                    "arrive_minute": _minute(w.arrive_minute[i]),
                    "plug_minute": _minute(w.plug_minute[i]),
                    "request_minute": float(fixed.request_minute[i]),
                }
            )
        return {
            "scenario": self.scenario.name,
            "seed": self.seed,
            "tick": w.tick,
            "n_ticks": self.scenario.n_ticks,
            "minute": w.minute,
            "clock": w.clock(),
            "done": self.done,
            "steps": self.steps,
            "request": self.request_id,
            "pending": [i + 1 for i in w.pending],
            "tariff_inr": w.tariff_now(),
            "renewable_share": w.renewable_now(),
            "stations": [
                {
                    "id": st.id,
                    "name": st.name,
                    "feeder": st.feeder + 1,
                    "open": bool(w.station_open(s)),
                    "plugs": list(st.plugs),
                    "busy": w.busy[s].tolist(),
                    "queue": w.queue_len[s].tolist(),
                    "load_kw": round(float(w.station_kw[s]), 3),
                    "cap_kw": float(w.cap_kw(s)),
                    "load_shift_until_tick": int(w.shift_until[s])
                    if w.shift_until[s] > w.tick
                    else None,
                }
                for s, st in enumerate(city.stations)
            ],
            "feeders": [
                {
                    "id": f.id,
                    "name": f.name,
                    "capacity_kw": float(grid.capacity_kw[f.id - 1]),
                    "background_kw": round(float(grid.background_kw[f.id - 1]), 3),
                    "ev_kw": round(float(grid.ev_kw[f.id - 1]), 3),
                    "utilisation": round(float(grid.utilisation[f.id - 1]), 5),
                }
                for f in city.feeders
            ],
            "evs": evs,
            "kpis": self.kpis.summary(),
            "feeder_util_history": self.kpis.feeder_util_history,
        }

    def clone(self) -> EVGridEnv:
        """An independent copy (for look-ahead and counterfactual scoring)."""
        return copy.deepcopy(self)

    def _require(self) -> None:
        if self.world is None:
            raise EpisodeOverError("call reset() first")


def _fields(action: Action) -> tuple[int, int, int, int]:
    """A typed action (fields within the syntax) as ``World.try_step``'s numbers."""
    if type(action) is Route:
        return A_ROUTE, int(action.ev), int(action.station), int(action.kind)
    if type(action) is Defer:
        return A_DEFER, int(action.ev), int(action.minutes), 0
    return A_LOAD_SHIFT, int(action.station), int(action.cap_pct), int(action.minutes)  # type: ignore[union-attr]


def _minute(value: float) -> float | None:
    """A minute for JSON: None until the event has happened (never NaN)."""
    return None if value != value else float(value)
