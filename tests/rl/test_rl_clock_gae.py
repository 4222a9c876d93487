"""The discount per minute of clock: GAE over uneven decisions, the clock in the
training env's observation, and the learner that uses it."""

from dataclasses import replace

import numpy as np
import pytest

pytest.importorskip("ray.rllib")

from ray.rllib.utils.postprocessing.value_predictions import (  # noqa: E402
    compute_value_targets,
)

from evgrid_gym.candidate_env import CandidateGymEnv  # noqa: E402
from evgrid_rl.clock_gae import step_discounts, value_targets  # noqa: E402
from evgrid_rl.envs import CandidateRLlibEnv  # noqa: E402
from evgrid_rl.presets import PRESETS  # noqa: E402
from evgrid_rl.warm_start import DEMO_FIRST_SEED, demonstrations  # noqa: E402


def test_an_even_clock_gives_rllib_own_targets() -> None:
    rng = np.random.default_rng(3)
    n = 40
    values, rewards = rng.normal(size=n), rng.normal(size=n)
    term, trunc = np.zeros(n), np.zeros(n)
    term[12], trunc[25], trunc[-1] = 1.0, 1.0, 1.0  # an end, a chunk cut, the tail
    want = compute_value_targets(values, rewards, term, trunc, 0.97, 0.9)
    got = value_targets(values, rewards, term, trunc, np.full(n, 0.97), 0.9)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_decisions_in_one_tick_are_not_discounted_against_each_other() -> None:
    minutes = np.array([0, 0, 0, 5, 15, 15, 100, 105], dtype=np.float32)
    d = step_discounts(minutes, [6, 2], 0.99)  # two episodes: 6 rows, then 2
    np.testing.assert_allclose(d, [1, 1, 0.99**5, 0.99**10, 1, 1, 0.99**5, 1])
    with pytest.raises(ValueError, match="backwards"):
        step_discounts(np.array([5.0, 0.0]), [2], 0.99)


def test_a_defer_is_discounted_by_the_minutes_it_waits_only() -> None:
    # the same rewards reached after one decision or after three in the same tick:
    # the same value at the start (per decision, the longer path would look cheaper)
    one = value_targets(np.zeros(2), np.array([0.0, -10.0]), np.zeros(2),
                        np.array([0.0, 1.0]), step_discounts(
                            np.array([0.0, 5.0]), [2], 0.99), 1.0)  # fmt: skip
    three = value_targets(np.zeros(4), np.array([0.0, 0.0, 0.0, -10.0]), np.zeros(4),
                          np.array([0.0, 0.0, 0.0, 1.0]), step_discounts(
                              np.array([0.0, 0.0, 0.0, 5.0]), [4], 0.99), 1.0)  # fmt: skip
    assert one[0] == pytest.approx(three[0]) == pytest.approx(-10 * 0.99**5)


def test_the_training_env_shows_the_core_clock() -> None:
    env = CandidateRLlibEnv({"scenarios": ["evening_peak"], "seed": 1, "clock": True})
    obs, _ = env.reset()
    assert env.observation_space.contains(obs)
    seen = [float(obs["minute"][0])]
    for _ in range(60):
        obs, _, done, _, _ = env.step(int(np.flatnonzero(obs["action_mask"])[0]))
        assert obs["minute"][0] == env.env.core.world.minute
        seen.append(float(obs["minute"][0]))
        if done:
            break
    assert seen[0] == 0.0 and seen[-1] > 0 and np.all(np.diff(seen) >= 0)
    plain = CandidateRLlibEnv({"scenarios": ["evening_peak"], "seed": 1})
    assert "minute" not in plain.reset()[0]


def test_warm_start_returns_discount_by_minutes() -> None:
    demos = demonstrations(("heatwave",), 1, 82, gamma=0.99, reward_scale=0.1,
                           clock=True)  # fmt: skip
    env = CandidateGymEnv("heatwave")
    env.reset(seed=DEMO_FIRST_SEED)
    rewards, minutes = [], []
    for target in demos["target"]:
        minutes.append(env.core.world.minute)
        _, r, done, _, _ = env.step(int(target))
        rewards.append(0.1 * r)
    assert done
    minutes.append(env.core.world.minute)
    want = [
        sum(0.99 ** (minutes[t + j] - minutes[t]) * x for j, x in
            enumerate(rewards[t:]))
        for t in range(len(rewards))
    ]  # fmt: skip
    np.testing.assert_allclose(demos["ret"], want, rtol=1e-4, atol=1e-4)


@pytest.mark.slow
def test_the_clock_preset_learner_uses_the_clock() -> None:
    import ray

    from evgrid_rl.train import build_config

    tiny = replace(PRESETS["cpu-clock"], batch_steps=200, minibatch=100, epochs=1,
                   num_envs=1, num_cpus=1, scenarios=("evening_peak",))  # fmt: skip
    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)
    try:
        algo = build_config(tiny).build_algo()
        names = [
            type(c).__name__
            for c in algo.learner_group._learner._learner_connector.connectors
        ]
        assert names[-1] == "ClockGAE" and "GeneralAdvantageEstimation" not in names
        stats = algo.train()
        assert np.isfinite(stats["learners"]["default_policy"]["vf_loss"])
        algo.stop()
    finally:
        ray.shutdown()
    with pytest.raises(ValueError, match="candidate envs only"):
        build_config(replace(PRESETS["cpu-small"], clock=True))


def test_every_preset_builds_and_the_clock_ones_discount_per_minute() -> None:
    from evgrid_rl.clock_gae import ClockPPOLearner
    from evgrid_rl.train import build_config

    for preset in PRESETS.values():
        config = build_config(preset)
        assert (config.learner_class is ClockPPOLearner) == preset.clock, preset.name
        if preset.clock:
            assert config.env_config["clock"] is True, preset.name
    assert PRESETS["cluster"].clock and PRESETS["cluster-marl"].env == "marl-candidates"
