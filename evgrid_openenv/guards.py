"""ASGI guards in front of the app: who may open a WebSocket, how much a body may be.

Origin: a browser sends the ``Origin`` of the page behind every WebSocket it opens,
and any page may open one to 127.0.0.1; trainers and the Python client send none.
So a handshake without ``Origin`` is let in, and one with an ``Origin`` only when it
is listed (``--allowed-origins`` / ``EVGRID_ALLOWED_ORIGINS``, comma-separated;
``*`` lets every page in). The refusal is HTTP 403 before any session is made (the
server log names the origin).

Body: an HTTP request that declares a body longer than ``protocol.MAX_MESSAGE_CHARS``
bytes (the limit of a /ws message) is answered 413 before it is read; the routes
in ``http_routes`` stop reading one sent without a length at the same limit.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from typing import Any

from .protocol import MAX_MESSAGE_CHARS, ProtocolError

Scope = dict[str, Any]
log = logging.getLogger("evgrid_openenv.guards")


def parse_origins(value: str | Iterable[str] | None) -> frozenset[str]:
    """'https://a.example, http://localhost:3000' as the set of allowed origins."""
    if value is None:
        return frozenset()
    items = value.split(",") if isinstance(value, str) else value
    return frozenset(normalise_origin(o) for o in items if o.strip())


def normalise_origin(origin: str) -> str:
    """An origin as browsers send it: scheme://host[:port], lower case, no slash."""
    return origin.strip().rstrip("/").lower()


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key == name:
            return value.decode("latin-1")
    return None


class ServerGuards:
    """The Origin check for WebSocket handshakes and the HTTP body limit."""

    def __init__(self, app: Any, allowed_origins: frozenset[str] = frozenset()):
        self.app = app
        self.allowed_origins = allowed_origins

    def origin_allowed(self, origin: str | None) -> bool:
        if origin is None or "*" in self.allowed_origins:
            return True
        return normalise_origin(origin) in self.allowed_origins

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] == "websocket":
            origin = _header(scope, b"origin")
            if not self.origin_allowed(origin):
                await _deny_websocket(receive, send, origin or "")
                return
        elif scope["type"] == "http" and scope["method"] in ("POST", "PUT", "PATCH"):
            declared = _header(scope, b"content-length") or ""
            if declared.isdigit() and int(declared) > MAX_MESSAGE_CHARS:
                await _too_large(send, int(declared))
                return
        await self.app(scope, receive, send)


async def _deny_websocket(receive: Any, send: Any, origin: str) -> None:
    await receive()  # websocket.connect
    log.info("WebSocket from Origin %r refused: not in the allowed origins", origin)
    # A close before the accept is HTTP 403. (A 403 with a body would say why, but
    # uvicorn 0.54 then logs "ASGI callable returned without completing handshake"
    # at ERROR for every refusal: docs/server-upstream.md.)
    await send({"type": "websocket.close", "code": 1008})


def too_large(size: str) -> ProtocolError:
    """The refusal of a body of ``size`` (e.g. '70,000 bytes')."""
    return ProtocolError(
        "INVALID_JSON",
        f"body of {size} is over the limit of {MAX_MESSAGE_CHARS:,} bytes: an "
        "action is one short line",
        http_status=413,
    )


async def _too_large(send: Any, size: int) -> None:
    body = json.dumps(too_large(f"{size:,} bytes").http_body()).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 413,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"connection", b"close"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
