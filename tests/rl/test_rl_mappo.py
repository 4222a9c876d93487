"""``mappo``: the multi-agent actors in the single-agent env play the parallel env's
episode, core step for core step; numpy's logits = RLlib's modules; registered."""

import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pettingzoo")

from evgrid_core.policies import make_policy, policy_names  # noqa: E402
from evgrid_core.rollout import play_episode  # noqa: E402
from evgrid_marl import (  # noqa: E402
    N_FLEET_ACTIONS,
    N_OPERATOR_ACTIONS,
    AgentView,
    EVGridParallelEnv,
    make_roster,
)
from evgrid_rl.mappo import SHIPPED_WEIGHTS, MAPPOPolicy  # noqa: E402

OBS = AgentView(make_roster("both")).size


def _random_weights(path: Path, seed: int, noop_bias: float = 0.0) -> Path:
    """A mappo file of random actors (the export's layout): the policy's mechanics
    without a training run. ``noop_bias`` lowers the operators' NOOP logit (so they
    shift often, and some shifts are refused: two per tick at most) or, negative,
    raises it (they never shift)."""
    rng = np.random.default_rng(seed)
    arrays = {}
    for mid, n_out in (("fleet", N_FLEET_ACTIONS), ("operator", N_OPERATOR_ACTIONS)):
        sizes = [OBS, 16, n_out]
        for i, (a, b) in enumerate(zip(sizes, sizes[1:], strict=False)):
            arrays[f"{mid}.W{i}"] = rng.normal(0, 0.5, (b, a)).astype(np.float32)
            arrays[f"{mid}.b{i}"] = rng.normal(0, 0.1, b).astype(np.float32)
        if mid == "operator":
            arrays[f"{mid}.b1"][0] -= noop_bias
    module_of = {a: a.split("_")[0] for a in make_roster("both").agents}
    arrays["meta"] = np.array(json.dumps({"module_of": module_of, "roles": "both"}))
    np.savez(path, **arrays)
    return path


def _parallel_episode(policy: MAPPOPolicy, scenario: str, seed: int):  # noqa: ANN202
    """The parallel env fed the policy's answers: its core steps (action, reward)."""
    env = EVGridParallelEnv(scenario)
    env.reset(seed=seed)
    steps = []
    while env.agents:
        _, _, _, _, infos = env.step(policy.decide(env.core.observation()))
        first = next(iter(infos.values()))
        steps += [(c["action"], c["reward"]) for c in first["core_steps"]]
    return steps


@pytest.mark.parametrize(
    ("scenario", "seed", "noop_bias"),
    [
        ("evening_peak", 900000, -50.0),  # operators always NOOP: fleets alone
        ("festival_surge", 900001, 3.0),  # operators shift often: some refused
    ],
)
def test_single_env_episode_is_the_parallel_envs(
    tmp_path: Path, scenario: str, seed: int, noop_bias: float
) -> None:
    path = _random_weights(tmp_path / "w.npz", seed, noop_bias)
    policy = make_policy("mappo", weights=path)
    single = []
    env = play_episode(
        policy,
        scenario,
        seed,
        on_step=lambda a, r: single.append((r.info["action"], r.reward)),
    )
    parallel = _parallel_episode(MAPPOPolicy(path), scenario, seed)
    assert single == parallel  # the same core actions and rewards, in order
    shifts = sum(a.startswith("LOAD_SHIFT") for a, _ in single)
    assert (shifts > 0) == (noop_bias > 0) and env.kpis.load_shifts == shifts
    again = play_episode(make_policy("mappo", weights=path), scenario, seed)
    assert again.kpis.total_return == env.kpis.total_return  # deterministic


def test_refused_shifts_are_dropped_not_paid(tmp_path: Path) -> None:
    # Every operator wants to shift at every request; the core allows two a tick:
    # the rest are dropped (never an invalid answer), as the parallel env drops them.
    path = _random_weights(tmp_path / "w.npz", 3, noop_bias=50.0)
    env = play_episode(MAPPOPolicy(path), "evening_peak", 900002)
    assert env.kpis.invalid == 0 and env.kpis.load_shifts > 0


def test_mappo_is_a_registered_plugin() -> None:
    assert "mappo" in policy_names()  # through the evgrid.policies entry points
    if SHIPPED_WEIGHTS.is_file():
        p = make_policy("mappo")
        assert p.meta["preset"] == "cpu-mappo" and p.rows  # the candidate interface
        assert set(p.actors) == {"fleet", "operator"}
        with np.load(SHIPPED_WEIGHTS, allow_pickle=False) as z:  # no pickles
            assert all(z[k].dtype != object for k in z.files)
    else:
        with pytest.raises(FileNotFoundError, match="evgrid_rl.train"):
            make_policy("mappo")


def test_numpy_logits_equal_rllib_modules(tmp_path: Path) -> None:
    pytest.importorskip("ray.rllib")
    torch = pytest.importorskip("torch")
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec
    from ray.rllib.examples.rl_modules.classes.action_masking_rlm import (
        ActionMaskingTorchRLModule,
    )

    from evgrid_rl.envs import make_multi_agent_env
    from evgrid_rl.export import export_actors
    from evgrid_rl.policy import ActorMLP
    from evgrid_rl.presets import PRESETS, modules_of

    env = make_multi_agent_env({})
    obs, _ = env.reset(seed=0)
    module_of = modules_of(PRESETS["cpu-marl-small"])
    torch.manual_seed(0)
    modules = {}
    for mid in ("fleet", "operator"):
        agent = next(a for a, m in module_of.items() if m == mid)
        modules[mid] = RLModuleSpec(
            module_class=ActionMaskingTorchRLModule,
            observation_space=env.observation_spaces[agent],
            action_space=env.action_spaces[agent],
            model_config={
                "fcnet_hiddens": list(PRESETS["cpu-marl-small"].hidden),
                "head_fcnet_hiddens": [],
                "vf_share_layers": False,
            },  # as build_config sets it
        ).build()
    path = tmp_path / "mappo.npz"
    export_actors(modules, module_of, path, {"test": True})
    for agent in ("fleet_car", "operator_F3"):
        mid, x = module_of[agent], obs[agent]["observations"][None]
        n = env.action_spaces[agent].n
        with torch.no_grad():
            out = modules[mid].forward_inference(
                {"obs": {"observations": torch.tensor(x),
                         "action_mask": torch.ones(1, n)}}
            )  # fmt: skip
        got = ActorMLP(path, prefix=f"{mid}.").logits(x)
        want = out["action_dist_inputs"].numpy()
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    assert MAPPOPolicy(path).module_of == module_of
