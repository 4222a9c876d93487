"""``evgrid eval``: run one policy on one scenario over N seeded episodes."""

from __future__ import annotations

import argparse
import json
import sys

HELP = "evaluate a policy: KPIs over N seeded episodes (table or --json)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--policy", default="greedy_eta", help="policy name (see `evgrid list`)"
    )
    p.add_argument(
        "--scenario", default="evening_peak", help="scenario name (see `evgrid list`)"
    )
    p.add_argument(
        "--episodes",
        type=int,
        default=10,
        help="number of episodes (seeds seed..seed+N-1)",
    )
    p.add_argument("--seed", type=int, default=0, help="first seed")
    p.add_argument(
        "--grid",
        default="feeder_sum",
        help="grid model: feeder_sum (default), lindistflow, ac (the ac extra)",
    )
    p.add_argument(
        "--model",
        default=None,
        help="model file for policies that take one (oracle: a GGUF)",
    )
    p.add_argument(
        "--json",
        action="store_true",
        help="print JSON (kpis, mean_return, per_episode_returns)",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar")


def run(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from evgrid_core import KPI_UNITS, aggregate, get_scenario
    from evgrid_core.grid import grid_config
    from evgrid_core.policies import make_policy
    from evgrid_core.rollout import run_episode

    if args.episodes < 1:
        raise ValueError("--episodes must be at least 1")
    if args.seed < 0:
        raise ValueError("--seed must be non-negative")
    scenario = get_scenario(args.scenario)  # looked up once, played below
    config = grid_config(
        args.grid
    )  # an unknown model: a one-line error, before any run
    kwargs = {"model_path": args.model} if args.model else {}
    policy = make_policy(args.policy, **kwargs)
    seeds = list(range(args.seed, args.seed + args.episodes))
    results = []
    bar = tqdm(seeds, desc=f"{args.policy} on {args.scenario}", unit="ep", file=sys.stderr,
               disable=args.no_progress)  # fmt: skip
    for seed in bar:
        results.append(run_episode(policy, scenario, seed, config))
        bar.set_postfix(ret=f"{results[-1].ret:.1f}")
    stats = aggregate(r.kpis for r in results)
    returns = [r.ret for r in results]
    if args.json:
        out = {
            "policy": args.policy,
            "scenario": args.scenario,
            "grid": args.grid,
            "episodes": args.episodes,
            "seeds": seeds,
            "kpis": stats,
            "mean_return": sum(returns) / len(returns),
            "per_episode_returns": returns,
            "per_episode_kpis": [r.kpis for r in results],
            "reward_parts_mean": {
                k: sum(r.parts[k] for r in results) / len(results)
                for k in results[0].parts
            },
        }
        print(json.dumps(out, indent=2))
        return 0
    print(
        f"\n{args.policy} on {args.scenario}, {args.episodes} episodes from seed "
        f"{args.seed}, grid model {args.grid}"
    )
    print(f"{'KPI':<24}{'mean':>12}{'± 95% CI':>12}  unit")
    for key, s in stats.items():
        print(
            f"{key:<24}{s['mean']:>12.2f}{s['ci95']:>12.2f}  {KPI_UNITS.get(key, '')}"
        )
    return 0
