"""The OpenEnv ``Environment`` around ``EVGridEnv``: translation only, no world rules.

One instance per WebSocket session. Bad input raises ``EVGridRequestError`` with a
message that names the problem; the server turns it into an error reply (a 4xx
over HTTP, an error frame over /ws) and the session's episode is left as it was.
"""

from __future__ import annotations

import secrets
from typing import Any
from uuid import uuid4

from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import EnvironmentMetadata
from pydantic import ValidationError

from evgrid_core import (
    DEFAULT_SCENARIO,
    SCENARIOS,
    EpisodeOverError,
    EVGridEnv,
    SimConfig,
    action_contract,
)
from evgrid_core.actions import MAX_ACTION_CHARS
from evgrid_core.observation import Observation as CoreObservation
from evgrid_core.observation import render_text

from .fast import unvalidated
from .models import (
    EVGridAction,
    EVGridObservation,
    EVGridResetParams,
    EVGridState,
    EVRequestView,
    GridView,
    RewardParts,
)

ENV_NAME = "evgrid"
ENV_VERSION = "0.1.0"


class EVGridRequestError(ValueError):
    """A request the session cannot serve; ``status`` is its HTTP status code."""

    def __init__(self, message: str, status: int = 422) -> None:
        super().__init__(message)
        self.status = status


def describe_errors(exc: ValidationError) -> str:
    """A pydantic error as one readable line: 'field: problem; field: problem'."""
    parts = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err.get("loc", ())) or "payload"
        parts.append(f"{loc}: {err.get('msg', 'invalid')}")
    return "; ".join(parts)


class EVGridEnvironment(Environment[EVGridAction, EVGridObservation, EVGridState]):
    """Bengaluru EV-charging dispatch as an OpenEnv environment."""

    SUPPORTS_CONCURRENT_SESSIONS = True  # every instance owns its own EVGridEnv

    def __init__(self, config: SimConfig | None = None) -> None:
        super().__init__()
        self._env = EVGridEnv(config)
        self._episode_id: str | None = None

    # --- Episode ----------------------------------------------------------------------
    def reset(
        self,
        seed: int | None = None,
        episode_id: str | None = None,
        **kwargs: Any,
    ) -> EVGridObservation:
        """Start an episode: ``seed`` (None = random), ``scenario`` (None = default)."""
        try:
            params = EVGridResetParams(seed=seed, episode_id=episode_id, **kwargs)
        except ValidationError as e:
            raise EVGridRequestError(f"bad reset: {describe_errors(e)}") from None
        scenario = params.scenario or DEFAULT_SCENARIO
        seed = params.seed if params.seed is not None else secrets.randbelow(2**31)
        try:  # the core checks seed and scenario before touching the episode
            self._env.reset(seed=seed, scenario=scenario)
        except ValueError as e:
            raise EVGridRequestError(str(e)) from None
        self._episode_id = params.episode_id or str(uuid4())
        return self._observation(None, None)

    def step(
        self,
        action: EVGridAction,
        timeout_s: float | None = None,
        **kwargs: Any,
    ) -> EVGridObservation:
        """Apply one decision; the core parses and judges it."""
        if not isinstance(action, EVGridAction):
            raise EVGridRequestError(
                f"expected an EVGridAction, got {type(action).__name__}"
            )
        if not self._env.started:
            raise EVGridRequestError(
                "no episode: send reset first (HTTP POST /step is stateless; "
                "play episodes over the /ws WebSocket session)",
                status=409,
            )
        if self._env.done:
            raise EVGridRequestError(
                f"the episode is over (after {self._env.steps} steps); send reset "
                "to start another",
                status=409,
            )
        try:
            result = self._env.step(action.to_line())
        except EpisodeOverError as e:  # guarded above; kept for safety
            raise EVGridRequestError(str(e), status=409) from None
        return self._observation(result.reward, result.info)

    # OpenEnv runs these on the server's event loop instead of a worker thread per
    # session. A step is well under a millisecond of pure Python; with 64 sessions,
    # worker threads convoying on the GIL (5 ms switch interval) made each step about
    # ten times slower than its work (bench/server_load.py).
    async def reset_async(
        self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any
    ) -> EVGridObservation:
        return self.reset(seed=seed, episode_id=episode_id, **kwargs)

    async def step_async(
        self, action: EVGridAction, timeout_s: float | None = None, **kwargs: Any
    ) -> EVGridObservation:
        return self.step(action, timeout_s=timeout_s, **kwargs)

    @property
    def state(self) -> EVGridState:
        """Scenario, seed, progress, KPIs so far and the whole world state."""
        env = self._env
        if not env.started:
            return EVGridState(episode_id=None, step_count=0)
        world = env.state()
        return EVGridState(
            episode_id=self._episode_id,
            step_count=env.steps,
            scenario=world["scenario"],
            seed=world["seed"],
            done=env.done,
            tick=world["tick"],
            n_ticks=world["n_ticks"],
            clock=world["clock"],
            kpis=world["kpis"],
            world=world,
        )

    def get_metadata(self) -> EnvironmentMetadata:
        scenarios = "; ".join(f"{s.name}: {s.title}" for s in SCENARIOS.values())
        return EnvironmentMetadata(
            name=ENV_NAME,
            description=(
                "EV Grid Oracle: route arriving EVs to Bengaluru charging stations "
                "without overloading BESCOM 11 kV feeders. One decision per step, "
                "as one text line:\n" + action_contract() + "\nScenarios: " + scenarios
            ),
            version=ENV_VERSION,
            author="EV Grid Oracle",
        )

    # --- Translation ------------------------------------------------------------------
    def _observation(
        self, reward: float | None, info: dict[str, Any] | None
    ) -> EVGridObservation:
        # Built without validation: every value comes typed from the core, and
        # validating the observation again cost more than building it (tests check
        # that pydantic's validation gives back exactly this object).
        env = self._env
        core = env.observation()
        info = info or {}
        parts = info.get("reward_parts")  # none after reset: every part 0
        parts = (
            RewardParts() if parts is None else unvalidated(RewardParts, dict(parts))
        )
        return unvalidated(
            EVGridObservation,
            {
                "done": env.done,
                "reward": reward,
                "metadata": {},
                "prompt": render_text(core, env.config.obs_stations),  # as the core's
                "grid": grid_view(core),
                "reward_parts": parts,
                "valid": info.get("valid"),
                "reason": info.get("reason", ""),
                "action": read_line(info.get("action")),
                "ev": info.get("ev"),
                "tick": core.tick,
            },
        )


def read_line(action: str | None) -> str | None:
    """The action as the parser read it, for the echo: stripped, at most one line's worth.

    The core keeps the text it was given; a valid line is never longer than
    MAX_ACTION_CHARS, so a longer one is cut there and marked, never echoed whole.
    """
    if action is None:
        return None
    line = action.strip()
    return line if len(line) <= MAX_ACTION_CHARS else line[:MAX_ACTION_CHARS] + "…"


def grid_view(obs: CoreObservation) -> GridView:
    """The core's observation as plain JSON-able data.

    Not validated: every value comes straight from the core, and validating some
    500 numbers on every step cost more than building them. The lists are the
    core's ``Observation.lists``, built for this observation.
    """
    r, a = obs.request, obs.lists
    request = None if r is None else unvalidated(EVRequestView, dict(r.__dict__))
    return unvalidated(
        GridView,
        {  # in GridView's field order: the JSON is written in this order
            "tick": obs.tick,
            "n_ticks": obs.n_ticks,
            "clock": obs.clock,
            "tariff_inr": float(obs.tariff_inr),
            "renewable_share": float(obs.renewable_share),
            "request": request,
            "pending": obs.pending,
            "travel_min": a["travel_min"],
            "road_km": a["road_km"],
            "route_mask": a["route_mask"],
            "defer_options": list(obs.defer_options),
            "plugs": a["plugs"],
            "busy": a["busy"],
            "queue": a["queue"],
            "inbound": a["inbound"],
            "inbound_kw": a["inbound_kw"],
            "open": a["open"],
            "cap_kw": a["cap_kw"],
            "station_kw": a["station_kw"],
            "shifted": a["shifted"],
            "feeder_of": a["feeder_of"],
            "feeder_util": a["feeder_util"],
            "feeder_capacity_kw": a["feeder_capacity_kw"],
            "feeder_forecast": a["feeder_forecast"],
            "feeder_shed_kw": a["feeder_shed_kw"],
            "load_shifts_left": obs.load_shifts_left,
            "station_names": a["station_names"],
            "feeder_min_voltage_pu": a["feeder_min_voltage_pu"],
            "station_transformer_loading": a["station_transformer_loading"],
        },
    )
