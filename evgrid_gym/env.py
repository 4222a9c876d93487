"""The Gymnasium wrapper over the core, for SB3 / RLlib users.

Its own package so the core stays pure: ``from evgrid_gym import EVGridGymEnv``
needs gymnasium (the ``gym`` extra); ``import evgrid_core`` never loads it.

Actions are one ``Discrete`` index: ROUTE (station x kind), then DEFER (minutes),
then LOAD_SHIFT (station x cap x minutes). ``action_masks()`` (the MaskablePPO
convention) and ``info["action_mask"]`` say which are valid now.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from evgrid_core import (
    DEFAULT_SCENARIO,
    DEFER_MINUTES,
    ChargerKind,
    Defer,
    EVGridEnv,
    LoadShift,
    Observation,
    Route,
    SimConfig,
)
from evgrid_core.city import N_STATIONS
from evgrid_core.features import (
    N_ACTIONS,
    N_DEFER,
    N_FEEDERS,
    N_ROUTE,
    N_SHIFT,
    OBS_HIGH,
    OBS_LOW,
    OBS_SIZE,
    PER_STATION,
    SHIFTS_PER_STATION,
    decode_index,
    shift_numbers,
)
from evgrid_core.judge import A_DEFER, A_ROUTE
from evgrid_core.optional import require

gym = require("gymnasium", "the Gymnasium wrapper", "gym")
spaces = require("gymnasium.spaces", "the Gymnasium wrapper", "gym")

__all__ = ["N_ACTIONS", "N_DEFER", "N_FEEDERS", "N_ROUTE", "N_SHIFT", "OBS_HIGH",
           "OBS_LOW", "OBS_SIZE", "EVGridGymEnv", "action_mask", "decode_action",
           "encode_observation"]  # fmt: skip


def decode_action(index: int, ev: int) -> Route | Defer | LoadShift:
    """Discrete index -> typed action for request ``ev`` (``features.decode_index``)."""
    what, x, y = decode_index(int(index))
    if what == A_ROUTE:
        return Route(ev, x, ChargerKind(y))
    if what == A_DEFER:
        return Defer(ev, x)
    cap, minutes = shift_numbers(y)
    return LoadShift(x, cap, minutes)


def encode_observation(obs: Observation) -> np.ndarray:
    """A fixed-size float32 vector of everything in the observation."""
    v = np.zeros(OBS_SIZE, dtype=np.float32)
    hour = int(obs.clock[:2]) * 60 + int(obs.clock[3:])
    v[:6] = (obs.tick / obs.n_ticks, hour / 1440, obs.tariff_inr / 10, obs.renewable_share,
             obs.pending / 10, obs.load_shifts_left / 2)  # fmt: skip
    r = obs.request
    if r is not None:
        v[6:17] = (r.battery_kwh / 60, r.soc, r.target, r.max_ac_kw / 10, r.max_dc_kw / 150,
                   r.range_km / 300, r.waited_min / 120, r.defers / 3, float(r.critical),
                   (r.deadline_in_min or 0.0) / 60, r.patience_left_min / 120)  # fmt: skip
    free = (obs.plugs - obs.busy) / 16
    per_station = np.column_stack(
        [
            obs.travel_min / 90,
            free,
            obs.queue / 10,
            obs.open,
            obs.shifted,
            obs.feeder_util[obs.feeder_of],
        ]
    )
    o = 17
    v[o : o + N_STATIONS * PER_STATION] = per_station.ravel()
    o += N_STATIONS * PER_STATION
    v[o : o + N_FEEDERS * 2] = np.column_stack(
        [obs.feeder_util, obs.feeder_forecast]
    ).ravel()
    o += N_FEEDERS * 2
    v[o:] = obs.route_mask.ravel()
    return np.clip(v, OBS_LOW, OBS_HIGH, out=v)


def action_mask(obs: Observation) -> np.ndarray:
    """(N_ACTIONS,) bool: the valid discrete actions now."""
    m = np.zeros(N_ACTIONS, dtype=bool)
    if obs.request is None:
        return m
    m[:N_ROUTE] = obs.route_mask.ravel()
    m[N_ROUTE : N_ROUTE + N_DEFER] = [d in obs.defer_options for d in DEFER_MINUTES]
    if obs.load_shifts_left > 0:
        m[N_ROUTE + N_DEFER :] = np.repeat(~obs.shifted, SHIFTS_PER_STATION)
    return m


def reset_core(
    env: gym.Env,
    core: EVGridEnv,
    scenario: str,
    seed: int | None,
    options: dict[str, Any] | None,
) -> tuple[str, int]:
    """Start ``core``'s episode as a Gymnasium env over it resets (after its
    ``super().reset(seed=seed)``): no seed draws one from ``env.np_random``, the
    ``"scenario"`` option overrides ``scenario``. Returns (scenario, seed)."""
    if seed is None:
        seed = int(env.np_random.integers(0, 2**31 - 1))
    scenario = (options or {}).get("scenario", scenario)
    core.reset(seed=seed, scenario=scenario)
    return scenario, seed


class EVGridGymEnv(gym.Env):
    """Gymnasium view of ``EVGridEnv``; same seed, same episode. Its vector and mask
    come from the core's compiled ``features`` (equal to ``encode_observation`` and
    ``action_mask`` of the observation, tested at every step)."""

    metadata = {"render_modes": ["ansi"]}

    def __init__(
        self,
        scenario: str = DEFAULT_SCENARIO,
        config: SimConfig | None = None,
        render_mode: str | None = None,
    ) -> None:
        self.core = EVGridEnv(config)
        self.scenario = scenario
        self.render_mode = render_mode
        self.action_space = spaces.Discrete(N_ACTIONS)
        self.observation_space = spaces.Box(
            OBS_LOW, OBS_HIGH, shape=(OBS_SIZE,), dtype=np.float32
        )
        self._mask: np.ndarray | None = None

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):  # noqa: ANN201
        super().reset(seed=seed)
        reset_core(self, self.core, self.scenario, seed, options)
        obs, self._mask = self.core.features()  # = encode_observation, action_mask
        return obs, {"action_mask": self._mask.copy()}

    def step(self, action: int):  # noqa: ANN201
        ev = self.core.request_id if self._mask is not None else None
        assert ev is not None, "call reset() first"
        res = self.core.step(decode_action(action, ev))
        obs, self._mask = self.core.features()
        info = {**res.info, "action_mask": self._mask.copy()}
        return obs, res.reward, res.done, False, info

    def action_masks(self) -> np.ndarray:
        assert self._mask is not None, "call reset() first"
        return self._mask.copy()

    def render(self) -> str | None:
        return self.core.render_text() if self.render_mode == "ansi" else None
