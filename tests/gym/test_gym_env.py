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


@pytest.mark.parametrize("grid", ["feeder_sum", "lindistflow"])
def test_the_compiled_view_is_the_observations_encoding(grid: str) -> None:
    """``EVGridEnv.features`` (one compiled call) = ``encode_observation`` and
    ``action_mask`` of the observation, at every step, under both kinds of grid
    model (the network one passes its own forecast in)."""
    from evgrid_core import SimConfig
    from evgrid_gym import action_mask, encode_observation

    env = EVGridGymEnv("feeder_fault", config=SimConfig(grid=grid))
    rng = np.random.default_rng(3)
    for seed in (1, 2):
        obs, info = env.reset(seed=seed)
        done = False
        while True:
            o = env.core.observation()
            assert np.array_equal(obs, encode_observation(o))
            assert np.array_equal(info["action_mask"], action_mask(o))
            if done:
                break
            mask = info["action_mask"]
            a = (
                int((rng.random(mask.shape) * mask).argmax())
                if rng.random() > 0.05
                else 0
            )
            obs, _, done, _, info = env.step(a)
