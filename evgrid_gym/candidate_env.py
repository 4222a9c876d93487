"""The candidate interface: a request's valid answers as rows, and one pick among them.

``EVGridGymEnv`` asks a network to learn that index i of 300 means station i // 3
for every station separately. Here the observation is the request's candidates
(``evgrid_core.candidates``: each valid ROUTE and DEFER with its named features),
``K`` rows padded with a mask (``fixed_view``), and the action is ``Discrete(K)``:
which row to answer. One network scoring every row with the same weights learns
one rule for all stations. LOAD_SHIFT is not offered here: it is the station
operators' decision (the multi-agent env).

A request with no valid answer (its EV reaches no station and has no DEFER left)
is not a decision: the env answers it as every policy must (the EV is turned away)
and adds its reward to the step's, so every step the agent sees has a choice.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from evgrid_core import DEFAULT_SCENARIO, EVGridEnv, SimConfig
from evgrid_core.candidates import FEATURES, Candidates, candidates, fixed_view
from evgrid_core.features import N_DEFER, N_ROUTE, OBS_HIGH, OBS_LOW, OBS_SIZE
from evgrid_core.optional import require

from .env import reset_core

gym = require("gymnasium", "the Gymnasium wrapper", "gym")
spaces = require("gymnasium.spaces", "the Gymnasium wrapper", "gym")

K_DEFAULT = N_ROUTE + N_DEFER  # 82 rows: every ROUTE (25 x 3) and DEFER; none left out
N_FEATURES = len(FEATURES)


class CandidateGymEnv(gym.Env):
    """Gymnasium env over ``EVGridEnv`` with candidate rows as the observation:
    ``{"candidates": (K, F) float32, "action_mask": (K,) float32, "state":
    (OBS_SIZE,) float32}``, ``Discrete(K)``. ``state`` is the flat vector of the whole
    city (``EVGridEnv.features``), for a critic: what the rows do not show.
    Same seed, same episode as the core's. ``info["action"]`` is the typed action
    a step answered."""

    metadata = {"render_modes": ["ansi"]}

    def __init__(
        self,
        scenario: str = DEFAULT_SCENARIO,
        config: SimConfig | None = None,
        k: int = K_DEFAULT,
        render_mode: str | None = None,
    ) -> None:
        self.core = EVGridEnv(config)
        self.scenario = scenario
        self.k = k
        self.render_mode = render_mode
        self.action_space = spaces.Discrete(k)
        self.observation_space = spaces.Dict(
            {
                "action_mask": spaces.Box(0.0, 1.0, shape=(k,), dtype=np.float32),
                "candidates": spaces.Box(
                    -np.inf, np.inf, shape=(k, N_FEATURES), dtype=np.float32
                ),
                "state": spaces.Box(
                    OBS_LOW, OBS_HIGH, shape=(OBS_SIZE,), dtype=np.float32
                ),
            }
        )
        self._cands: Candidates | None = None
        self._carry = 0.0  # reward of forced answers before the first choice
        self._pick = np.full(k, -1, dtype=np.int64)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):  # noqa: ANN201
        super().reset(seed=seed)
        scenario, seed = reset_core(self, self.core, self.scenario, seed, options)
        self._carry = self._to_next_choice()  # paid with the first step's reward
        return self._obs(), {"scenario": scenario, "seed": seed}

    def step(self, action: int):  # noqa: ANN201
        if self._cands is None:
            raise RuntimeError("call reset() first (or the episode has ended)")
        i = int(action)
        if not 0 <= i < self.k or self._pick[i] < 0:
            raise ValueError(
                f"action {action}: not a candidate row (valid: "
                f"{np.flatnonzero(self._pick >= 0).tolist()})"
            )
        chosen = self._cands.actions[int(self._pick[i])]
        res = self.core.step(chosen)
        reward = (
            self._carry + res.reward + (0.0 if res.done else self._to_next_choice())
        )
        self._carry = 0.0
        done = self.core.done
        info = {**res.info, "action": chosen}
        if done:
            self._cands = None
        return self._obs(), reward, done, False, info

    def _to_next_choice(self) -> float:
        reward, self._cands = to_next_choice(self.core)
        return reward

    def _obs(self) -> dict[str, np.ndarray]:
        if self._cands is None:  # the episode has ended: one masked-in padding row
            rows = np.zeros((self.k, N_FEATURES), dtype=np.float32)
            mask = np.zeros(self.k, dtype=bool)
            mask[0] = True
            self._pick = np.full(self.k, -1, dtype=np.int64)
        else:
            rows, mask, self._pick = fixed_view(self._cands, self.k)
        state = self.core.features()[0]
        return {
            "action_mask": mask.astype(np.float32),
            "candidates": rows,
            "state": state,
        }

    def action_masks(self) -> np.ndarray:
        return self._pick >= 0

    def render(self) -> str | None:
        return self.core.render_text() if self.render_mode == "ansi" else None


def to_next_choice(core: EVGridEnv) -> tuple[float, Candidates | None]:
    """Answer the requests no action can serve (the EV is turned away, as under every
    policy) until one has a choice or the episode ends: their reward, and the
    candidates of the request with a choice (None: the episode has ended)."""
    reward = 0.0
    while not core.done:
        c = candidates(core.observation())
        if len(c):
            return reward, c
        reward += core.step("NO_STATION").reward
    return reward, None
