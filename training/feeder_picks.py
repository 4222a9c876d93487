"""Who picks the ROUTEs that overload a feeder: the optimum's labels against the policies.

On the same decision states (the optimum's labelled states, replayed exactly), each
policy answers and its pick is read against ``Candidates.overloading`` (the core's
rule: the feeder's 30-minute forecast plus the EV's kW over capacity). Counted only
where the choice is real: at least one overloading ROUTE and at least one valid
answer that does not overload. The optimum's own share says whether its labels
carry the feeder's signal for a learner to copy; a learned policy's share beside it
says whether that signal reached it.

    python3 -m training.feeder_picks --labels runs/labels --seeds 25:30 \\
        --policies greedy_eta,urgency_first,distilled,oracle --oracle-states 300

Prints one row per policy (and ``--json``): states counted, the share of picks that
overload (with a 95 % interval), and the share of those picks on states where the
optimum itself did not overload.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

SOURCE = "optimum (labels)"


def contested_states(labels_dir: Path, seeds: range, scenarios: tuple[str, ...]):
    """(row, observation, candidates, overloading) of each labelled state with a
    real choice about the feeder (see the module's docstring), in label order."""
    from evgrid_core.candidates import candidates

    from .labels import label_states, load_labels

    rows = [r for r in load_labels(labels_dir)
            if r["seed"] in seeds and r["scenario"] in scenarios]  # fmt: skip
    for (obs, _), row in zip(label_states(rows), rows, strict=True):
        if row["planned_invalid"]:
            continue
        c = candidates(obs)
        over = c.overloading()
        if over.any() and not over.all():
            yield row, obs, c, dict(zip(c.lines, over.tolist(), strict=True))


def measure(
    labels_dir: Path,
    seeds: range,
    scenarios: tuple[str, ...],
    policies: list[str],
    oracle_states: int,
    progress: Any = None,
) -> dict[str, dict[str, float]]:
    """Per source (the optimum's labels, then each policy): states, the share of
    its picks that overload, and of those the share where the optimum did not."""
    from evgrid_core import format_action
    from evgrid_core.policies import make_policy

    made = {name: make_policy(name) for name in policies}
    picks: dict[str, list[tuple[bool, bool]]] = {SOURCE: []}
    picks.update({name: [] for name in policies})
    for k, (row, obs, _, over) in enumerate(
        contested_states(labels_dir, seeds, scenarios)
    ):
        optimum = over.get(row["action"], False)
        picks[SOURCE].append((optimum, optimum))
        for name, policy in made.items():
            if name == "oracle" and k >= oracle_states:
                continue
            policy.reset(row["seed"])
            a = policy.act(obs)
            line = a if isinstance(a, str) else format_action(a)
            picks[name].append((over.get(line, False), optimum))
        if progress:
            progress(k)
    out = {}
    for name, pairs in picks.items():
        mine = np.array([p for p, _ in pairs], dtype=float)
        n = len(mine)
        share = float(mine.mean()) if n else float("nan")
        half = 1.96 * np.sqrt(share * (1 - share) / n) if n else float("nan")
        alone = [p and not o for p, o in pairs]
        out[name] = {
            "states": n,
            "overloading_share": share,
            "ci95": float(half),
            "where_optimum_did_not": sum(alone) / max(1, sum(p for p, _ in pairs)),
        }
    return out


def main(argv: list[str] | None = None) -> int:
    from tqdm import tqdm

    from .labels import parse_seeds

    p = argparse.ArgumentParser(
        prog="python3 -m training.feeder_picks", description=__doc__.splitlines()[0]
    )
    p.add_argument("--labels", type=Path, required=True, help="`evgrid labels` output")
    p.add_argument("--seeds", default="25:30", help="label seeds, first:last+1")
    p.add_argument("--scenarios", default="evening_peak,heatwave,festival_surge,feeder_fault")  # fmt: skip
    p.add_argument("--policies", default="greedy_eta,urgency_first,distilled")
    p.add_argument("--oracle-states", type=int, default=300,
                   help="the Oracle (about 0.5 s a decision) answers the first N only")  # fmt: skip
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    if not (args.labels / "decisions.jsonl").is_file():
        p.error(f"{args.labels}: no decisions.jsonl (tar xzf "
                "training/data/optimum-labels.tgz -C runs/)")  # fmt: skip
    seeds = parse_seeds(args.seeds)
    scenarios = tuple(s for s in args.scenarios.split(",") if s)
    policies = [s for s in args.policies.split(",") if s]
    bar = tqdm(unit="state", file=sys.stderr)
    result = measure(args.labels, seeds, scenarios, policies, args.oracle_states,
                     progress=lambda _: bar.update())  # fmt: skip
    bar.close()
    print(f"labelled states of seeds {seeds.start}..{seeds.stop - 1} where some ROUTE "
          "would overload its feeder and some valid answer would not:")  # fmt: skip
    for name, r in result.items():
        print(f"  {name:18s} {r['states']:5d} states: picks an overloading ROUTE "
              f"{r['overloading_share']:6.1%} ± {r['ci95']:.1%}; of those, where the "
              f"optimum did not {r['where_optimum_did_not']:6.1%}")  # fmt: skip
    if args.json:
        print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
