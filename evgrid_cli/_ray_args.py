"""``--ray [ADDRESS]``, shared by ``evgrid compare`` and ``evgrid labels``: one
definition of the option and of the address it names."""

from __future__ import annotations

import argparse


def add_ray_argument(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument(
        "--ray",
        nargs="?",
        const="local",
        default=None,
        metavar="ADDRESS",
        help=f"{what} as Ray tasks: local Ray, or the cluster at ADDRESS "
        "(the rl extra; the same files as without)",
    )


def ray_address(args: argparse.Namespace) -> str | None:
    """The cluster address ``--ray`` named (None: a local Ray)."""
    return None if args.ray == "local" else args.ray
