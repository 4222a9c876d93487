"""What the station operators' caps did: ``mappo`` with and without them, paired.

``python3 -m evgrid_rl.shifts`` plays the shipped ``mappo`` on the report's held-out
seeds (900000 onwards, 20 per scenario) twice: as trained, and with the operators
holding (never capping; the fleets' actors unchanged). Per scenario it prints the
caps per episode and, paired by seed, what they changed: feeder-minutes over a
limit, EV load shed by protection, and the return (mean and 95 % interval). A cap
pays when the return rises with it; the caps' own cost (``load_shift`` in the
reward) is inside the return.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from evgrid_core.policies import make_policy
from evgrid_core.rollout import run_episode

from .presets import REPORT_SCENARIOS

COLUMNS = ("load_shifts", "overload_feeder_min", "shed_kwh", "return")


def paired(
    weights: Path | None, scenario: str, seeds: list[int]
) -> dict[str, np.ndarray]:
    """Per seed: each column with the operators (``COLUMNS``) and without
    (``held_...``)."""
    kw = {"weights": weights} if weights else {}
    with_ops = make_policy("mappo", **kw)
    held = make_policy("mappo", hold_operators=True, **kw)
    out: dict[str, list[float]] = {c: [] for c in COLUMNS}
    out.update({f"held_{c}": [] for c in COLUMNS})
    for seed in seeds:
        for prefix, policy in (("", with_ops), ("held_", held)):
            res = run_episode(policy, scenario, seed)
            for c in COLUMNS:
                out[prefix + c].append(res.ret if c == "return" else res.kpis[c])
    return {k: np.asarray(v, dtype=float) for k, v in out.items()}


def _ci(d: np.ndarray) -> str:
    half = 1.96 * d.std(ddof=1) / np.sqrt(len(d)) if len(d) > 1 else float("nan")
    return f"{d.mean():+8.2f} ± {half:5.2f}"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--weights", type=Path, default=None, help="default: shipped")
    p.add_argument("--scenarios", default=",".join(REPORT_SCENARIOS))
    p.add_argument("--episodes", type=int, default=20)
    p.add_argument("--seed", type=int, default=900_000)
    args = p.parse_args(argv)
    if args.episodes < 2:
        p.error("--episodes must be at least 2 (a paired interval needs two)")
    seeds = list(range(args.seed, args.seed + args.episodes))
    print(f"{'scenario':>15} {'caps/ep':>8} {'feeder-min over, change':>24} "
          f"{'shed kWh, change':>18} {'return, change':>18}")  # fmt: skip
    for sc in args.scenarios.split(","):
        r = paired(args.weights, sc, seeds)
        print(f"{sc:>15} {r['load_shifts'].mean():8.1f} "
              f"{_ci(r['overload_feeder_min'] - r['held_overload_feeder_min']):>24} "
              f"{_ci(r['shed_kwh'] - r['held_shed_kwh']):>18} "
              f"{_ci(r['return'] - r['held_return']):>18}", flush=True)  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
