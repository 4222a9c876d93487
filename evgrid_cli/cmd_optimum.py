"""``evgrid optimum``: the hindsight-optimal plan of one episode (MILP, HiGHS), replayed."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ._optimum_args import add_optimum_arguments, optimum_settings

HELP = "hindsight optimum of one episode: MILP with HiGHS, replayed through env.step"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--scenario", default="evening_peak", help="scenario name")
    p.add_argument("--seed", type=int, default=0, help="episode seed")
    add_optimum_arguments(p)
    p.add_argument(
        "--baselines",
        default="random_valid,nearest,greedy_eta,least_loaded_feeder,"
        "price_renewable,urgency_first",
        help="comma-separated policies to score on the same episode ('' for none)",
    )
    p.add_argument(
        "--out",
        default=None,
        help="folder for trace.json (the exogenous trace) and plan.json",
    )
    p.add_argument("--json", action="store_true", help="print the result as JSON")


def run(args: argparse.Namespace) -> int:
    from evgrid_core import get_scenario

    get_scenario(args.scenario)
    if args.seed < 0:
        raise ValueError("--seed must be >= 0")
    settings = optimum_settings(args)

    from evaluation.optimum import solve_episode
    from evaluation.runner import run_episode

    res = solve_episode(
        args.scenario,
        args.seed,
        **settings,
    )
    baselines = {
        name: run_episode(name, args.scenario, args.seed)["return"]
        for name in [b.strip() for b in args.baselines.split(",") if b.strip()]
    }
    out = res.summary() | {"baseline_returns": baselines}
    if args.out:
        from evgrid_core import EVGridEnv
        from evgrid_core.trace import episode_trace

        folder = Path(args.out)
        folder.mkdir(parents=True, exist_ok=True)
        env = EVGridEnv()
        env.reset(seed=args.seed, scenario=args.scenario)
        (folder / "trace.json").write_text(json.dumps(episode_trace(env).to_dict()))
        (folder / "plan.json").write_text(json.dumps(res.plan, indent=0))
    if args.json:
        print(json.dumps(out, indent=1, default=float))
        return 0
    _print(res, baselines)
    return 0


def _print(res, baselines: dict[str, float]) -> None:  # noqa: ANN001
    def f(x: float | None) -> str:
        return "–" if x is None else f"{x:.4f}"

    print(
        f"{res.scenario} seed {res.seed}: {res.n_evs} EVs, {res.n_options} plan options"
    )
    print(
        f"  build {res.build_s:.1f} s, LP {res.lp_s:.1f} s, MILP {res.solve_s:.1f} s (CPU {res.solve_cpu_s:.1f} s): {res.status}"
    )
    print(f"  solver objective (return)   {f(res.objective_return)}")
    print(f"  best bound (return)         {f(res.bound_return)}")
    print(f"  LP relaxation (return)      {f(res.lp_return)}")
    print(
        f"  replayed return (the number){res.replay_return:>10.4f}   refused steps: {res.invalid_steps}"
    )
    print("  reward parts  replay / model:")
    for k, v in res.replay_parts.items():
        print(f"    {k:<12}{v:>10.4f} {res.model_parts.get(k, 0.0):>10.4f}")
    if baselines:
        print("  baselines on the same episode (return, % of optimal):")
        for name, ret in sorted(baselines.items(), key=lambda kv: -kv[1]):
            pct = 100.0 * res.replay_return / ret if ret else float("nan")
            print(f"    {name:<22}{ret:>10.4f} {pct:>7.1f} %")
