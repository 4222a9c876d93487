"""``evgrid serve``: run the OpenEnv server (same as ``python server.py``)."""

from __future__ import annotations

import argparse

HELP = "run the OpenEnv server (WebSocket sessions for RL trainers)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    # From the light module: the app itself loads OpenEnv (seconds).
    from evgrid_openenv.app_args import add_serve_arguments

    add_serve_arguments(parser)


def run(args: argparse.Namespace) -> int:
    from evgrid_openenv.app_args import check_serve_args

    check_serve_args(args)  # a bad option fails at once, not after OpenEnv loads
    try:
        from evgrid_openenv.app import serve
    except ImportError as e:
        raise SystemExit(
            f"evgrid serve needs the server extra ({e}); install it with "
            "`python3 -m pip install -e '.[server]'`"
        ) from None
    return serve(args)
