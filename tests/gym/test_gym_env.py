"""The Gymnasium wrapper passes Gymnasium's own checker and plays full episodes."""

import numpy as np
import pytest

gym = pytest.importorskip("gymnasium")

from gymnasium.utils.env_checker import check_env  # noqa: E402

from evgrid_gym import N_ACTIONS, EVGridGymEnv, decode_action  # noqa: E402


def test_check_env_passes() -> None:
    check_env(EVGridGymEnv(), skip_render_check=True)


def test_masked_random_episode_and_same_seed_same_episode() -> None:
    def play(seed: int) -> list[float]:
        env = EVGridGymEnv(scenario="morning_peak")
        obs, info = env.reset(seed=seed)
        rng = np.random.default_rng(0)
        rewards, done = [], False
        while not done:
            assert env.observation_space.contains(obs)
            mask = info["action_mask"]
            assert mask.shape == (N_ACTIONS,) and mask.any()
            obs, r, done, truncated, info = env.step(
                int(rng.choice(np.flatnonzero(mask)))
            )
            assert info["valid"] and not truncated
            rewards.append(r)
        return rewards

    a, b = play(4), play(4)
    assert a == b and len(a) > 20


def test_decode_covers_every_action_kind() -> None:
    assert decode_action(0, 7).__class__.__name__ == "Route"
    assert decode_action(75, 7).__class__.__name__ == "Defer"
    assert decode_action(N_ACTIONS - 1, 7).__class__.__name__ == "LoadShift"
