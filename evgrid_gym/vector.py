"""The batched vector env: ``EVGridVectorEnv(num_envs)``, a Gymnasium ``VectorEnv``.

All ``num_envs`` episodes step in one compiled call (``evgrid_core.batch.Batch``):
the same observation vectors, action indices, masks and rewards as ``num_envs``
copies of ``EVGridGymEnv``, bit for bit, without a Python loop over the envs.

- ``reset(seed=s)``: env i plays seed s + i; its k-th episode seed s + k * n + i
  (modulo ``seed_limit``, if given: training stays below the held-out seeds).
- ``step(actions)``: ``(obs, rewards, terminations, truncations, infos)``; an episode
  that ends restarts in the same step (``autoreset_mode`` SAME_STEP: the row holds
  the next episode's first observation; an episode ends only by termination, so
  no final observation is needed to bootstrap).
- ``infos["action_mask"]`` (num_envs, N_ACTIONS) bool, also ``action_masks()``;
  for the envs whose episode ended: ``infos["episode"]`` with ``r`` (return),
  ``l`` (decisions), ``served``, ``gave_up``, ``stranded``, ``invalid``,
  ``overload_min`` (feeder-minutes over a limit), and ``infos["_episode"]`` (which
  envs ended): Gymnasium's vector-info convention, as ``RecordEpisodeStatistics``.
- RLlib: ``evgrid_rl.envs.make_vector_env`` is an env creator for
  ``gym_env_vectorize_mode="vector_entry_point"`` (one batch per EnvRunner).
- ``threads``: slices of the batch stepped at once on that many cores.

Text observations are not built here (``EVGridEnv`` builds them on demand).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from evgrid_core import DEFAULT_SCENARIO, SimConfig
from evgrid_core.batch import Batch
from evgrid_core.features import N_ACTIONS, OBS_HIGH, OBS_LOW, OBS_SIZE

EPISODE_KEYS = (("r", "return"), ("l", "steps"), ("served", "evs_served"),
                ("gave_up", "gave_up"), ("stranded", "stranded"),
                ("invalid", "invalid"), ("overload_min", "overload_ticks"))  # fmt: skip


class EVGridVectorEnv(VectorEnv):
    """``num_envs`` EV-grid episodes as one Gymnasium vector env."""

    metadata = {"autoreset_mode": AutoresetMode.SAME_STEP, "render_modes": []}

    def __init__(
        self,
        num_envs: int = 16,
        scenarios: str | list[str] = DEFAULT_SCENARIO,
        *,
        config: SimConfig | None = None,
        threads: int = 1,
        seed_limit: int | None = None,
    ) -> None:
        self.batch = Batch(num_envs, scenarios, config=config, threads=threads,
                           seed_limit=seed_limit)  # fmt: skip
        self.num_envs = num_envs
        self.single_observation_space = spaces.Box(
            OBS_LOW, OBS_HIGH, shape=(OBS_SIZE,), dtype=np.float32
        )
        self.single_action_space = spaces.Discrete(N_ACTIONS)
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.action_space = batch_space(self.single_action_space, num_envs)
        self._tick_minutes = self.batch.config.tick_minutes

    def reset(self, *, seed: int | None = None, options: dict | None = None):  # noqa: ANN201
        if options:
            raise ValueError(
                f"EVGridVectorEnv.reset takes no options, got {sorted(options)}: "
                "choose the scenarios when building it"
            )
        if seed is None:
            seed = int(np.random.SeedSequence().generate_state(1)[0] >> 1)
            if self.batch.seed_limit is not None:
                seed %= self.batch.seed_limit
        obs, mask = self.batch.reset(int(seed))
        return obs.copy(), {"action_mask": mask.copy()}

    def step(self, actions: np.ndarray):  # noqa: ANN201
        obs, reward, done, mask = self.batch.step(np.asarray(actions))
        infos: dict[str, Any] = {"action_mask": mask.copy()}
        if self.batch.finished:
            infos["episode"], infos["_episode"] = self._episodes()
        n = self.num_envs
        return obs.copy(), reward.copy(), done.copy(), np.zeros(n, dtype=bool), infos

    def _episodes(self) -> tuple[dict[str, np.ndarray], np.ndarray]:
        """The ended episodes' numbers, and which envs ended (Gymnasium's ``_`` keys:
        ``RecordEpisodeStatistics``' layout, which ``DictInfoToList`` splits)."""
        n = self.num_envs
        out = {key: np.zeros(n) for key, _ in EPISODE_KEYS}
        ended = np.zeros(n, dtype=bool)
        for ep in self.batch.finished:
            i = ep["env"]
            ended[i] = True
            for key, name in EPISODE_KEYS:
                out[key][i] = ep[name]
            out["overload_min"][i] *= self._tick_minutes
        for key, _ in EPISODE_KEYS:
            out["_" + key] = ended
        return out, ended

    def action_masks(self) -> np.ndarray:
        """(num_envs, N_ACTIONS) bool: the valid actions of each env now."""
        return self.batch.mask.copy()

    def close_extras(self, **kwargs: Any) -> None:
        self.batch.close()
