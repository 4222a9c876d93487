"""``evgrid labels``: the hindsight optimum's decisions on training seeds, as JSONL rows."""

from __future__ import annotations

import argparse
from pathlib import Path

from ._label_args import add_label_arguments, label_jobs
from ._optimum_args import add_optimum_arguments, optimum_settings
from ._ray_args import add_ray_argument, ray_address

HELP = "label training states with the hindsight optimum's decisions (resumable)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_label_arguments(p, seeds="0:40")
    p.add_argument(
        "--out",
        default="runs/labels",
        help="folder for decisions.jsonl and episodes.jsonl (resumable)",
    )
    p.add_argument(
        "--require-proven",
        action="store_true",
        help="write decisions only for solves proven optimal (others: summary only)",
    )
    add_optimum_arguments(p)
    add_ray_argument(p, "solve (instead of --workers processes)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")


def run(args: argparse.Namespace) -> int:
    from training.labels import DECISIONS_FILE, EPISODES_FILE, label_runs

    scenarios, seeds = label_jobs(args)
    settings = optimum_settings(args)
    out = Path(args.out)
    if args.ray:
        from training.ray_labels import label_runs_ray

        new = label_runs_ray(
            scenarios,
            seeds,
            out,
            settings=settings,
            require_proven=args.require_proven,
            progress=not args.no_progress,
            address=ray_address(args),
        )
    else:
        new = label_runs(
            scenarios,
            seeds,
            out,
            settings=settings,
            workers=args.workers,
            require_proven=args.require_proven,
            progress=not args.no_progress,
        )
    rows = sum(e["decisions"] for e in new if e["labelled"])
    proven = sum(e["proven_optimal"] for e in new)
    print(
        f"{len(new)} episodes solved ({proven} proven optimal), {rows} decision rows; "
        f"{out / DECISIONS_FILE}, {out / EPISODES_FILE}"
    )
    return 0
