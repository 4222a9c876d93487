"""``evgrid check``: run a policy's or a grid model's plug-in contract
(``evgrid_core.checks``), by its registered name or as ``module:Class``."""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import Any

HELP = "check a policy or grid model plug-in against its contract"


def add_arguments(p: argparse.ArgumentParser) -> None:
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument(
        "--policy", metavar="NAME", help="a registered policy, or module:Class"
    )
    what.add_argument(
        "--grid", metavar="NAME", help="a registered grid model, or module:Class"
    )
    p.add_argument(
        "--scenarios",
        metavar="A,B",
        help="scenarios to check on (policy: all; grid model: evening_peak, "
        "feeder_fault, festival_surge)",
    )
    p.add_argument(
        "--decisions",
        type=int,
        default=60,
        help="decisions of each episode a policy plays (default 60)",
    )
    p.add_argument(
        "--ticks", type=int, default=24, help="ticks a grid model is asked (default 24)"
    )


def _target(spec: str) -> Any:
    """A registered name as it is; ``module:Class`` imported."""
    if ":" not in spec:
        return spec
    module, _, attr = spec.partition(":")
    try:
        return getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as e:
        raise ValueError(f"cannot load {spec!r}: {e}") from None


def run(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from evgrid_core import SCENARIOS, get_scenario
    from evgrid_core.checks import ContractError, check_grid_model, check_policy

    if args.decisions < 1 or args.ticks < 1:
        raise ValueError("--decisions and --ticks are positive")
    scenarios = args.scenarios.split(",") if args.scenarios else None
    for sc in scenarios or ():
        get_scenario(sc)  # an unknown name: a one-line error before any check
    kind, name = ("policy", args.policy) if args.policy else ("grid model", args.grid)
    target = _target(name)
    done: dict[str, int] = {}
    try:
        if args.policy:  # one scenario at a time: a bar for slow (LLM) policies
            bar = tqdm(scenarios or list(SCENARIOS), unit="scenario", file=sys.stderr)
            for sc in bar:
                bar.set_description(f"{name} on {sc}")
                done |= check_policy(target, scenarios=[sc], decisions=args.decisions)
            unit = "decisions"
        else:
            extra = {"scenarios": scenarios} if scenarios else {}
            done = check_grid_model(target, ticks=args.ticks, **extra)
            unit = "ticks"
    except ContractError as e:
        print(f"evgrid check: {kind} {name} breaks its contract: {e}", file=sys.stderr)
        return 1
    for scenario, n in done.items():
        print(f"  {scenario:<17}{n:>4} {unit} checked")
    print(f"{kind} {name} keeps its contract on {len(done)} scenarios")
    return 0
