"""RLlib PPO on the envs: ``python3 -m evgrid_rl.train --preset cpu-small``.

Presets (``PRESETS``): ``cpu-small`` (single-agent PPO with action masking on the
Gymnasium env; minutes on 1 CPU), ``cpu-marl-small`` (multi-agent PPO on the
PettingZoo env, one policy shared by the fleets and one by the operators, or one
per agent with ``--policies separate``), and ``cluster`` / ``cluster-marl`` (the
same, sized for a Ray cluster: many env runners, large batches). Each run writes
``curve.csv`` and ``curve.png`` (mean episode return per iteration) and the
actors' weights as plain numpy arrays: ``ppo_gym.npz`` (single agent) for the
``ppo`` policy (``evgrid_rl.policy``), ``mappo.npz`` (multi-agent: one actor per
module) for the ``mappo`` policy (``evgrid_rl.mappo``); neither needs torch.
"""

from __future__ import annotations

import argparse
import csv
import json
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Preset:
    name: str
    env: str  # "gym" (single agent) | "marl" (PettingZoo)
    iterations: int
    batch_steps: int  # [env steps] per training iteration
    minibatch: int  # [env steps]
    epochs: int  # passes over each batch
    hidden: tuple[int, ...]  # the actor's (and critic's) MLP widths
    lr: float = 3e-4
    entropy_coeff: float = 0.01
    gamma: float = 0.99
    env_runners: int = 0  # 0: sample in the driver
    num_cpus: int = 1  # [CPU] local Ray's size (None on a cluster)
    policies: str = "shared"  # marl: "shared" (one per role) | "separate" (per agent)
    scenarios: tuple[str, ...] = ("evening_peak",)
    seed: int = 0
    notes: str = field(default="", compare=False)


PRESETS: dict[str, Preset] = {
    p.name: p
    for p in (
        Preset("cpu-small", "gym", iterations=12, batch_steps=1000, minibatch=250,
               epochs=4, hidden=(64, 64),
               notes="one CPU, 12k env steps (~40 episodes): a smoke of the loop, "
                     "too small to expect learning"),
        Preset("cpu-marl-small", "marl", iterations=8, batch_steps=1000, minibatch=250,
               epochs=4, hidden=(64, 64),
               notes="one CPU, ~8k parallel steps: shows the multi-agent loop runs"),
        Preset("cluster", "gym", iterations=500, batch_steps=64000, minibatch=4096,
               epochs=8, hidden=(256, 256), env_runners=62, num_cpus=64,
               scenarios=("evening_peak", "heatwave", "festival_surge", "feeder_fault"),
               notes="a 64-CPU cluster: ~32M env steps"),
        Preset("cluster-marl", "marl", iterations=500, batch_steps=64000, minibatch=4096,
               epochs=8, hidden=(256, 256), env_runners=62, num_cpus=64,
               scenarios=("evening_peak", "heatwave", "festival_surge", "feeder_fault"),
               notes="a 64-CPU cluster, multi-agent"),
    )
}  # fmt: skip


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--preset", default="cpu-small", choices=sorted(PRESETS))
    p.add_argument("--out", default="runs/ppo", help="folder for the curve and weights")
    p.add_argument(
        "--iterations",
        type=int,
        default=None,
        help="override the preset (0: export the untrained actors, a baseline)",
    )
    p.add_argument("--policies", choices=("shared", "separate"), default=None)
    p.add_argument("--address", default=None, help="a Ray cluster (default: local)")
    return p.parse_args(argv)


# --- Config ------------------------------------------------------------------------------
def build_config(preset: Preset) -> Any:
    """The RLlib ``PPOConfig`` of a preset (new API stack, torch)."""
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.multi_rl_module import MultiRLModuleSpec
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec
    from ray.rllib.examples.rl_modules.classes.action_masking_rlm import (
        ActionMaskingTorchRLModule,
    )
    from ray.tune.registry import register_env

    from .envs import MaskedGymEnv, make_multi_agent_env

    env_config = {"scenarios": list(preset.scenarios), "seed": preset.seed}
    spec = RLModuleSpec(
        module_class=ActionMaskingTorchRLModule,
        model_config={
            "fcnet_hiddens": list(preset.hidden),
            "head_fcnet_hiddens": [],
            "vf_share_layers": False,  # the actor's layers alone make the policy
        },
    )
    config = (
        PPOConfig()
        .framework("torch")
        .env_runners(num_env_runners=preset.env_runners, num_envs_per_env_runner=1)
        .training(
            train_batch_size_per_learner=preset.batch_steps,
            minibatch_size=preset.minibatch,
            num_epochs=preset.epochs,
            lr=preset.lr,
            gamma=preset.gamma,
            entropy_coeff=preset.entropy_coeff,
        )
        .debugging(seed=preset.seed)
    )
    if preset.env == "gym":
        return config.environment(MaskedGymEnv, env_config=env_config).rl_module(
            rl_module_spec=spec
        )
    register_env("evgrid_marl", make_multi_agent_env)
    module_of = modules_of(preset)
    ids = set(module_of.values())

    def mapping(agent_id: str, *args: Any, **kwargs: Any) -> str:
        return module_of[agent_id]

    return (
        config.environment("evgrid_marl", env_config=env_config)
        .multi_agent(policies=ids, policy_mapping_fn=mapping)
        .rl_module(
            rl_module_spec=MultiRLModuleSpec(rl_module_specs={i: spec for i in ids})
        )
    )


def modules_of(preset: Preset) -> dict[str, str]:
    """Multi-agent: each agent's RLlib module (policy): ``shared``, one per role
    (``fleet``, ``operator``); ``separate``, one per agent."""
    from evgrid_marl import make_roster

    agents = make_roster("both").agents
    if preset.policies == "shared":
        return {a: a.split("_")[0] for a in agents}
    return {a: a for a in agents}


# --- Weights out (numpy) -------------------------------------------------------------------
def _actor_arrays(module: Any, prefix: str = "") -> tuple[dict[str, np.ndarray], list]:
    """The actor's layers (its encoder's MLP, then the pi head; torch's ``Linear``
    layout) as ``{prefix}W0, {prefix}b0, ...``, and the module's names for them."""
    state = module.state_dict()
    actor = ("encoder.actor_encoder.", "encoder.encoder.", "pi.")  # own or shared
    keys = [k for k in state if k.startswith(actor) and k.endswith(".weight")]
    arrays: dict[str, np.ndarray] = {}
    for i, k in enumerate(keys):
        bias = k[: -len("weight")] + "bias"
        arrays[f"{prefix}W{i}"] = state[k].detach().cpu().numpy().astype(np.float32)
        arrays[f"{prefix}b{i}"] = state[bias].detach().cpu().numpy().astype(np.float32)
    return arrays, keys


def export_actor(module: Any, path: Path, meta: dict[str, Any]) -> None:
    """One actor as ``W0, b0, W1, ...`` and ``meta`` (JSON), for ``evgrid_rl.policy``:
    plain arrays, ``np.load(allow_pickle=False)`` reads them."""
    arrays, keys = _actor_arrays(module)
    arrays["meta"] = np.array(json.dumps({**meta, "layers": keys}))
    np.savez_compressed(path, **arrays)


def export_actors(
    modules: dict[str, Any], module_of: dict[str, str], path: Path, meta: dict[str, Any]
) -> None:
    """Several actors (multi-agent) as ``{module}.W0, {module}.b0, ...`` and ``meta``
    with ``module_of`` (agent -> module), for ``evgrid_rl.mappo``."""
    arrays: dict[str, np.ndarray] = {}
    layers = {}
    for mid, module in sorted(modules.items()):
        a, layers[mid] = _actor_arrays(module, f"{mid}.")
        arrays.update(a)
    full = {**meta, "module_of": module_of, "layers": layers}
    arrays["meta"] = np.array(json.dumps(full))
    np.savez_compressed(path, **arrays)


# --- Run ---------------------------------------------------------------------------------
def train(
    preset: Preset, out: Path, address: str | None = None
) -> list[dict[str, float]]:
    """Train; write the curve (CSV, PNG) and, for the gym env, the weights."""
    import ray

    out.mkdir(parents=True, exist_ok=True)
    if not ray.is_initialized():
        ray.init(
            address=address,
            num_cpus=None if address else preset.num_cpus,
            include_dashboard=False,
            log_to_driver=False,
        )
    algo = build_config(preset).build_algo()
    curve: list[dict[str, float]] = []
    t0 = time.time()
    for it in range(1, preset.iterations + 1):
        res = algo.train()
        runners = res.get("env_runners", {})
        row = {
            "iteration": it,
            "env_steps": float(
                res.get(
                    "num_env_steps_sampled_lifetime",
                    runners.get("num_env_steps_sampled_lifetime", 0),
                )
            ),
            "episodes": float(runners.get("num_episodes_lifetime", 0)),
            "return_mean": float(runners.get("episode_return_mean", float("nan"))),
            "seconds": round(time.time() - t0, 1),
        }
        if preset.env == "marl":  # each module's (role's) share of the return
            per = runners.get("module_episode_returns_mean", {})
            for mid in sorted(set(modules_of(preset).values())):
                row[f"return_{mid}"] = float(per.get(mid, float("nan")))
        curve.append(row)
        print(json.dumps(row), flush=True)
        with (out / "curve.csv").open("w", newline="") as f:  # so far, every iteration
            w = csv.DictWriter(f, fieldnames=list(curve[0]))
            w.writeheader()
            w.writerows(curve)
    if curve:  # --iterations 0: the actors as built, untrained (a baseline)
        plot_curve(curve, out / "curve.png", title=f"PPO {preset.name}")
    (out / "preset.json").write_text(json.dumps(asdict(preset), indent=1) + "\n")
    meta = {
        "preset": preset.name,
        "hidden": list(preset.hidden),
        "iterations": preset.iterations,
        "env_steps": curve[-1]["env_steps"] if curve else 0.0,
        "seed": preset.seed,
        "seconds": curve[-1]["seconds"] if curve else 0.0,
    }
    if preset.env == "gym":
        export_actor(algo.get_module(), out / "ppo_gym.npz", meta)
    else:
        module_of = modules_of(preset)
        export_actors(
            {m: algo.get_module(m) for m in set(module_of.values())},
            module_of,
            out / "mappo.npz",
            {**meta, "roles": "both", "policies": preset.policies},
        )
    algo.stop()
    return curve


def plot_curve(curve: list[dict[str, float]], path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.plot([r["env_steps"] for r in curve], [r["return_mean"] for r in curve], "o-")
    ax.set_xlabel("env steps sampled")
    ax.set_ylabel("mean episode return")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    preset = PRESETS[args.preset]
    if args.iterations is not None:
        preset = replace(preset, iterations=args.iterations)
    if args.policies is not None:
        preset = replace(preset, policies=args.policies)
    train(preset, Path(args.out), args.address)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
