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
    from evgrid_core.optional import require

    require("openenv", "evgrid serve", "server")
    from evgrid_openenv.app import serve

    return serve(args)
