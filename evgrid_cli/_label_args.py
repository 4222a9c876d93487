"""The labelled runs' scenarios, training seeds and solver processes, shared by
``evgrid labels`` and ``evgrid distill``: one definition and check."""

from __future__ import annotations

import argparse

LABEL_SCENARIOS = "evening_peak,heatwave,festival_surge,feeder_fault"


def add_label_arguments(p: argparse.ArgumentParser, seeds: str) -> None:
    p.add_argument("--scenarios", default=LABEL_SCENARIOS,
                   help="comma-separated scenario names")  # fmt: skip
    p.add_argument("--seeds", default=seeds,
                   help="training seeds FIRST:LAST (LAST excluded); held-out seeds are refused")  # fmt: skip
    p.add_argument("--workers", type=int, default=2, help="solver processes")


def label_jobs(args: argparse.Namespace) -> tuple[list[str], range]:
    """The checked (scenarios, training seeds); held-out seeds are refused."""
    from training.labels import check_scenarios, parse_seeds

    scenarios = check_scenarios(args.scenarios.split(","))
    seeds = parse_seeds(args.seeds)
    if args.workers < 1:
        raise ValueError("--workers must be >= 1")
    return scenarios, seeds
