"""Episodes/s of ``evgrid compare``: single process vs Ray tasks on 1 and 2 CPUs.

    nice -n 10 python3 bench/ray_compare.py [--episodes 8] [--policies ...]

The same jobs each way (policies x seeds on one scenario, fresh output folders);
Ray's start-up is timed apart from the run, and every Ray run's records are checked
equal to the single-process run's. Figures with their command and date go to
docs/benchmarks.md and docs/multiagent.md.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from evaluation.ray_compare import run_comparison_ray
from evaluation.runner import run_comparison


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--policies", default="greedy_eta,nearest,urgency_first,distilled")
    p.add_argument("--scenario", default="evening_peak")
    p.add_argument("--episodes", type=int, default=8, help="seeds from 900000")
    p.add_argument("--cpus", default="1,2", help="Ray sizes to measure")
    args = p.parse_args()
    import ray

    policies = args.policies.split(",")
    seeds = range(900000, 900000 + args.episodes)
    n = len(policies) * len(seeds)
    tmp = Path(tempfile.mkdtemp())
    print(f"{n} episodes ({len(policies)} policies x {args.episodes} seeds, "
          f"{args.scenario}); os.cpu_count()={os.cpu_count()}, "
          f"load average {os.getloadavg()[0]:.1f}")  # fmt: skip
    print(f"{'run':<22}{'start s':>9}{'run s':>9}{'ep/s':>8}{'speed-up':>10}")
    t = time.perf_counter()
    single = run_comparison(
        policies, [args.scenario], seeds, tmp / "single", progress=False
    )
    base = time.perf_counter() - t
    print(f"{'single process':<22}{0.0:>9.1f}{base:>9.1f}{n / base:>8.2f}{1.0:>10.2f}")
    for cpus in [int(c) for c in args.cpus.split(",")]:
        t = time.perf_counter()
        ray.init(num_cpus=cpus, include_dashboard=False, log_to_driver=False)
        start = time.perf_counter() - t
        t = time.perf_counter()
        recs = run_comparison_ray(
            policies, [args.scenario], seeds, tmp / f"ray{cpus}", progress=False
        )
        run = time.perf_counter() - t
        ray.shutdown()
        assert recs == single, "Ray's records differ from the single-process run's"
        print(
            f"{f'Ray, {cpus} CPU':<22}{start:>9.1f}{run:>9.1f}{n / run:>8.2f}{base / run:>10.2f}"
        )


if __name__ == "__main__":
    main()
