"""The hindsight optimum's settings, shared by ``evgrid optimum`` and ``evgrid compare``."""

from __future__ import annotations

import argparse
from typing import Any

from evaluation.plan_options import (  # the defaults, defined once there
    DEFAULT_MAX_DEFER_MIN,
    DEFAULT_NODE_LIMIT,
    DEFAULT_STATIONS_PER_KIND,
    DEFAULT_TIME_LIMIT_S,
)


def add_optimum_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--node-limit", type=int, default=DEFAULT_NODE_LIMIT,
                   help="HiGHS branch-and-bound nodes per optimum solve (reproducible)")  # fmt: skip
    p.add_argument("--time-limit", type=float, default=DEFAULT_TIME_LIMIT_S,
                   help="[s] wall-clock safety net per optimum solve (machine-dependent)")  # fmt: skip
    p.add_argument("--stations-per-kind", type=int, default=DEFAULT_STATIONS_PER_KIND,
                   help="optimum: nearest stations offered per EV and charger kind")  # fmt: skip
    p.add_argument("--max-defer", type=int, default=DEFAULT_MAX_DEFER_MIN,
                   help="[min] optimum: longest total defer offered per EV")  # fmt: skip


def optimum_settings(args: argparse.Namespace) -> dict[str, Any]:
    """The checked settings as ``solve_episode`` keyword arguments."""
    if args.time_limit <= 0:
        raise ValueError("--time-limit must be > 0")
    if args.node_limit < 0:
        raise ValueError("--node-limit must be >= 0")
    if args.stations_per_kind < 1:
        raise ValueError("--stations-per-kind must be >= 1")
    if args.max_defer < 0:
        raise ValueError("--max-defer must be >= 0")
    return {
        "node_limit": args.node_limit,
        "time_limit_s": args.time_limit,
        "stations_per_kind": args.stations_per_kind,
        "max_defer_min": args.max_defer,
    }


def describe_settings(settings: dict[str, Any]) -> str:
    """One sentence for reports: the limits and the plan class."""
    return (
        f"Optimum settings: HiGHS node limit {settings['node_limit']} per solve "
        f"(wall-clock safety net {settings['time_limit_s']:g} s), "
        f"{settings['stations_per_kind']} nearest stations per charger kind, total "
        f"defers up to {settings['max_defer_min']} min."
    )
