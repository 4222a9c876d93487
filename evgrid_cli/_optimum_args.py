"""The hindsight optimum's settings, shared by ``evgrid optimum`` and ``evgrid compare``."""

from __future__ import annotations

import argparse
from typing import Any

DEFAULT_TIME_LIMIT_S = 30.0  # [s] HiGHS time limit per solve
DEFAULT_STATIONS_PER_KIND = 6  # nearest stations offered per EV and charger kind
DEFAULT_MAX_DEFER_MIN = 60  # [min] longest total defer offered per EV


def add_optimum_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--time-limit", type=float, default=DEFAULT_TIME_LIMIT_S,
                   help="[s] HiGHS time limit per optimum solve")  # fmt: skip
    p.add_argument("--stations-per-kind", type=int, default=DEFAULT_STATIONS_PER_KIND,
                   help="optimum: nearest stations offered per EV and charger kind")  # fmt: skip
    p.add_argument("--max-defer", type=int, default=DEFAULT_MAX_DEFER_MIN,
                   help="[min] optimum: longest total defer offered per EV")  # fmt: skip


def optimum_settings(args: argparse.Namespace) -> dict[str, Any]:
    """The checked settings as ``solve_episode`` keyword arguments."""
    if args.time_limit <= 0:
        raise ValueError("--time-limit must be > 0")
    if args.stations_per_kind < 1:
        raise ValueError("--stations-per-kind must be >= 1")
    if args.max_defer < 0:
        raise ValueError("--max-defer must be >= 0")
    return {
        "time_limit_s": args.time_limit,
        "stations_per_kind": args.stations_per_kind,
        "max_defer_min": args.max_defer,
    }
