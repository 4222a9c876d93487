"""Ticks/s of each grid model side by side, in one run, on the same actions.

`python3 bench/grid_models.py [--episodes 30] [--ac-episodes 2] [--scenario evening_peak]`

Each episode's actions are recorded once (greedy_eta, under the default model);
every model then replays them (the step alone: no policy, no observation), so the
difference is the grid model's cost. The network models carry the same kW as the
feeder sum, so the same actions are valid under all of them. The AC reference
(pandapower, the `ac` extra) is timed on fewer episodes; its cost per tick is its
time per tick less the feeder sum's.
"""

from __future__ import annotations

import argparse
import json
import time

from evgrid_core import EVGridEnv, SimConfig
from evgrid_core.policies import make_policy


def record(episodes: int, scenario: str) -> list[list[object]]:
    policy, env, plans = make_policy("greedy_eta"), EVGridEnv(), []
    for seed in range(episodes):
        obs = env.reset(seed=seed, scenario=scenario)
        policy.reset(seed)
        actions = []
        while not env.done:
            actions.append(policy.act(obs))
            env.step(actions[-1])
            obs = env.observation()
        plans.append(actions)
    return plans


def replay_s(grid: str, plans: list[list[object]], scenario: str) -> float:
    env = EVGridEnv(SimConfig(grid=grid))
    t0 = time.perf_counter()
    for seed, plan in enumerate(plans):
        env.reset(seed=seed, scenario=scenario)
        for a in plan:
            env.step(a)  # type: ignore[arg-type]
    return time.perf_counter() - t0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--episodes", type=int, default=30)
    p.add_argument("--ac-episodes", type=int, default=2, help="0: skip the AC model")
    p.add_argument("--scenario", default="evening_peak")
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    plans = record(args.episodes, args.scenario)
    n_ticks = EVGridEnv().reset(seed=0, scenario=args.scenario).n_ticks
    rows: dict[str, dict[str, float]] = {}
    core = ("feeder_sum", "lindistflow")
    for grid in core:
        replay_s(grid, plans[:2], args.scenario)  # warm-up
    # Interleaved rounds, best of five: a busy machine slows both alike.
    times: dict[str, list[float]] = {g: [] for g in core}
    for _ in range(5):
        for g in core:
            times[g].append(replay_s(g, plans, args.scenario))
    rows: dict[str, dict[str, float]] = {
        g: {"episodes": len(plans), "ticks_per_s": len(plans) * n_ticks / min(t)}
        for g, t in times.items()
    }
    if args.ac_episodes:
        ac_plans = plans[: args.ac_episodes]
        replay_s(
            "ac", ac_plans[:1], args.scenario
        )  # warm-up (pandapower's first solves)
        s = replay_s("ac", ac_plans, args.scenario)
        rows["ac"] = {
            "episodes": len(ac_plans),
            "ticks_per_s": len(ac_plans) * n_ticks / s,
        }
    base = rows["feeder_sum"]["ticks_per_s"]
    for r in rows.values():
        r["slowdown_vs_feeder_sum"] = base / r["ticks_per_s"]
        r["grid_ms_per_tick_beyond_feeder_sum"] = (
            1 / r["ticks_per_s"] - 1 / base
        ) * 1e3
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    print(f"grid models: {args.scenario}, {n_ticks} ticks an episode, greedy_eta's actions "
          "replayed (step only: no policy, no observation)")  # fmt: skip
    print(f"  {'model':<12} {'episodes':>8} {'ticks/s':>10} {'x feeder_sum':>13} {'ms/tick more':>13}")  # fmt: skip
    for g, r in rows.items():
        print(f"  {g:<12} {r['episodes']:>8.0f} {r['ticks_per_s']:>10,.0f} "
              f"{r['slowdown_vs_feeder_sum']:>13.2f} {r['grid_ms_per_tick_beyond_feeder_sum']:>13.3f}")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
