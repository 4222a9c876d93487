"""The FastAPI app: OpenEnv's own ``create_app`` around ``EVGridEnvironment``.

Routes: WS /ws (one episode per connection: use this), POST /reset and /step
(stateless: each request gets a fresh environment), POST /mcp, GET /state,
/metadata, /health, /schema, /docs. /ws, /reset, /step and /mcp are this
package's own (``sessions``, ``http_routes``, by the rules of ``protocol``): OpenEnv
0.10.0's cannot be configured out of the faults in docs/server-upstream.md. The
rest is OpenEnv's.

Settings (argument, else environment variable, else default):
``EVGRID_MAX_SESSIONS`` (128: a GRPO run with 64 parallel rollouts plus room for
reconnects and an evaluator), ``EVGRID_SESSION_TIMEOUT_S`` (300 s without a message:
the session is closed and its slot given back), ``EVGRID_ALLOWED_ORIGINS`` (browser
origins allowed to open /ws; none by default, see ``guards``),
``EVGRID_HTTP_TIMEOUT_S`` (15 s to send a request's head, and the body of /reset,
/step or /mcp: ``transport``).

The transport's limits (the longest WebSocket message, the request deadline) are
uvicorn's settings: ``serve`` passes ``transport.uvicorn_options()``; started as
``uvicorn server:app``, pass ``transport.uvicorn_flags()`` as the Dockerfile does.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable

from fastapi import FastAPI
from openenv.core.env_server.http_server import create_app
from openenv.core.env_server.types import ConcurrencyConfig

from .app_args import (
    DEFAULT_MAX_SESSIONS,
    DEFAULT_SESSION_TIMEOUT_S,
    check_serve_args,
    parse_args,
)
from .environment import ENV_NAME, EVGridEnvironment
from .fast import freeze_startup_objects
from .guards import ServerGuards, parse_origins
from .http_routes import add_http_routes
from .models import EVGridAction, EVGridObservation, EVGridState
from .protocol import MAX_MESSAGE_CHARS, MESSAGE_TYPES
from .sessions import SessionLimits, WebSocketSessions
from .transport import WS_MAX_BYTES, http_timeout_s, log_config, uvicorn_options
from .warm import warm_core

_OWN_ROUTES = frozenset({"/ws", "/reset", "/step", "/mcp"})

_WS_DOC = f"""
## WebSocket /ws: one connection = one session = one episode

Send JSON text frames, each an object: `{{"type": "reset", "data": {{"seed": 7,
"scenario": "evening_peak"}}}}` (data as the /reset body), `{{"type": "step", "data":
{{"text": "DEFER E1 15"}}}}` (data as the /step body's `action`), `{{"type": "state"}}`,
`{{"type": "close"}}`, `{{"type": "mcp", "data": <JSON-RPC>}}`. Replies: `observation`,
`state`, `mcp` or `error` with `data.code` (INVALID_JSON, UNKNOWN_TYPE,
VALIDATION_ERROR, EXECUTION_ERROR; CAPACITY_REACHED and SESSION_ERROR close the
connection). An error means nothing changed and the session goes on. A message is
at most {MAX_MESSAGE_CHARS:,} characters (a longer one is an INVALID_JSON error); one
over {WS_MAX_BYTES:,} bytes is not read: the connection is closed with code 1009.
Types: {", ".join(MESSAGE_TYPES)}.
"""


def build_app(
    max_sessions: int | None = None,
    session_timeout_s: float | None = None,
    allowed_origins: str | None = None,
) -> FastAPI:
    """The server app; arguments left as None come from the environment variables."""
    if max_sessions is None:
        max_sessions = int(os.environ.get("EVGRID_MAX_SESSIONS", DEFAULT_MAX_SESSIONS))
    if session_timeout_s is None:
        session_timeout_s = float(
            os.environ.get("EVGRID_SESSION_TIMEOUT_S", DEFAULT_SESSION_TIMEOUT_S)
        )
    if allowed_origins is None:
        allowed_origins = os.environ.get("EVGRID_ALLOWED_ORIGINS", "")
    if max_sessions < 1:
        raise ValueError(f"max_sessions must be >= 1, got {max_sessions}")
    if session_timeout_s <= 0:
        raise ValueError(f"session_timeout_s must be > 0, got {session_timeout_s}")
    http_timeout_s()  # a bad $EVGRID_HTTP_TIMEOUT_S fails here, not per request
    app = create_app(
        EVGridEnvironment,
        EVGridAction,
        EVGridObservation,
        env_name=ENV_NAME,
        # OpenEnv's own sessions are no longer made (its /ws and /mcp are replaced).
        concurrency_config=ConcurrencyConfig(
            max_concurrent_envs=max_sessions, session_timeout=session_timeout_s
        ),
        state_cls=EVGridState,
    )
    app.router.routes[:] = [
        r for r in app.router.routes if getattr(r, "path", None) not in _OWN_ROUTES
    ]
    sessions = WebSocketSessions(SessionLimits(max_sessions, session_timeout_s))
    app.add_api_websocket_route("/ws", sessions.endpoint)
    add_http_routes(app)
    app.description = (app.description or "") + _WS_DOC
    app.add_middleware(ServerGuards, allowed_origins=parse_origins(allowed_origins))

    app.router.on_startup.append(warm_core)
    app.router.on_startup.append(freeze_startup_objects)  # a speed shortcut: fast.py
    return app


AppExtension = Callable[[FastAPI], FastAPI]  # e.g. server.py mounting the web page


def serve(args: argparse.Namespace, extend: AppExtension | None = None) -> int:
    """Run uvicorn until interrupted; ``extend`` adds routes to the app first."""
    import uvicorn

    check_serve_args(args)
    app = build_app(args.max_sessions, args.session_timeout, args.allowed_origins)
    if extend is not None:
        app = extend(app)
    uvicorn.run(
        app,
        host=args.host,
        port=args.port,
        log_level=args.log_level,
        log_config=log_config(args.log_level),
        ws_per_message_deflate=args.ws_compression,
        **uvicorn_options(),
    )
    return 0


def main(argv: list[str] | None = None, extend: AppExtension | None = None) -> int:
    """``python server.py``: bad options are a clean error (exit 2), as in the CLI."""
    args = parse_args(argv)
    try:
        check_serve_args(args)
    except ValueError as e:
        print(f"server.py: error: {e}", file=sys.stderr)
        return 2
    return serve(args, extend)
