"""The ASGI guard in front of the page's Gradio app: only the routes the page uses,
ids and bodies checked before Gradio sees them, and each tab's end noticed.

Gradio serves far more than this page needs (uploads, deep links that write the
session's values to disk, a proxy, run history, vibe editing...). The page uses
its static files and config, ``/gradio_api/info``, ``queue/join`` and
``queue/data``, ``cancel``, ``reset``, ``heartbeat/<id>`` and ``file=`` (the MP4
download); every other ``/gradio_api`` route is refused with 404, uploads with 403
(nothing on the page takes a file), and anything but GET and HEAD outside
``/gradio_api`` with 405.

A session id (Gradio's ``session_hash``, chosen by the browser) must be 1 to 64
letters, digits, ``-`` or ``_``; a request body is read at most ``MAX_BODY_BYTES``
bytes, counted as they arrive (a chunked body has no Content-Length to trust);
``queue/join`` must name one of the page's own functions. A refusal is a 4xx with
a JSON reason and one log line, before Gradio runs.

The browser holds ``heartbeat/<id>`` open while its tab lives; when the last one
of an id ends, ``on_gone(id)`` is called (the page closes that tab's episodes).
Gradio's own ``unload`` fires when *any* heartbeat of an id ends, so whoever knew
a tab's id could close it by opening and dropping one; counting them here cannot.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
from collections.abc import Callable, Collection
from typing import Any
from urllib.parse import parse_qs

from starlette.requests import ClientDisconnect

log = logging.getLogger("evgrid_web.guard")
Scope = dict[str, Any]

MAX_BODY_BYTES = 64 * 1024  # [bytes] a queue/join body: a few short inputs
SESSION_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
API = "/gradio_api/"
# The /gradio_api routes the page's browser side uses, by method (the rest: 404).
API_GET = ("info", "queue/data", "heartbeat/", "file=", "startup-events", "app_id")
API_POST = ("queue/join", "cancel", "reset")
# Outside /gradio_api: the page itself, its config, theme and static files.
PAGE_GET = ("", "config", "theme.css", "favicon.ico", "manifest.json", "robots.txt",
            "assets/", "static/", "svelte/", "custom_component/", "pwa_icon")  # fmt: skip


def valid_session_id(value: object) -> bool:
    return isinstance(value, str) and SESSION_ID.fullmatch(value) is not None


class Refused(Exception):
    """A request the guard answers itself: HTTP ``status`` with ``reason``."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status, self.reason = status, reason


class PageGuard:
    """Wraps the page's Gradio ASGI app (mounted at ``/web``)."""

    def __init__(
        self,
        app: Any,
        fn_ids: Callable[[], Collection[int]],
        on_gone: Callable[[str], Any] | None = None,
    ) -> None:
        self.app = app
        self.fn_ids = fn_ids  # the page's event functions (read per request)
        self.on_gone = on_gone
        self.heartbeats: dict[str, int] = {}  # session id -> open heartbeats

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)  # lifespan; Gradio has no WebSocket
            return
        path = _route_path(scope)
        try:
            route = self.check_route(scope["method"], path, scope)
            if route in API_POST:
                data, receive = await checked_body(receive)
                if route == "queue/join":
                    self.check_join(data)
        except Refused as e:
            log.info("page: %s %s refused (%d): %s", scope["method"],
                     path[:80], e.status, e.reason)  # fmt: skip
            await _answer(send, e.status, e.reason)
            return
        if route == "heartbeat/":
            await self.heartbeat(path[len(API + "heartbeat/") :], scope, receive, send)
            return
        await self.app(scope, receive, send)

    # --- Routes ----------------------------------------------------------------------
    def check_route(self, method: str, path: str, scope: Scope) -> str:
        """The allowed route ``path`` is (its key), else ``Refused``."""
        if not path.startswith(API):
            if method not in ("GET", "HEAD"):
                raise Refused(405, "not a route of this page")
            rest = path.lstrip("/").rstrip("/")
            if not any(rest == r or _under(rest, r) for r in PAGE_GET):
                raise Refused(404, "not a route of this page")
            return ""
        rest = path[len(API) :]
        if rest.startswith(("upload", "upload_progress")):
            raise Refused(403, "this page takes no uploads")
        allowed = API_POST if method == "POST" else API_GET
        if method not in ("GET", "HEAD", "POST"):
            allowed = ()
        route = next((r for r in allowed if rest == r or _under(rest, r)), None)
        if route is None:
            raise Refused(404, "not a route of this page")
        if route == "heartbeat/" and not valid_session_id(rest[len(route) :]):
            raise Refused(400, "bad session id")
        if route == "queue/data":
            query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
            ids = query.get("session_hash", [])
            if len(ids) != 1 or not valid_session_id(ids[0]):
                raise Refused(400, "bad session id")
        return route

    def check_join(self, data: dict) -> None:
        """A queue/join body: a session id, one of the page's functions, a list."""
        if "session_hash" not in data:
            raise Refused(400, "bad session id")
        fn = data.get("fn_index")
        if isinstance(fn, bool) or not isinstance(fn, int) or fn not in self.fn_ids():
            raise Refused(404, "no such function on this page")
        if not isinstance(data.get("data"), list):
            raise Refused(400, "data must be a list")

    # --- Heartbeats ------------------------------------------------------------------
    async def heartbeat(self, tab: str, scope: Scope, receive: Any, send: Any) -> None:
        """Gradio's heartbeat stream, ended as soon as its client leaves (Gradio
        itself notices only when its next beat, 15 s on, fails to send)."""
        self.heartbeats[tab] = self.heartbeats.get(tab, 0) + 1
        leaving = asyncio.Event()

        async def page_receive() -> dict:
            await leaving.wait()
            return {"type": "http.disconnect"}

        async def watch() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass
            leaving.set()

        stream = asyncio.ensure_future(self.app(scope, page_receive, send))
        watcher = asyncio.ensure_future(watch())
        try:
            await asyncio.wait({stream, watcher}, return_when=asyncio.FIRST_COMPLETED)
            if not stream.done():
                stream.cancel()
            with contextlib.suppress(asyncio.CancelledError, OSError, ClientDisconnect):
                await stream  # the stream's end, however it came
        finally:
            watcher.cancel()
            stream.cancel()
            left = self.heartbeats[tab] - 1
            if left:
                self.heartbeats[tab] = left
            else:
                del self.heartbeats[tab]
                if self.on_gone is not None:
                    await asyncio.shield(asyncio.to_thread(self.on_gone, tab))


def _under(rest: str, route: str) -> bool:
    return route.endswith(("/", "=")) and rest.startswith(route)


def _route_path(scope: Scope) -> str:
    """The path inside the mount (Starlette keeps the full path and sets
    ``root_path`` to the mount's)."""
    path, root = scope.get("path", ""), scope.get("root_path", "")
    return path[len(root) :] or "/" if root and path.startswith(root) else path


async def checked_body(receive: Any) -> tuple[dict, Any]:
    """The body read (at most ``MAX_BODY_BYTES``) and checked as a JSON object with
    a good session id if it names one; a ``receive`` that hands it on again."""
    body, receive = await _read_body(receive)
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        raise Refused(400, "the body is not JSON") from None
    if not isinstance(data, dict):
        raise Refused(400, "the body is not a JSON object")
    if "session_hash" in data and not valid_session_id(data["session_hash"]):
        raise Refused(400, "bad session id")
    return data, receive


async def _read_body(receive: Any) -> tuple[bytes, Any]:
    chunks, size = [], 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise Refused(400, "the client went away")
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            raise Refused(413, f"body over {MAX_BODY_BYTES:,} bytes")
        chunks.append(chunk)
        if not message.get("more_body", False):
            break
    body = b"".join(chunks)
    sent = False

    async def replay() -> dict:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return body, replay


async def _answer(send: Any, status: int, reason: str) -> None:
    body = json.dumps({"detail": reason}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
