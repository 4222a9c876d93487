"""The page's own event loop (``own_loop.OwnLoop``): the app runs on the page's loop
in its own thread, never on the caller's; what it sends reaches the client in
order; the client's body and its leaving reach the app; an app's error is the
caller's; and the page keeps answering while the caller's loop is busy."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from evgrid_web.own_loop import OwnLoop


def run(coro):  # noqa: ANN001, ANN201
    """``asyncio.run`` in a thread of its own (Playwright's sync API, used by
    other tests in this session, keeps a loop running in the main thread)."""
    out: dict = {}

    def main() -> None:
        try:
            out["value"] = asyncio.run(coro)
        except BaseException as e:  # noqa: BLE001  # raised again below
            out["error"] = e

    t = threading.Thread(target=main)
    t.start()
    t.join()
    if "error" in out:
        raise out["error"]
    return out["value"]


def http_scope(path: str = "/") -> dict:
    return {"type": "http", "method": "POST", "path": path, "headers": []}


class Recorder:
    """An ASGI app that echoes the body in three chunks and records its loop."""

    def __init__(self) -> None:
        self.loops: list = []
        self.threads: list[int] = []
        self.after_body: list[dict] = []

    async def __call__(self, scope, receive, send):  # noqa: ANN001
        self.loops.append(asyncio.get_running_loop())
        self.threads.append(threading.get_ident())
        body = b""
        while True:
            m = await receive()
            body += m.get("body", b"")
            if not m.get("more_body"):
                break
        await send({"type": "http.response.start", "status": 200, "headers": []})
        for i in range(3):
            await send({"type": "http.response.body", "body": body + bytes([48 + i]),
                        "more_body": True})  # fmt: skip
        await send({"type": "http.response.body", "body": b"", "more_body": False})
        self.after_body.append(await receive())  # the client leaving


async def call(app, chunks: list[bytes]) -> list[dict]:  # noqa: ANN001
    incoming = [
        {"type": "http.request", "body": c, "more_body": i < len(chunks) - 1}
        for i, c in enumerate(chunks)
    ] + [{"type": "http.disconnect"}]
    sent: list[dict] = []

    async def receive() -> dict:
        await asyncio.sleep(0.01)
        return incoming.pop(0) if incoming else await asyncio.Event().wait()

    async def send(message: dict) -> None:
        sent.append(message)

    await app(http_scope(), receive, send)
    sent.append({"caller_thread": threading.get_ident()})
    return sent


def test_the_app_runs_on_the_pages_loop_and_its_messages_arrive_in_order():
    rec = Recorder()
    own = OwnLoop(rec)
    try:
        *sent, caller = run(call(own, [b"ab", b"cd"]))
        assert rec.loops == [own.loop] and rec.threads[0] != caller["caller_thread"]
        assert [m.get("body") for m in sent] == [
            None,
            b"abcd0",
            b"abcd1",
            b"abcd2",
            b"",
        ]
        assert rec.after_body == [{"type": "http.disconnect"}]
    finally:
        own.stop()


def test_an_apps_error_is_the_callers():
    async def broken(scope, receive, send):  # noqa: ANN001, ANN202
        raise ValueError("page broke")

    own = OwnLoop(broken)
    try:
        with pytest.raises(ValueError, match="page broke"):
            run(call(own, [b""]))
    finally:
        own.stop()


def test_the_page_answers_while_the_callers_loop_is_busy():
    """The caller's loop runs 2 s of work without a pause (64 stepping sessions,
    in the worst case): the page's app finishes its own work meanwhile."""
    done = threading.Event()

    async def page(scope, receive, send):  # noqa: ANN001, ANN202
        await asyncio.sleep(0.05)  # needs turns of its loop: the page's
        done.set()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    own = OwnLoop(page)

    async def main() -> float:
        task = asyncio.create_task(call(own, [b""]))
        await asyncio.sleep(0.05)  # the request handed to the page
        t0 = time.monotonic()
        while time.monotonic() - t0 < 2.0 and not done.is_set():
            time.sleep(0.01)  # the caller's loop gets no turn
        waited = time.monotonic() - t0
        await task
        return waited

    try:
        assert run(main()) < 2.0 and done.is_set()
    finally:
        own.stop()
