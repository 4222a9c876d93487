"""RLlib PPO on the envs: ``python3 -m evgrid_rl.train --preset cpu-clock``.

Presets (``evgrid_rl.presets``): ``cpu-clock`` (the shipped ``ppo``: single-agent
PPO on the candidate interface, ``evgrid_gym.candidate_env``, one network scoring
every candidate row, discounted per minute of clock, ``evgrid_rl.clock_gae``; 45
minutes on 2 CPUs, checkpoints and ``--resume``), ``cpu`` (the same with a discount
per decision), ``cpu-warm`` (cloned from ``distilled`` first), ``cpu-mappo`` (the
shipped ``mappo``: fleets and station operators on the candidate interface,
``evgrid_rl.candidate_marl``), ``cpu-flat`` (PPO on the flat index, for comparison),
``cpu-small`` (the flat index, a smoke), ``cpu-marl-small`` (multi-agent PPO on the
PettingZoo env, one policy shared by the fleets and one by the operators, or one per
agent with ``--policies separate``), and ``cluster`` / ``cluster-marl`` (sized for a
Ray cluster). Each run writes ``curve.csv`` and ``curve.png`` (training return per
iteration, and the held-out checks of ``evgrid_rl.validate`` against greedy_eta on
the same seeds) and the actors' weights as plain numpy arrays (``evgrid_rl.export``):
``ppo.npz`` for the ``ppo`` policy (``evgrid_rl.policy``), ``mappo.npz`` for
``mappo`` (``evgrid_rl.mappo``); neither needs torch.
"""

from __future__ import annotations

import argparse
import csv
import json
import time
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from .curves import plot_curve, read
from .export import export, snapshot
from .presets import PRESETS, Preset, modules_of
from .validate import check, check_actor


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
    p.add_argument("--minutes", type=float, default=None, help="override the budget")
    p.add_argument(
        "--resume",
        action="store_true",
        help="go on from OUT's checkpoint and curve (the budget counts what they had)",
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

    from .envs import (
        CandidateRLlibEnv,
        MaskedGymEnv,
        make_masked_vector_env,
        make_multi_agent_env,
    )

    if preset.clock and preset.env not in ("candidates", "marl-candidates"):
        raise ValueError(f"preset {preset.name}: clock (a discount per minute) "
                         "is built for the candidate envs only")  # fmt: skip
    env_config = {
        "scenarios": list(preset.scenarios),
        "seed": preset.seed,
        "reward_scale": preset.reward_scale,
        "clock": preset.clock,
    }
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
        .env_runners(
            num_env_runners=preset.env_runners,
            num_envs_per_env_runner=preset.num_envs,
        )
        .training(
            train_batch_size_per_learner=preset.batch_steps,
            minibatch_size=preset.minibatch,
            num_epochs=preset.epochs,
            lr=preset.lr,
            grad_clip=preset.grad_clip,
            grad_clip_by="global_norm",
            gamma=preset.gamma,
            lambda_=preset.lambda_,
            clip_param=preset.clip,
            vf_clip_param=preset.vf_clip,
            entropy_coeff=preset.entropy_coeff,
        )
        .debugging(seed=preset.seed)
    )
    if preset.clock:  # the candidate envs (checked above)
        from .clock_gae import ClockPPOLearner

        config = config.training(learner_class=ClockPPOLearner)
    if preset.env == "candidates":
        from .candidate_module import CandidateScorerModule

        return config.environment(CandidateRLlibEnv, env_config=env_config).rl_module(
            rl_module_spec=RLModuleSpec(
                module_class=CandidateScorerModule,
                model_config={
                    "hidden": list(preset.hidden),
                    "critic_state": preset.critic_state,
                },
            )
        )
    if preset.env == "marl-candidates":
        from .candidate_marl import CandidateMultiAgentEnv, log_team_return
        from .candidate_module import CandidateScorerModule

        config = config.callbacks(on_episode_end=log_team_return)
        module_of = modules_of(preset)
        ids = sorted(set(module_of.values()))  # sorted: the same init in any process
        row_spec = RLModuleSpec(
            module_class=CandidateScorerModule,
            model_config={"hidden": list(preset.hidden),
                          "critic_state": preset.critic_state},
        )  # fmt: skip
        return (
            # RLlib's pre-check steps random actions, masks ignored: refused here
            config.environment(
                CandidateMultiAgentEnv, env_config=env_config, disable_env_checking=True
            )  # fmt: skip
            .multi_agent(
                policies=ids,
                policy_mapping_fn=lambda agent_id, *a, **k: module_of[agent_id],
            )
            .rl_module(
                rl_module_spec=MultiRLModuleSpec(
                    rl_module_specs={m: row_spec for m in ids}
                )
            )
        )
    if preset.env == "gym" and preset.compiled_batch:
        register_env("evgrid_masked_batch", make_masked_vector_env)
        return (
            config.environment("evgrid_masked_batch", env_config=env_config)
            .env_runners(gym_env_vectorize_mode="vector_entry_point")
            .rl_module(rl_module_spec=spec)
        )
    if preset.env == "gym":
        return config.environment(MaskedGymEnv, env_config=env_config).rl_module(
            rl_module_spec=spec
        )
    register_env("evgrid_marl", make_multi_agent_env)
    module_of = modules_of(preset)
    ids = sorted(set(module_of.values()))  # sorted: the same init in any process

    def mapping(agent_id: str, *args: Any, **kwargs: Any) -> str:
        return module_of[agent_id]

    return (
        config.environment("evgrid_marl", env_config=env_config)
        .multi_agent(policies=ids, policy_mapping_fn=mapping)
        .rl_module(
            rl_module_spec=MultiRLModuleSpec(rl_module_specs={i: spec for i in ids})
        )
    )


# --- Run ---------------------------------------------------------------------------------
def train(
    preset: Preset, out: Path, address: str | None = None, resume: bool = False
) -> list[dict[str, float]]:
    """Train until the preset's iterations or minutes run out; write the curve (CSV,
    PNG) every iteration, and at each held-out check a checkpoint and the actors."""
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
    ckpt = out / "checkpoint"
    if resume and ckpt.is_dir():
        algo.restore_from_path(str(ckpt.resolve()))
        curve = read(out / "curve.csv") if (out / "curve.csv").is_file() else []
        checked = [i for i, row in enumerate(curve) if "val_return" in row]
        # the checkpoint is the last check's: the iterations after it are done again
        curve = curve[: checked[-1] + 1] if checked else curve
        print(f"resumed from {ckpt} at iteration {len(curve) - 1}", flush=True)
    reference = reference_returns(preset, out)
    if not curve and preset.warm_start:
        stats = warm_start(algo, preset)
        (out / "warm_start.json").write_text(json.dumps(stats, indent=1) + "\n")
        print(json.dumps(stats), flush=True)
    if not curve and preset.eval_every:  # where it starts, before any PPO update
        row = {"iteration": 0, "env_steps": 0.0, "episodes": 0.0, "seconds": 0.0}
        weights = export(algo, preset, out, 0, 0.0, 0.0)
        row.update(check_actor(weights, preset.scenarios, preset.eval_seeds))
        snapshot(weights, 0)
        curve.append(row)
        print(json.dumps(row), flush=True)
        write_curve(curve, out / "curve.csv")
    start = time.time() - (curve[-1]["seconds"] if curve else 0.0)
    steps = curve[-1]["env_steps"] if curve else 0.0
    it = int(curve[-1]["iteration"]) if curve else 0
    while it < preset.iterations and not over_budget(preset, start):
        it += 1
        res = algo.train()
        runners = res.get("env_runners", {})
        steps += float(runners.get("num_env_steps_sampled", 0))
        row = {
            "iteration": it,
            "env_steps": steps,
            "episodes": float(runners.get("num_episodes_lifetime", 0)),
            "return_mean": float(runners.get("episode_return_mean", float("nan")))
            / preset.reward_scale,
            "seconds": round(time.time() - start, 1),
        }
        learner = res.get("learners", {}).get("default_policy", {})
        for key in ("entropy", "vf_explained_var", "mean_kl_loss", "vf_loss"):
            if key in learner:  # how the update went (single agent)
                row[key] = round(float(learner[key]), 5)
        if preset.env == "marl-candidates":  # the team's (candidate_marl)
            team = float(runners.get("team_return", float("nan")))
            row["return_mean"] = team / preset.reward_scale
        if preset.env.startswith("marl"):  # each module's (role's) return
            per = runners.get("module_episode_returns_mean", {})
            for mid in sorted(set(modules_of(preset).values())):
                row[f"return_{mid}"] = float(per.get(mid, float("nan")))
        last = it >= preset.iterations or over_budget(preset, start)
        if preset.eval_every and (it % preset.eval_every == 0 or last):
            weights = export(algo, preset, out, it, steps, row["seconds"])
            row.update(check_actor(weights, preset.scenarios, preset.eval_seeds))
            algo.save_to_path(str(ckpt.resolve()))
            snapshot(weights, it)
        curve.append(row)
        print(json.dumps(row), flush=True)
        write_curve(curve, out / "curve.csv")
        if "val_return" in row:  # the picture at each check (and at the end)
            plot_curve(curve, out / "curve.png", f"PPO {preset.name}", reference)
    if curve and "val_return" not in curve[-1]:
        plot_curve(curve, out / "curve.png", f"PPO {preset.name}", reference)
    (out / "preset.json").write_text(json.dumps(asdict(preset), indent=1) + "\n")
    if not preset.eval_every or not curve:  # the actors as they end (or untrained)
        export(algo, preset, out, it, steps, curve[-1]["seconds"] if curve else 0.0)
    algo.stop()
    return curve


def warm_start(algo: Any, preset: Preset) -> dict[str, float]:
    """Behaviour cloning from ``preset.warm_start`` into the learner's module (from
    its own initial weights), then the env runners' copies synced."""
    if preset.warm_start != "distilled" or preset.env != "candidates":
        raise ValueError(f"warm start {preset.warm_start!r}: only 'distilled', "
                         "on the candidate interface")  # fmt: skip
    from ray.rllib.core import DEFAULT_MODULE_ID
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec

    from evgrid_gym.candidate_env import K_DEFAULT, CandidateGymEnv

    from .candidate_module import CandidateScorerModule
    from .warm_start import demonstrations, fit

    env = CandidateGymEnv(k=K_DEFAULT)
    module = RLModuleSpec(
        module_class=CandidateScorerModule,
        observation_space=env.observation_space,
        action_space=env.action_space,
        model_config={
            "hidden": list(preset.hidden),
            "critic_state": preset.critic_state,
        },
    ).build()
    module.set_state(algo.learner_group.get_weights()[DEFAULT_MODULE_ID])
    demos = demonstrations(preset.scenarios, preset.bc_episodes, K_DEFAULT,
                           preset.gamma, preset.reward_scale, preset.clock)  # fmt: skip
    stats = fit(module, demos, preset.bc_epochs, seed=preset.seed)
    algo.learner_group.set_weights({DEFAULT_MODULE_ID: module.get_state()})
    algo.env_runner_group.sync_weights(
        from_worker_or_learner_group=algo.learner_group, inference_only=True
    )
    return stats


def over_budget(preset: Preset, start: float) -> bool:
    return bool(preset.minutes) and time.time() - start >= preset.minutes * 60


def reference_returns(preset: Preset, out: Path) -> dict[str, float]:
    """greedy_eta's held-out checks on the same seeds (once per run folder)."""
    path = out / "reference.json"
    if not preset.eval_every:
        return {}
    if path.is_file():
        return json.loads(path.read_text())
    ref = check("greedy_eta", preset.scenarios, preset.eval_seeds)
    path.write_text(json.dumps(ref, indent=1) + "\n")
    return ref


def write_curve(curve: list[dict[str, float]], path: Path) -> None:
    fields = list(dict.fromkeys(k for row in curve for k in row))
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields, restval="")
        w.writeheader()
        w.writerows(curve)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    preset = PRESETS[args.preset]
    if args.iterations is not None:
        preset = replace(preset, iterations=args.iterations)
    if args.minutes is not None:
        preset = replace(preset, minutes=args.minutes)
    if args.policies is not None:
        preset = replace(preset, policies=args.policies)
    train(preset, Path(args.out), args.address, resume=args.resume)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
