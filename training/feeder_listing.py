"""Does leaving the overloading ROUTEs out move a learned policy toward the feeders' relief?

The "listing" lever of the Oracle issue, measured on ``distilled`` (fast: no LLM):
``distilled`` chooses among ``Candidates.sparing`` (no ROUTE whose feeder's 30-minute
forecast plus the EV's kW passes capacity while another answer exists);
``distilled_unspared`` (``Distilled(spare=False)``, the policy until 2026-12-04) asks
the same trees and chooses among all. Both play the same seeds; per scenario the mean
return, feeder-minutes over a limit and shed energy of each, and the paired difference
with its 95 % interval, beside the heuristics' figures for reference.

    python3 -m training.feeder_listing --seeds 50:70 --out docs/training/feeder-listing.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from evgrid_core import SCENARIOS
from evgrid_core.distilled import Distilled
from evgrid_core.policies import make_policy
from evgrid_core.rollout import run_episode

KPIS = ("overload_feeder_min", "shed_kwh")


def paired(a: list[float], b: list[float]) -> dict[str, float]:
    """Mean of a - b and its 95 % interval (normal approximation)."""
    d = np.asarray(a) - np.asarray(b)
    ci = 1.96 * d.std(ddof=1) / np.sqrt(len(d)) if len(d) > 1 else 0.0
    return {"mean": float(d.mean()), "ci95": float(ci)}


def measure(
    scenarios: list[str], seeds: range, policies: list[str], progress: bool = True
) -> dict[str, Any]:
    from tqdm import tqdm

    make = {"distilled_unspared": lambda: Distilled(spare=False)}
    out: dict[str, Any] = {"seeds": [seeds.start, seeds.stop], "scenarios": {}}
    bar = tqdm(total=len(scenarios) * len(seeds) * len(policies), unit="episode",
               file=sys.stderr, disable=not progress)  # fmt: skip
    for sc in scenarios:
        rows: dict[str, dict[str, list[float]]] = {}
        for name in policies:
            pol = make[name]() if name in make else make_policy(name)
            r = rows[name] = {"return": [], **{k: [] for k in KPIS}}
            for seed in seeds:
                res = run_episode(pol, sc, seed)
                r["return"].append(res.ret)
                for k in KPIS:
                    r[k].append(res.kpis[k])
                bar.update()
        table = {
            name: {k: float(np.mean(v)) for k, v in r.items()}
            for name, r in rows.items()
        }
        if "distilled" in rows and "distilled_unspared" in rows:
            a, b = rows["distilled"], rows["distilled_unspared"]
            table["spared_minus_unspared"] = {k: paired(a[k], b[k]) for k in a}
        out["scenarios"][sc] = table
    bar.close()
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python3 -m training.feeder_listing",
                                description=__doc__.splitlines()[0])  # fmt: skip
    p.add_argument(
        "--scenarios", default="evening_peak,heatwave,festival_surge,feeder_fault"
    )
    p.add_argument("--seeds", default="50:70",
                   help="FIRST:LAST; default: seeds no label or fit has seen (a validation "
                        "set; the report's held-out seeds start at 900000)")  # fmt: skip
    p.add_argument(
        "--policies",
        default="distilled,distilled_unspared,greedy_eta,urgency_first,least_loaded_feeder",
    )
    p.add_argument("--out", type=Path, help="write the figures (json) here")
    args = p.parse_args(argv)
    scenarios = args.scenarios.split(",")
    bad = [s for s in scenarios if s not in SCENARIOS]
    if bad:
        p.error(f"unknown scenario(s) {bad}")
    try:
        first, last = (int(x) for x in args.seeds.split(":"))
    except ValueError:
        p.error(f"--seeds {args.seeds!r}: give FIRST:LAST")
    if not 0 <= first < last:
        p.error(f"--seeds {args.seeds!r}: 0 <= FIRST < LAST")
    seeds = range(first, last)
    figures = measure(scenarios, seeds, args.policies.split(","))
    text = json.dumps(figures, indent=2)
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
