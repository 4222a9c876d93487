"""The page on an event loop of its own, in its own thread, so trainers and viewers
both make progress.

The OpenEnv server steps its WebSocket sessions on uvicorn's event loop, inline:
with 64 sessions stepping, every turn of that loop runs 64 steps before anything
else, and a frame of the page, which needs a dozen turns (the request, Gradio's
queue, the worker thread's result, the SSE message), waited about a second and a
half. Here the page's Gradio app (its routes, its queue, its startup tasks) runs
on a second loop; uvicorn's loop only moves bytes for it: a pump hands what the
client sends to the page's loop as it arrives, and another sends what the page
answers as soon as that loop gets a turn, without the page waiting for it.

``OwnLoop(app)`` is an ASGI app (HTTP only; Gradio here has no WebSocket);
``lifespan(parent, inner)`` wraps the parent app's lifespan to start the loop,
run ``inner``'s lifespan and startup on it, and stop both on shutdown.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from concurrent.futures import Future
from typing import Any

_END = object()  # the page's app returned


class OwnLoop:
    """Runs an ASGI app on a private event loop thread (``start`` before use)."""

    def __init__(self, app: Any, name: str = "evgrid-page-loop") -> None:
        self.app = app
        self.name = name
        self.loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    # --- The loop ----------------------------------------------------------------------
    def start(self) -> None:
        if self.loop is not None:
            return
        ready = threading.Event()

        def run() -> None:
            loop = asyncio.new_event_loop()
            asyncio.set_event_loop(loop)
            self.loop = loop
            ready.set()
            try:
                loop.run_forever()
                tasks = asyncio.all_tasks(loop)  # Gradio's queue, open streams
                for task in tasks:
                    task.cancel()
                loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
            finally:
                loop.close()

        self._thread = threading.Thread(target=run, name=self.name, daemon=True)
        self._thread.start()
        ready.wait()

    def stop(self) -> None:
        loop, self.loop = self.loop, None
        if loop is not None:
            loop.call_soon_threadsafe(loop.stop)
        if self._thread is not None:
            self._thread.join(10)

    def submit(self, coro: Awaitable[Any]) -> Future:
        assert self.loop is not None, "OwnLoop.start() first"
        return asyncio.run_coroutine_threadsafe(coro, self.loop)  # type: ignore[arg-type]

    # --- ASGI ----------------------------------------------------------------------------
    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        if self.loop is None:  # no lifespan (a test's client): start on first use
            self.start()
        outer = asyncio.get_running_loop()
        inner = self.loop
        assert inner is not None
        inbox: asyncio.Queue = asyncio.Queue()  # used on the page's loop only
        outbox: asyncio.Queue = asyncio.Queue()  # used on uvicorn's loop only

        async def page_receive() -> dict:
            return await inbox.get()

        gone = threading.Event()  # the client went away, or a send to it failed

        async def page_send(message: dict) -> None:
            if not gone.is_set():  # else dropped, as uvicorn's send drops them
                outer.call_soon_threadsafe(outbox.put_nowait, message)

        async def run_page() -> None:
            try:
                await self.app(scope, page_receive, page_send)
            finally:
                outer.call_soon_threadsafe(outbox.put_nowait, _END)

        async def pump_in() -> None:
            while True:
                message = await receive()
                left = message["type"] in ("http.disconnect", "websocket.disconnect")
                if left:
                    gone.set()
                inner.call_soon_threadsafe(inbox.put_nowait, message)
                if left:
                    return

        # The request's first message handed over now, not a turn of this loop
        # later (under load a turn is the slow part: 64 sessions' steps).
        first = await receive()
        left = first["type"] in ("http.disconnect", "websocket.disconnect")
        if left:
            gone.set()
        inner.call_soon_threadsafe(inbox.put_nowait, first)
        page = asyncio.run_coroutine_threadsafe(run_page(), inner)
        reader = asyncio.create_task(asyncio.sleep(0) if left else pump_in())
        try:
            while (message := await outbox.get()) is not _END:
                if not gone.is_set():
                    try:
                        await send(message)
                    except OSError:
                        gone.set()  # the rest is dropped
            await asyncio.wrap_future(page)  # the page's exception, if any
        finally:
            reader.cancel()
            if not page.done():
                page.cancel()


def lifespan(parent: Any, own: OwnLoop, inner: Any) -> None:
    """Make ``parent``'s lifespan start ``own`` and run the lifespan and startup
    events of ``inner`` (the Gradio app) on it, instead of on uvicorn's loop."""
    outer_lifespan = parent.router.lifespan_context

    async def enter(stack: contextlib.AsyncExitStack) -> None:
        await stack.enter_async_context(inner.router.lifespan_context(inner))
        blocks = inner.get_blocks()
        blocks.run_startup_events()
        await blocks.run_extra_startup_events()

    @contextlib.asynccontextmanager
    async def both(app: Any) -> AsyncIterator[Any]:
        async with outer_lifespan(app) as state:
            own.start()
            stack = contextlib.AsyncExitStack()
            await asyncio.wrap_future(own.submit(enter(stack)))
            try:
                yield state
            finally:
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(
                        asyncio.wrap_future(own.submit(stack.aclose())), 10
                    )
                own.stop()

    parent.router.lifespan_context = both
