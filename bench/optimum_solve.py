"""Print the hindsight optimum's build, LP and MILP times (wall and CPU) per seed.

    python3 bench/optimum_solve.py [--scenario evening_peak] [--seeds 0,1,2] [--time-limit 30]

Wall-clock times depend on how busy the machine is; CPU time is this process's.
"""

from __future__ import annotations

import argparse

from evaluation.optimum import solve_episode


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--scenario", default="evening_peak")
    p.add_argument("--seeds", default="0")
    p.add_argument("--time-limit", type=float, default=30.0)
    args = p.parse_args()
    print(
        "scenario        seed  EVs options  build_s  lp_s  milp_s  milp_cpu_s  status"
    )
    for seed in (int(s) for s in args.seeds.split(",")):
        r = solve_episode(args.scenario, seed, time_limit_s=args.time_limit)
        print(
            f"{args.scenario:<15} {seed:>4} {r.n_evs:>4} {r.n_options:>7} "
            f"{r.build_s:>8.1f} {r.lp_s:>5.1f} {r.solve_s:>7.1f} {r.solve_cpu_s:>11.1f}  "
            f"{'optimal' if 'Optimal' in r.status else r.status}"
        )


if __name__ == "__main__":
    main()
