"""RLlib samples from the batched vector env through its vector entry point."""

import numpy as np
import pytest

pytest.importorskip("ray.rllib")

from ray.rllib.algorithms.ppo import PPOConfig  # noqa: E402
from ray.rllib.env.single_agent_env_runner import SingleAgentEnvRunner  # noqa: E402

from evgrid_core.features import N_ACTIONS, OBS_SIZE  # noqa: E402
from evgrid_rl.envs import HELDOUT_FIRST_SEED, make_vector_env  # noqa: E402


def test_an_env_runner_samples_the_batch_as_one_vector_env() -> None:
    config = (
        PPOConfig()
        .environment(make_vector_env, env_config={"scenarios": ["evening_peak"]})
        .env_runners(
            num_env_runners=0,
            num_envs_per_env_runner=8,
            gym_env_vectorize_mode="vector_entry_point",
        )  # fmt: skip
    )
    runner = SingleAgentEnvRunner(config=config)
    try:
        batch = runner.env.unwrapped.batch  # RLlib holds our batch, not 8 copies
        assert batch.n == 8
        assert batch.seed_limit == HELDOUT_FIRST_SEED  # never an evaluation seed
        episodes = runner.sample(num_timesteps=400, random_actions=True)
        steps = sum(len(e) for e in episodes)
        assert steps >= 400
        obs = np.concatenate([e.get_observations() for e in episodes])
        assert obs.shape[1] == OBS_SIZE and obs.dtype == np.float32
        actions = np.concatenate([e.get_actions() for e in episodes])
        assert actions.min() >= 0 and actions.max() < N_ACTIONS
        assert batch.counts[:, 0].sum() > 0  # the compiled batch did the stepping
    finally:
        runner.stop()
