"""Server options, light to import: ``evgrid --help`` must not load OpenEnv."""

from __future__ import annotations

import argparse

DEFAULT_MAX_SESSIONS = 128  # [sessions] 64 GRPO rollouts + reconnects + an evaluator
DEFAULT_SESSION_TIMEOUT_S = 300.0  # [s] idle time before a session is reaped


def add_serve_arguments(parser: argparse.ArgumentParser) -> None:
    """The serve options, shared by ``python server.py`` and ``evgrid serve``."""
    parser.add_argument(
        "--host",
        default="127.0.0.1",
        help="interface to bind (default 127.0.0.1, this machine only; 0.0.0.0 "
        "serves every interface, as the Docker image does)",
    )
    parser.add_argument("--port", type=int, default=8000, help="TCP port")
    parser.add_argument(
        "--max-sessions",
        type=int,
        default=None,
        help=f"concurrent WebSocket sessions (default {DEFAULT_MAX_SESSIONS}, "
        "or $EVGRID_MAX_SESSIONS)",
    )
    parser.add_argument(
        "--session-timeout",
        type=float,
        default=None,
        help=f"[s] idle time before a session is closed (default "
        f"{DEFAULT_SESSION_TIMEOUT_S:g}, or $EVGRID_SESSION_TIMEOUT_S)",
    )
    parser.add_argument(
        "--allowed-origins",
        default=None,
        help="comma-separated browser origins (https://host[:port]) allowed to open "
        "/ws, or '*' for any; clients that send no Origin (trainers, the Python "
        "client) are always let in (default none, or $EVGRID_ALLOWED_ORIGINS)",
    )
    parser.add_argument(
        "--ws-compression",
        action="store_true",
        help="offer WebSocket per-message-deflate (off: on a LAN it costs more CPU "
        "than it saves)",
    )
    parser.add_argument(
        "--log-level", default="info", help="uvicorn log level (default info)"
    )


def check_serve_args(args: argparse.Namespace) -> None:
    """Refuse bad options with a ValueError, before anything heavy is imported."""
    if not 0 < args.port < 65536:
        raise ValueError(f"port must be 1..65535, got {args.port}")
    if args.max_sessions is not None and args.max_sessions < 1:
        raise ValueError(f"max_sessions must be >= 1, got {args.max_sessions}")
    if args.session_timeout is not None and args.session_timeout <= 0:
        raise ValueError(f"session_timeout must be > 0, got {args.session_timeout}")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Run the EV Grid OpenEnv server.")
    add_serve_arguments(parser)
    return parser.parse_args(argv)
