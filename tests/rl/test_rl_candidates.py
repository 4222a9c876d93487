"""The candidate scorer: RLlib's module, its numpy export, the registered policy."""

import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("ray.rllib")
torch = pytest.importorskip("torch")

from evgrid_core.candidates import candidates, fixed_view  # noqa: E402
from evgrid_core.policies import make_policy  # noqa: E402
from evgrid_core.rollout import play_episode  # noqa: E402
from evgrid_gym.candidate_env import K_DEFAULT, CandidateGymEnv  # noqa: E402
from evgrid_rl.candidate_module import CandidateScorerModule, export_arrays  # noqa: E402
from evgrid_rl.policy import ActorMLP  # noqa: E402


@pytest.fixture(scope="module")
def module_and_obs():  # noqa: ANN201
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec

    env = CandidateGymEnv("festival_surge")
    torch.manual_seed(0)
    module = RLModuleSpec(
        module_class=CandidateScorerModule,
        observation_space=env.observation_space,
        action_space=env.action_space,
        model_config={"hidden": [32, 16]},
    ).build()
    obs = []
    o, _ = env.reset(seed=5)
    for i in range(30):
        obs.append(o)
        o, *_ = env.step(
            int(np.flatnonzero(o["action_mask"])[i % 3 % int(o["action_mask"].sum())])
        )
    batch = {k: torch.tensor(np.stack([x[k] for x in obs])) for k in obs[0]}
    return module, batch


@pytest.fixture(scope="module")
def exported(module_and_obs, tmp_path_factory: pytest.TempPathFactory) -> Path:  # noqa: ANN001
    module, _ = module_and_obs
    path = tmp_path_factory.mktemp("ppo") / "ppo.npz"
    arrays = export_arrays(module)
    arrays["meta"] = np.array(json.dumps({"preset": "test", "k": K_DEFAULT}))
    np.savez_compressed(path, **arrays)
    return path


def test_numpy_scores_equal_the_module_logits(module_and_obs, exported) -> None:  # noqa: ANN001
    module, batch = module_and_obs
    with torch.no_grad():
        want = module.forward_inference({"obs": batch})["action_dist_inputs"].numpy()
    actor = ActorMLP(exported, prefix="pi.")
    for i in range(len(want)):
        valid = batch["action_mask"][i].numpy() > 0.5
        got = actor.logits(batch["candidates"][i].numpy()[valid])[:, 0]
        np.testing.assert_allclose(got, want[i][valid], rtol=1e-4, atol=1e-5)
        assert (want[i][~valid] < -1e30).all()  # padding never sampled


def test_scores_and_value_do_not_depend_on_row_order(module_and_obs) -> None:  # noqa: ANN001
    module, batch = module_and_obs
    perm = torch.tensor(np.random.default_rng(0).permutation(K_DEFAULT))
    shuffled = {k: v[:, perm] if k != "state" else v for k, v in batch.items()}
    with torch.no_grad():
        a = module.forward_inference({"obs": batch})["action_dist_inputs"]
        b = module.forward_inference({"obs": shuffled})["action_dist_inputs"]
        torch.testing.assert_close(a[:, perm], b)
        va = module.compute_values({"obs": batch})
        vb = module.compute_values({"obs": shuffled})
    torch.testing.assert_close(va, vb, rtol=1e-5, atol=1e-6)
    assert va.shape == (len(batch["action_mask"]),)


def test_the_policy_answers_its_best_scored_candidate(exported) -> None:  # noqa: ANN001
    policy = make_policy("ppo", weights=exported)
    env = play_episode(policy, "evening_peak", 900001)
    assert env.done and env.kpis.invalid == 0 and env.kpis.steps > 20
    again = play_episode(make_policy("ppo", weights=exported), "evening_peak", 900001)
    assert again.kpis.total_return == env.kpis.total_return  # deterministic
    from evgrid_core import EVGridEnv

    core = EVGridEnv()
    core.reset(seed=2, scenario="heatwave")
    obs = core.observation()
    c = candidates(obs)
    rows, mask, pick = fixed_view(c, K_DEFAULT)
    scores = ActorMLP(exported, prefix="pi.").logits(rows[mask])[:, 0]
    assert policy.act(obs) == c.actions[int(pick[int(np.argmax(scores))])]


def test_weights_without_k_are_refused(tmp_path: Path, module_and_obs) -> None:  # noqa: ANN001
    module, _ = module_and_obs
    path = tmp_path / "w.npz"
    np.savez_compressed(path, **export_arrays(module), meta=np.array("{}"))
    with pytest.raises(ValueError, match="meta\\['k'\\]"):
        make_policy("ppo", weights=path)
