"""How uvicorn must run the app: the transport's limits, for every way it is started.

uvicorn's defaults leave two edges open (issue 30): a WebSocket message may be
16 MiB, far above the protocol's limit (one such message raised the server's RSS
by 30 MiB for good), and a connection that never completes its request head is
held forever (h11 has no header timeout; uvicorn's keep-alive timeout starts only
after a response, and any byte received cancels it).

- ``WS_MAX_BYTES``: the longest WebSocket message uvicorn reads, 4 bytes (UTF-8's
  longest character) for each of the protocol's ``MAX_MESSAGE_CHARS`` characters, so
  every message within the protocol's limit arrives. Between the two limits a
  message is answered with an error frame and the session goes on; above this one
  uvicorn closes the connection with 1009 (message too big) without reading the
  message, and the session ends.
- ``HeadTimeoutH11Protocol``: uvicorn's h11 protocol with a deadline for each
  request head, ``http_timeout_s()`` from the connection's start or from the end of
  the previous response; past it the connection is closed. The body of /reset,
  /step and /mcp has the same deadline (``http_routes.read_body``: 408).

``uvicorn_options()`` is what ``app.serve`` passes to ``uvicorn.run`` (``python
server.py``, ``evgrid serve``); ``uvicorn_flags()`` the same as uvicorn's
command-line flags (the Dockerfile's CMD; a test keeps the two equal). A bare
``uvicorn server:app`` runs with uvicorn's defaults instead (16 MiB messages, no
deadline for a request head). ``log_config`` writes this package's lines in
uvicorn's format (``serve`` passes it; else Python shows warnings and worse bare).
"""

from __future__ import annotations

import asyncio
import copy
import logging
import os
from typing import Any

from uvicorn.config import LOGGING_CONFIG
from uvicorn.protocols.http.h11_impl import H11Protocol

from .protocol import MAX_MESSAGE_CHARS

WS_MAX_BYTES = 4 * MAX_MESSAGE_CHARS  # [bytes] 262,144: uvicorn --ws-max-size
DEFAULT_HTTP_TIMEOUT_S = 15.0  # [s] to send a request's head, and a body read here
HTTP_TIMEOUT_ENV = "EVGRID_HTTP_TIMEOUT_S"

log = logging.getLogger("evgrid_openenv.transport")


def http_timeout_s() -> float:
    """[s] the request head and body deadline: ``$EVGRID_HTTP_TIMEOUT_S`` or 15."""
    value = float(os.environ.get(HTTP_TIMEOUT_ENV, DEFAULT_HTTP_TIMEOUT_S))
    if not value > 0:
        raise ValueError(f"{HTTP_TIMEOUT_ENV} must be > 0, got {value}")
    return value


class HeadTimeoutH11Protocol(H11Protocol):
    """uvicorn's h11 protocol; a request head must be complete within the deadline."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.head_timeout_s = http_timeout_s()
        self.head_timer: asyncio.TimerHandle | None = None

    def arm_head_timer(self) -> None:
        self.disarm_head_timer()
        self.head_timer = self.loop.call_later(self.head_timeout_s, self.head_expired)

    def disarm_head_timer(self) -> None:
        if self.head_timer is not None:
            self.head_timer.cancel()
            self.head_timer = None

    def head_expired(self) -> None:
        self.head_timer = None
        if not self.transport.is_closing():
            log.warning(
                "%s: no complete request within %g s: connection closed",
                f"{self.client[0]}:{self.client[1]}" if self.client else "client",
                self.head_timeout_s,
            )
            self.transport.close()

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self.arm_head_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        self.disarm_head_timer()
        super().connection_lost(exc)

    def handle_events(self) -> None:
        scope = self.scope
        super().handle_events()
        if self.scope is not scope:  # a request head arrived (or a WebSocket upgrade)
            self.disarm_head_timer()

    def on_response_complete(self) -> None:
        # Armed first: the next request's head (or the rest of a body the app did not
        # read) has the deadline; a pipelined head handled just below disarms it.
        self.arm_head_timer()
        super().on_response_complete()


_PROTOCOL = f"{__name__}:{HeadTimeoutH11Protocol.__name__}"


def uvicorn_options() -> dict[str, Any]:
    """The ``uvicorn.run`` keywords that bound the transport."""
    return {"http": HeadTimeoutH11Protocol, "ws_max_size": WS_MAX_BYTES}


def log_config(level: str) -> dict[str, Any]:
    """uvicorn's logging, with this package's lines (``evgrid_openenv.*``) at ``level``
    beside uvicorn's (Python's default shows only warnings and worse)."""
    config = copy.deepcopy(LOGGING_CONFIG)
    config["loggers"]["evgrid_openenv"] = {
        "handlers": ["default"],
        "level": level.upper(),
        "propagate": False,
    }
    return config


def uvicorn_flags() -> list[str]:
    """The same as uvicorn's command-line flags (``uvicorn server:app ...``)."""
    return ["--http", _PROTOCOL, "--ws-max-size", str(WS_MAX_BYTES)]
