"""Print the hindsight optimum's build, LP and MILP times, nodes and status per seed.

    python3 bench/optimum_solve.py [--scenario evening_peak] [--seeds 0,1,2]
                                   [--node-limit N] [--time-limit S]

Build includes the plan options, the model, the six baseline episodes and the MIP
start. Wall-clock times depend on how busy the machine is (CPU time is this
process's); nodes, status and the returns do not, unless the time limit (a safety
net) stops a solve: its status then says "time-limited".
"""

from __future__ import annotations

import argparse

from evaluation.optimum import solve_episode
from evaluation.plan_options import DEFAULT_NODE_LIMIT, DEFAULT_TIME_LIMIT_S


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--scenario", default="evening_peak")
    p.add_argument("--seeds", default="0")
    p.add_argument("--node-limit", type=int, default=DEFAULT_NODE_LIMIT)
    p.add_argument("--time-limit", type=float, default=DEFAULT_TIME_LIMIT_S)
    args = p.parse_args()
    print(
        "scenario        seed  EVs options  build_s  lp_s  milp_s  milp_cpu_s  nodes"
        "    return     bound  source  status"
    )
    for seed in (int(s) for s in args.seeds.split(",")):
        r = solve_episode(
            args.scenario,
            seed,
            node_limit=args.node_limit,
            time_limit_s=args.time_limit,
        )
        bound = "–" if r.bound_return is None else f"{r.bound_return:9.3f}"
        print(
            f"{args.scenario:<15} {seed:>4} {r.n_evs:>4} {r.n_options:>7} "
            f"{r.build_s:>8.1f} {r.lp_s:>5.1f} {r.solve_s:>7.1f} {r.solve_cpu_s:>11.1f} "
            f"{r.nodes:>6} {r.replay_return:>9.3f} {bound:>9}  {r.source}  {r.status}",
            flush=True,
        )


if __name__ == "__main__":
    main()
