"""Warm start: distilled's decisions as rows and targets, and a module taught them."""

import numpy as np
import pytest

pytest.importorskip("ray.rllib")
torch = pytest.importorskip("torch")

from evgrid_core import EVGridEnv  # noqa: E402
from evgrid_core.candidates import candidates, fixed_view  # noqa: E402
from evgrid_core.policies import make_policy  # noqa: E402
from evgrid_gym.candidate_env import K_DEFAULT, CandidateGymEnv  # noqa: E402
from evgrid_rl.candidate_module import CandidateScorerModule  # noqa: E402
from evgrid_rl.warm_start import DEMO_FIRST_SEED, demonstrations, fit  # noqa: E402


@pytest.fixture(scope="module")
def demos() -> dict[str, np.ndarray]:
    return demonstrations(("heatwave",), 3, K_DEFAULT, gamma=0.9, reward_scale=0.1)


def test_the_targets_are_distilled_own_answers(demos: dict[str, np.ndarray]) -> None:
    n = len(demos["target"])
    assert demos["rows"].shape == (n, K_DEFAULT, demos["rows"].shape[2])
    assert (demos["mask"][np.arange(n), demos["target"]] == 1.0).all()
    assert sorted(set(demos["episode"].tolist())) == [0, 1, 2]
    env, teacher = EVGridEnv(), make_policy("distilled")  # the first decision, by hand
    env.reset(seed=DEMO_FIRST_SEED, scenario="heatwave")
    obs = env.observation()
    c = candidates(obs)
    _, _, pick = fixed_view(c, K_DEFAULT)
    assert pick[demos["target"][0]] == c.actions.index(teacher.act(obs))


def test_returns_are_the_discounted_sums(demos: dict[str, np.ndarray]) -> None:
    ep0 = demos["episode"] == 0
    ret = demos["ret"][ep0]
    env = CandidateGymEnv("heatwave")
    env.reset(seed=DEMO_FIRST_SEED)
    rewards = []
    for target in demos["target"][ep0]:
        _, r, done, _, _ = env.step(int(target))
        rewards.append(0.1 * r)
    assert done
    want = [
        sum(0.9**j * x for j, x in enumerate(rewards[t:])) for t in range(len(rewards))
    ]
    np.testing.assert_allclose(ret, want, rtol=1e-4, atol=1e-4)


def test_fit_teaches_the_module_the_teacher_choice(
    demos: dict[str, np.ndarray],
) -> None:
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec

    space = CandidateGymEnv().observation_space
    torch.manual_seed(0)
    module = RLModuleSpec(
        module_class=CandidateScorerModule,
        observation_space=space,
        action_space=CandidateGymEnv().action_space,
        model_config={"hidden": [32, 32]},
    ).build()
    before = fit(module, demos, epochs=0)
    after = fit(module, demos, epochs=15, lr=3e-3)
    assert after["bc_agreement"] > max(before["bc_agreement"], 0.5)
    assert after["bc_value_rmse"] < before["bc_value_rmse"]
