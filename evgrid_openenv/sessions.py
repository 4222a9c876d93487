"""The /ws endpoint: one WebSocket connection = one session = one environment.

Replaces OpenEnv 0.10.0's /ws handler (same messages, same replies) for what that
handler cannot be configured out of (docs/server-upstream.md):

- a message that is not of the documented shape gets an error naming the problem
  and the session goes on (there, a binary frame, a JSON array or deep nesting
  ended the session);
- a slot is held exactly as long as the connection: a session idle past the
  timeout is told so and closed, so the count is the sessions that can play
  (there, idle sessions left the count while their sockets still played);
- a session belongs to its connection: there is no session id to attach with
  (there, ``?session_id=`` attached a second client to a running session).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fastapi import WebSocket
from starlette.websockets import WebSocketDisconnect

from . import protocol
from .environment import EVGridEnvironment
from .protocol import ProtocolError, encode

log = logging.getLogger("evgrid_openenv.sessions")

_CLOSED = (WebSocketDisconnect, RuntimeError, OSError)  # the client is gone
_REFUSE_TIMEOUT_S = 5.0  # [s] to send a refusal to a client that may not read


@dataclass(frozen=True)
class SessionLimits:
    """The settings' values (defaults in ``app_args``)."""

    max_sessions: int  # [sessions] connections playing at once
    idle_timeout_s: float  # [s] without a message after a reply: the session closes


class Session:
    """One connection's environment; answers one message at a time, synchronously."""

    def __init__(self, env_factory: Callable[[], EVGridEnvironment]) -> None:
        self._factory = env_factory
        self.env = env_factory()

    def answer(self, message: dict[str, Any]) -> str | None:
        """The reply frame to one received message; None for a close message."""
        try:
            kind, data = protocol.read_frame(message)
            if kind == "step":
                action = protocol.step_action(data)
                return encode(
                    {"type": "observation", "data": protocol.step(self.env, action)}
                )
            if kind == "reset":
                return encode(
                    {"type": "observation", "data": protocol.reset(self.env, data)}
                )
            if kind == "state":
                return encode({"type": "state", "data": self.env.state.model_dump()})
            if kind == "mcp":
                return encode({"type": "mcp", "data": protocol.mcp_reply(data)})
            return None  # close
        except ProtocolError as e:
            return encode(e.ws_frame())
        except Exception as e:  # a defect: the episode's state is unknown, drop it
            log.exception("message failed; the session's episode is dropped")
            self.env.close()
            self.env = self._factory()
            return encode(
                {
                    "type": "error",
                    "data": {
                        "code": "SESSION_ERROR",
                        "message": f"internal error ({type(e).__name__}); the "
                        "episode was dropped: send reset",
                    },
                }
            )


class WebSocketSessions:
    """The /ws route and the count of its sessions."""

    def __init__(
        self,
        limits: SessionLimits,
        env_factory: Callable[[], EVGridEnvironment] = EVGridEnvironment,
    ) -> None:
        self.limits = limits
        self.active = 0  # sessions holding a slot (touched on the event loop only)
        self._factory = env_factory

    async def endpoint(self, websocket: WebSocket) -> None:
        await websocket.accept()
        if "session_id" in websocket.query_params:
            await _refuse(
                websocket,
                "SESSION_ERROR",
                "attaching to a session is not offered: each /ws connection is its "
                "own session; connect without session_id",
            )
            return
        if self.active >= self.limits.max_sessions:
            n = self.limits.max_sessions
            await _refuse(
                websocket,
                "CAPACITY_REACHED",
                f"Server at capacity: {self.active}/{n} sessions active. Cannot "
                "accept new connections.",
                active_sessions=self.active,
                max_sessions=n,
            )
            return
        self.active += 1  # no await since the check: no other session got between
        session = Session(self._factory)
        try:
            await self._play(websocket, session)
        except _CLOSED:
            pass
        finally:
            self.active -= 1
            session.env.close()

    async def _play(self, websocket: WebSocket, session: Session) -> None:
        idle_s = self.limits.idle_timeout_s
        receive, send = websocket.receive, websocket.send_text
        loop = asyncio.get_running_loop()
        try:
            # One deadline per connection, moved on after each reply (cheaper than
            # a timeout per receive): idle = no message for idle_s after a reply.
            async with asyncio.timeout(idle_s) as deadline:
                while True:
                    message = await receive()
                    if message["type"] == "websocket.disconnect":
                        return
                    reply = session.answer(message)
                    if reply is None:
                        await websocket.close(1000)
                        return
                    await send(reply)
                    deadline.reschedule(loop.time() + idle_s)
        except TimeoutError:
            await _refuse(
                websocket,
                "SESSION_ERROR",
                f"session idle for more than {idle_s:g} s: closed, its slot "
                "given back; connect again and reset to play",
                close_code=1001,
            )


async def _refuse(
    websocket: WebSocket,
    code: str,
    message: str,
    close_code: int = 1008,
    **fields: Any,
) -> None:
    """Send an error frame, then close the connection (it holds no session).

    Bounded in time: a client that stopped reading cannot hold the handler (and
    so its slot) here; uvicorn drops the connection when the handler returns.
    """
    frame = {"type": "error", "data": {"message": message, "code": code, **fields}}
    try:
        async with asyncio.timeout(_REFUSE_TIMEOUT_S):
            await websocket.send_text(encode(frame))
            await websocket.close(close_code)
    except (TimeoutError, *_CLOSED):
        pass
