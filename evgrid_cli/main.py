"""``evgrid``: one console script, one module per subcommand (``cmd_<name>.py``).

A subcommand module defines ``HELP`` (one line), ``add_arguments(parser)`` and
``run(args) -> int``. Modules are discovered, so adding a subcommand touches no
other file. Heavy imports belong inside ``run``.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
from collections.abc import Callable
from pathlib import Path

from evgrid_core.optional import DependencyNotInstalled

ORDER = (
    "list",
    "eval",
    "compare",
    "optimum",
    "labels",
    "distill",
    "bench",
    "serve",
    "train",
    "check",
)


def _commands() -> list[str]:
    found = [
        m.name[4:]
        for m in pkgutil.iter_modules([str(Path(__file__).parent)])
        if m.name.startswith("cmd_")
    ]
    return sorted(
        found, key=lambda n: (ORDER.index(n) if n in ORDER else len(ORDER), n)
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="evgrid", description="EV Grid Oracle: Bengaluru EV-charging dispatch."
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in _commands():
        try:
            mod = importlib.import_module(f"evgrid_cli.cmd_{name}")
        except ModuleNotFoundError as e:
            # A command whose package this install lacks (the server's image has no
            # training) is listed as such; the other commands still work.
            missing = (e.name or "").split(".")[0]
            if missing in ("", "evgrid_cli"):
                raise
            p = sub.add_parser(name, help=f"(not installed here: {missing})")
            p.set_defaults(_run=_not_installed(name, missing), _any_arguments=True)
            continue
        p = sub.add_parser(name, help=mod.HELP, description=mod.HELP)
        mod.add_arguments(p)
        p.set_defaults(_run=mod.run)
    return parser


def _not_installed(command: str, package: str) -> Callable[[argparse.Namespace], int]:
    def run(args: argparse.Namespace) -> int:
        raise ValueError(f"{command} needs the {package} package, not installed here")

    return run


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra and not getattr(args, "_any_arguments", False):
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    if not getattr(args, "_run", None):
        parser.print_help()
        return 2
    try:
        return int(args._run(args) or 0)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except (ValueError, DependencyNotInstalled) as e:  # say what, no traceback
        print(f"evgrid {args.command}: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
