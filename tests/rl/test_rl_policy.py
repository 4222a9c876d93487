"""The learnt PPO policy: numpy's forward pass = RLlib's module, a registered policy."""

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("ray.rllib")
torch = pytest.importorskip("torch")

from evgrid_core.policies import make_policy, policy_names  # noqa: E402
from evgrid_core.rollout import play_episode  # noqa: E402
from evgrid_rl.envs import MaskedGymEnv  # noqa: E402
from evgrid_rl.export import export_actor  # noqa: E402
from evgrid_rl.policy import SHIPPED_WARM, SHIPPED_WEIGHTS, ActorMLP  # noqa: E402
from evgrid_rl.presets import PRESETS  # noqa: E402


def _module(hidden: tuple[int, ...]):  # noqa: ANN202
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec
    from ray.rllib.examples.rl_modules.classes.action_masking_rlm import (
        ActionMaskingTorchRLModule,
    )

    env = MaskedGymEnv()
    torch.manual_seed(0)
    return RLModuleSpec(
        module_class=ActionMaskingTorchRLModule,
        observation_space=env.observation_space,
        action_space=env.action_space,
        model_config={
            "fcnet_hiddens": list(hidden),
            "head_fcnet_hiddens": [],
            "vf_share_layers": False,
        },  # as build_config sets it
    ).build(), env


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, object, object]:
    module, env = _module(PRESETS["cpu-small"].hidden)
    path = tmp_path_factory.mktemp("ppo") / "w.npz"
    export_actor(module, path, {"test": True})
    return path, module, env


def test_numpy_logits_equal_rllib_module(exported) -> None:  # noqa: ANN001
    path, module, env = exported
    obs, _ = env.reset(seed=0)
    batch = np.stack([obs["observations"]] * 2)
    batch[1] = np.random.default_rng(1).uniform(-1, 1, batch.shape[1])
    with torch.no_grad():
        out = module.forward_inference(
            {"obs": {"observations": torch.tensor(batch),
                     "action_mask": torch.ones(2, env.action_space.n)}}
        )  # fmt: skip
    want = out["action_dist_inputs"].numpy()
    got = ActorMLP(path).logits(batch)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_registered_policy_plays_valid_episode(exported) -> None:  # noqa: ANN001
    path, _, _ = exported
    policy = make_policy("ppo", weights=path)
    env = play_episode(policy, "evening_peak", 900000)
    assert env.done and env.kpis.invalid == 0 and env.kpis.steps > 20
    again = play_episode(make_policy("ppo", weights=path), "evening_peak", 900000)
    assert again.kpis.total_return == env.kpis.total_return  # deterministic


@pytest.mark.parametrize(
    ("name", "path", "preset"),
    [("ppo", SHIPPED_WEIGHTS, "cpu-clock"), ("ppo_warm", SHIPPED_WARM, "cpu-warm")],
)
def test_ppo_is_a_registered_plugin(name: str, path: Path, preset: str) -> None:
    assert name in policy_names()  # through the evgrid.policies entry points
    if path.is_file():
        policy = make_policy(name)
        assert policy.name == name and policy.model.meta["preset"] == preset
        assert policy.k > 0  # the candidate interface
    else:
        with pytest.raises(FileNotFoundError, match=f"--preset {preset}"):
            make_policy(name)


@pytest.mark.parametrize("name", ["ppo", "ppo_warm", "mappo"])
def test_the_exported_rl_policies_keep_the_policy_contract(name: str) -> None:
    from evgrid_core import SCENARIOS, check_policy

    assert set(check_policy(name)) == set(SCENARIOS)
