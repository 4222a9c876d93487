"""Does leaving the overloading ROUTEs out move a learned policy toward the feeders' relief?

The "listing" lever of the Oracle issue, measured on ``distilled`` (fast: no LLM):
``distilled`` chooses among ``Candidates.sparing`` (no ROUTE whose feeder's 30-minute
forecast plus the EV's kW, plus the EVs already driving there due within those 30
minutes (since 2026-12-05), passes capacity while another answer exists);
``distilled_unspared`` (``Distilled(spare=False)``, the policy until 2026-12-04) asks
the same trees and chooses among all. Both play the same seeds; per scenario the mean
return, feeder-minutes over a limit and shed energy of each, and the paired difference
with its 95 % interval (``evaluation.stats.paired``: Student t, paired t-test and
Wilcoxon p), beside the heuristics' figures for reference.

    python3 -m training.feeder_listing --seeds 50:70 --out docs/training/feeder-listing.json

``--after`` reads comparison records instead (``evgrid compare``'s ``episodes.jsonl``)
and pairs them, seed by seed, with ``--before`` (the same policies' earlier rows) and
with the heuristics in ``--report``: per scenario and policy, after minus before, after
minus the heuristic with the fewest feeder-minutes there and after minus the one with
the best return (return, feeder-minutes, shed energy: mean, 95 % CI, paired t-test p).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from evaluation.runner import load_records
from evaluation.stats import by_scenario_policy, paired, value
from evgrid_core import SCENARIOS
from evgrid_core.distilled import Distilled
from evgrid_core.policies import make_policy
from evgrid_core.rollout import run_episode

KPIS = ("overload_feeder_min", "shed_kwh")


def measure(
    scenarios: list[str], seeds: range, policies: list[str], progress: bool = True
) -> dict[str, Any]:
    from tqdm import tqdm

    make = {"distilled_unspared": lambda: Distilled(spare=False)}
    out: dict[str, Any] = {"seeds": [seeds.start, seeds.stop], "scenarios": {}}
    bar = tqdm(total=len(scenarios) * len(seeds) * len(policies), unit="episode",
               file=sys.stderr, disable=not progress)  # fmt: skip
    for sc in scenarios:
        runs: dict[str, dict[int, dict[str, Any]]] = {}  # policy -> seed -> record
        for name in policies:
            pol = make[name]() if name in make else make_policy(name)
            runs[name] = {}
            for seed in seeds:
                res = run_episode(pol, sc, seed)
                runs[name][seed] = {"return": res.ret, "kpis": res.kpis}
                bar.update()
        keys = ("return", *KPIS)
        table: dict[str, Any] = {
            name: {k: float(np.mean([value(r, k) for r in by_seed.values()])) for k in keys}
            for name, by_seed in runs.items()
        }  # fmt: skip
        if "distilled" in runs and "distilled_unspared" in runs:
            table["spared_minus_unspared"] = {
                k: paired(runs["distilled"], runs["distilled_unspared"], k)
                for k in keys
            }
        out["scenarios"][sc] = table
    bar.close()
    return out


HEURISTICS = ("nearest", "greedy_eta", "least_loaded_feeder", "price_renewable",
              "urgency_first")  # fmt: skip


def held_out(before: Path, after: Path, report: Path) -> dict[str, Any]:
    """The paired comparisons of the module's docstring, from records files."""

    old, new, rep = (
        by_scenario_policy(load_records(p)) for p in (before, after, report)
    )
    keys = ("return", *KPIS)
    table: dict[str, Any] = {}
    for sc in sorted(new):
        heur = {h: rep[sc][h] for h in HEURISTICS if h in rep.get(sc, {})}
        best = min(heur, key=lambda h: np.mean([v["kpis"]["overload_feeder_min"]
                                                for v in heur[h].values()]))  # fmt: skip
        top = max(heur, key=lambda h: np.mean([v["return"] for v in heur[h].values()]))
        for policy in sorted(new[sc]):
            runs = new[sc][policy]
            row: dict[str, Any] = {"episodes": len(runs), "best_on_feeders": best,
                                   "best_on_return": top}  # fmt: skip
            row["mean"] = {k: float(np.mean([value(r, k) for r in runs.values()]))
                           for k in keys}  # fmt: skip
            if policy in old.get(sc, {}):
                row["minus_before"] = {
                    k: paired(runs, old[sc][policy], k) for k in keys
                }
            row["minus_best_on_feeders"] = {
                k: paired(runs, heur[best], k) for k in keys
            }
            row["minus_best_on_return"] = {k: paired(runs, heur[top], k) for k in keys}
            table.setdefault(sc, {})[policy] = row
    return table


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
    p.add_argument("--after", type=Path, help="comparison records to pair (see above)")
    p.add_argument("--before", type=Path, help="the same policies' earlier records")
    p.add_argument("--report", type=Path, default=Path("docs/report/episodes.jsonl"),
                   help="records holding the heuristics' episodes")  # fmt: skip
    args = p.parse_args(argv)
    if args.after:
        if not (args.before and args.before.is_file() and args.after.is_file()):
            p.error("--after needs --before, both records files")
        return _write(held_out(args.before, args.after, args.report), args.out)
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
    return _write(measure(scenarios, seeds, args.policies.split(",")), args.out)


def _write(figures: dict[str, Any], out: Path | None) -> int:
    text = json.dumps(figures, indent=2)
    print(text)
    if out:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
