"""The envs as RLlib wants them: the action mask beside the observation.

RLlib's action-masking module (``ActionMaskingTorchRLModule``) reads a ``Dict``
observation with ``"observations"`` and ``"action_mask"`` (float 0/1); these
wrappers give it that from the Gymnasium env and from the PettingZoo env, and
draw each episode's (scenario, seed) from the training seeds (below the held-out
900000) with the episode's own generator.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from evgrid_gym import EVGridGymEnv
from evgrid_gym.env import N_ACTIONS, OBS_HIGH, OBS_LOW, OBS_SIZE

HELDOUT_FIRST_SEED = 900_000  # evaluation seeds start here; training draws below


def _masked_space(obs_space: spaces.Box, n: int) -> spaces.Dict:
    return spaces.Dict(
        {
            "action_mask": spaces.Box(0.0, 1.0, shape=(n,), dtype=np.float32),
            "observations": obs_space,
        }
    )


class _TrainingEnv(gym.Env):
    """What the single-agent training envs share: each episode's (scenario, seed)
    drawn from the training seeds with the env's own generator, and the reward
    multiplied by ``reward_scale`` (the curves and evaluations report the env's own
    return). A subclass sets ``self.env`` and the spaces, and ``_out`` shapes the
    inner env's observation for RLlib."""

    def __init__(self, config: dict[str, Any] | None) -> None:
        config = dict(config or {})
        self.config = config
        self.scenarios = list(config.get("scenarios", ["evening_peak"]))
        self.reward_scale = float(config.get("reward_scale", 1.0))
        self._rng = np.random.default_rng(config.get("seed"))

    def reset(self, *, seed: int | None = None, options: dict | None = None):  # noqa: ANN201
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        scenario, ep_seed = draw_episode(self._rng, self.scenarios)
        obs, info = self.env.reset(seed=ep_seed, options={"scenario": scenario})
        return self._out(obs, info), {}

    def step(self, action: int):  # noqa: ANN201
        obs, reward, done, trunc, info = self.env.step(int(action))
        return self._out(obs, info), reward * self.reward_scale, done, trunc, {}

    def _out(self, obs: Any, info: dict[str, Any]) -> Any:
        return obs


class MaskedGymEnv(_TrainingEnv):
    """``EVGridGymEnv`` with ``{"observations", "action_mask"}`` observations."""

    def __init__(self, config: dict[str, Any] | None = None) -> None:
        super().__init__(config)
        self.env = EVGridGymEnv(self.scenarios[0])
        self.observation_space = _masked_space(
            spaces.Box(OBS_LOW, OBS_HIGH, shape=(OBS_SIZE,), dtype=np.float32),
            N_ACTIONS,
        )
        self.action_space = self.env.action_space

    def _out(self, obs: np.ndarray, info: dict[str, Any]) -> dict[str, np.ndarray]:
        m = info["action_mask"].astype(np.float32)
        if not m.any():  # the episode has ended: any index, never used
            m[0] = 1.0
        return {"action_mask": m, "observations": obs}


class CandidateRLlibEnv(_TrainingEnv):
    """``CandidateGymEnv`` for RLlib (``k`` rows, default all 82). With
    ``clock`` in the config, the observation also holds ``"minute"`` (the city's
    clock, [min] since the episode began) for the learner's discount per minute
    (``clock_gae``); the policy never reads it."""

    def __init__(self, config: dict[str, Any] | None = None) -> None:
        from evgrid_gym.candidate_env import K_DEFAULT, CandidateGymEnv

        super().__init__(config)
        k = int(self.config.get("k", K_DEFAULT))
        self.env = CandidateGymEnv(self.scenarios[0], k=k)
        self.clock = bool(self.config.get("clock", False))
        self.observation_space = self.env.observation_space
        if self.clock:
            self.observation_space = spaces.Dict(
                {**self.env.observation_space.spaces, "minute": CLOCK_SPACE}
            )
        self.action_space = self.env.action_space

    def _out(self, obs: dict[str, np.ndarray], info: dict[str, Any]) -> Any:
        if not self.clock:
            return obs
        minute = self.env.core.world.minute
        return {**obs, "minute": np.array([minute], dtype=np.float32)}


CLOCK_SPACE = spaces.Box(0.0, np.inf, shape=(1,), dtype=np.float32)  # [min]


def make_vector_env(config: dict[str, Any] | None = None):  # noqa: ANN201
    """The batched vector env as an RLlib env creator, for
    ``config.env_runners(num_envs_per_env_runner=N,
    gym_env_vectorize_mode="vector_entry_point")``: RLlib passes ``num_envs``;
    ``scenarios`` and ``threads`` come from the env config. One compiled call steps
    the runner's N envs (``evgrid_gym.EVGridVectorEnv``; masks in ``infos``)."""
    from evgrid_gym.vector import EVGridVectorEnv

    config = dict(config or {})
    return EVGridVectorEnv(
        int(config.get("num_envs", 1)),
        list(config.get("scenarios", ["evening_peak"])),
        threads=int(config.get("threads", 1)),
        seed_limit=HELDOUT_FIRST_SEED,  # never an evaluation seed
    )


def make_masked_vector_env(config: dict[str, Any] | None = None):  # noqa: ANN201
    """``make_vector_env`` with the masks in the observations, as RLlib's
    action-masking module reads them (``{"observations", "action_mask"}``), and the
    reward times ``reward_scale``: PPO on the flat index, sampled from the compiled
    batch (the ``cpu-flat`` preset)."""
    from gymnasium.vector import VectorEnv
    from gymnasium.vector.utils import batch_space

    inner = make_vector_env(config)
    scale = float(dict(config or {}).get("reward_scale", 1.0))

    class MaskedVectorEnv(VectorEnv):
        metadata = inner.metadata

        def __init__(self) -> None:
            self.num_envs = inner.num_envs
            self.single_observation_space = _masked_space(
                inner.single_observation_space, N_ACTIONS
            )
            self.single_action_space = inner.single_action_space
            self.observation_space = batch_space(
                self.single_observation_space, self.num_envs
            )
            self.action_space = inner.action_space

        def reset(self, *, seed: int | None = None, options: dict | None = None):  # noqa: ANN202
            obs, info = inner.reset(seed=seed, options=options)
            return self._wrap(obs, info["action_mask"]), info

        def step(self, actions: np.ndarray):  # noqa: ANN202
            obs, reward, term, trunc, info = inner.step(actions)
            return (
                self._wrap(obs, info["action_mask"]),
                reward * scale,
                term,
                trunc,
                info,
            )

        @staticmethod
        def _wrap(obs: np.ndarray, mask: np.ndarray) -> dict[str, np.ndarray]:
            m = mask.astype(np.float32)
            m[~m.any(axis=1), 0] = 1.0  # no valid action: any index (turned away)
            return {"action_mask": m, "observations": obs}

        def close_extras(self, **kwargs: Any) -> None:
            inner.close()

    return MaskedVectorEnv()


def draw_episode(rng: np.random.Generator, scenarios: list[str]) -> tuple[str, int]:
    """A training episode: a scenario of ``scenarios`` and a seed below the held-out ones."""
    scenario = scenarios[int(rng.integers(len(scenarios)))]
    return scenario, int(rng.integers(0, HELDOUT_FIRST_SEED))


def make_multi_agent_env(config: dict[str, Any] | None = None):  # noqa: ANN201
    """The PettingZoo env as an RLlib ``MultiAgentEnv`` (masks as float)."""
    from ray.rllib.env.multi_agent_env import MultiAgentEnv

    from evgrid_marl import EVGridParallelEnv

    class MaskedMultiAgentEnv(MultiAgentEnv):
        def __init__(self, config: dict[str, Any] | None = None) -> None:
            super().__init__()
            config = dict(config or {})
            self.scenarios = list(config.get("scenarios", ["evening_peak"]))
            self.par = EVGridParallelEnv(
                self.scenarios[0], roles=config.get("roles", "both")
            )
            self.agents = self.possible_agents = list(self.par.possible_agents)
            self.observation_spaces = {
                a: _masked_space(
                    self.par.observation_space(a)["observation"],
                    self.par.action_space(a).n,
                )
                for a in self.possible_agents
            }
            self.action_spaces = {
                a: self.par.action_space(a) for a in self.possible_agents
            }
            self._rng = np.random.default_rng(config.get("seed"))

        def reset(self, *, seed: int | None = None, options: dict | None = None):  # noqa: ANN201
            if seed is not None:
                self._rng = np.random.default_rng(seed)
            scenario, ep_seed = draw_episode(self._rng, self.scenarios)
            obs, _ = self.par.reset(seed=ep_seed, options={"scenario": scenario})
            return self._wrap(obs), {}

        def step(self, actions: dict[str, int]):  # noqa: ANN201
            obs, rew, term, trunc, _ = self.par.step(actions)
            done = all(term.values())
            term["__all__"], trunc["__all__"] = done, False
            return self._wrap(obs), rew, term, trunc, {}

        @staticmethod
        def _wrap(obs: dict[str, dict[str, np.ndarray]]) -> dict[str, dict]:
            return {
                a: {
                    "action_mask": o["action_mask"].astype(np.float32),
                    "observations": o["observation"],
                }
                for a, o in obs.items()
            }

    return MaskedMultiAgentEnv(config)
