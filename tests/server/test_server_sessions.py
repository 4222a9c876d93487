"""Concurrent sessions stay isolated; the session limit and idle timeout hold.

A slot is held exactly as long as a connection, so the cap counts the sessions
that can play: none is made without a socket, none outlives its idle timeout
while still playing, and none can be attached to by another connection.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from contextlib import ExitStack

import httpx
import pytest

pytest.importorskip("openenv")

from conftest import SMALL_MAX_SESSIONS, SMALL_TIMEOUT_S  # noqa: E402
from server_helpers import ask, check_step, open_session, reference, ws_url  # noqa: E402

from evgrid_openenv.client import EVGridClient  # noqa: E402


def test_server_two_interleaved_sessions_stay_isolated(server_url: str) -> None:
    runs = {
        seed: reference("greedy_eta", seed=seed, scenario="evening_peak", max_steps=60)[
            0
        ]
        for seed in (21, 22)
    }
    assert runs[21][0][-1] != runs[22][0][-1]  # different seeds, different episodes
    a = EVGridClient(server_url).sync()
    b = EVGridClient(server_url).sync()
    with a, b:
        check_step(a.reset(seed=21), runs[21][0])
        check_step(b.reset(seed=22), runs[22][0])
        for exp_a, exp_b in zip(runs[21][1:], runs[22][1:], strict=True):
            check_step(a.step(exp_a[0]), exp_a)  # lock-step: a, b, a, b, ...
            check_step(b.step(exp_b[0]), exp_b)
        assert (a.state().seed, b.state().seed) == (21, 22)


def test_server_32_concurrent_sessions_stay_isolated(server_url: str) -> None:
    scenarios = ("evening_peak", "heatwave", "festival_surge", "feeder_fault")
    plans = [
        (
            seed,
            scenarios[seed % 4],
            reference("greedy_eta", seed, scenarios[seed % 4], 40)[0],
        )
        for seed in range(100, 132)
    ]

    async def session(seed: int, scenario: str, expected: list) -> int:
        async with EVGridClient(server_url) as client:
            check_step(await client.reset(seed=seed, scenario=scenario), expected[0])
            for exp in expected[1:]:
                check_step(await client.step(exp[0]), exp)
                await asyncio.sleep(0)  # interleave with the other sessions
            state = await client.state()
            assert (state.seed, state.scenario) == (seed, scenario)
            return state.step_count

    async def all_sessions() -> list[int]:
        return await asyncio.gather(*(session(*plan) for plan in plans))

    counts = asyncio.run(all_sessions())
    assert counts == [len(plan[2]) - 1 for plan in plans]


def _open(client, stack: ExitStack) -> dict:
    """Open a WebSocket session on the in-process app; its reply to a reset."""
    ws = stack.enter_context(client.websocket_connect("/ws"))
    ws.send_text(json.dumps({"type": "reset", "data": {"seed": 1}}))
    return json.loads(ws.receive_text())


def test_server_session_limit_and_idle_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    from fastapi.testclient import TestClient

    from evgrid_openenv.app import build_app

    monkeypatch.setenv("EVGRID_MAX_SESSIONS", "1")  # from the environment, as in Docker
    app = build_app(session_timeout_s=1.0)
    with TestClient(app) as client, ExitStack() as sockets:
        reply = _open(client, sockets)
        assert reply["type"] == "observation"
        reply = _open(client, sockets)
        assert reply["type"] == "error" and reply["data"]["code"] == "CAPACITY_REACHED"
        assert "1" in reply["data"]["message"]
        # The idle first session is closed after 1 s, freeing the slot.
        deadline = time.monotonic() + 20
        while True:
            reply = _open(client, sockets)
            if reply["type"] == "observation" or time.monotonic() > deadline:
                break
            time.sleep(1)
        assert reply["type"] == "observation"


def test_server_build_app_rejects_bad_limits() -> None:
    from evgrid_openenv.app import build_app

    with pytest.raises(ValueError, match="max_sessions must be >= 1"):
        build_app(max_sessions=0)
    with pytest.raises(ValueError, match="session_timeout_s must be > 0"):
        build_app(session_timeout_s=0)


# --- The cap counts the sessions that can play ---------------------------------------


def _plays(ws) -> bool:
    """Whether a raw session still answers (an idle one is told so and closed)."""
    try:
        return ask(ws, {"type": "state"}, timeout=10)["type"] == "state"
    except Exception:  # closed: ConnectionClosed from the socket
        return False


def test_server_idle_sessions_close_so_the_cap_holds(small_server_url: str) -> None:
    # 4 slots, 1.5 s idle timeout. One session keeps playing, three go idle past the
    # timeout (and past OpenEnv's 5 s reaper, which dropped idle sessions from the
    # count while their sockets still played: 8 sessions at once with 4 slots).
    with ExitStack() as stack:
        first = [
            stack.enter_context(open_session(small_server_url, seed=i))
            for i in range(SMALL_MAX_SESSIONS)
        ]
        assert all(reply["type"] == "observation" for _, reply in first)
        busy, idle = first[0][0], [ws for ws, _ in first[1:]]
        deadline = time.monotonic() + SMALL_TIMEOUT_S + 5.5
        while time.monotonic() < deadline:  # busy: a message every 0.5 s
            assert ask(busy, {"type": "state"})["type"] == "state"
            time.sleep(0.5)
        for ws in idle:  # told why, then closed
            reply = json.loads(ws.recv(timeout=10))
            assert reply["data"]["code"] == "SESSION_ERROR"
            assert (
                f"idle for more than {SMALL_TIMEOUT_S:g} s" in reply["data"]["message"]
            )
        later = []
        for i in range(SMALL_MAX_SESSIONS):  # the freed slots, and no more
            later.append(stack.enter_context(open_session(small_server_url, 10 + i, 0)))
            assert ask(busy, {"type": "state"})["type"] == "state"
        playing = [ws for ws, _ in first if _plays(ws)]
        playing += [ws for ws, reply in later if reply["type"] == "observation"]
        assert len(playing) == SMALL_MAX_SESSIONS
        assert busy in playing
        assert later[-1][1]["data"]["code"] == "CAPACITY_REACHED"


def test_server_http_mcp_cannot_take_session_slots(small_server_url: str) -> None:
    # OpenEnv's /mcp made a session per call that no socket held: 4 calls filled
    # every slot until the idle timeout. Sessions are /ws connections only.
    for i in range(2 * SMALL_MAX_SESSIONS):
        body = {"jsonrpc": "2.0", "id": i, "method": "openenv/session/create"}
        reply = httpx.post(small_server_url + "/mcp", json=body, timeout=30).json()
        assert "result" not in reply
        assert reply["error"]["code"] == -32601  # method not found
        assert "not offered: a session is one /ws" in reply["error"]["message"]
    with ExitStack() as stack:
        for i in range(SMALL_MAX_SESSIONS):
            _, reply = stack.enter_context(open_session(small_server_url, seed=i))
            assert reply["type"] == "observation", reply


def test_server_a_session_cannot_be_attached_to(server_url: str) -> None:
    # A session belongs to its connection. OpenEnv handed a session's id out (an
    # mcp session/create message) and let a second socket attach with it and play.
    from websockets.sync.client import connect

    with open_session(server_url, seed=11) as (owner, _):
        ask(owner, {"type": "step", "data": {"text": "DEFER E1 15"}})
        rpc = {"jsonrpc": "2.0", "id": 1, "method": "openenv/session/create"}
        handed_out = ask(owner, {"type": "mcp", "data": rpc})["data"]
        for sid in (
            (handed_out.get("result") or {}).get("session_id"),
            str(uuid.uuid4()),
        ):
            with connect(ws_url(server_url) + f"?session_id={sid}") as thief:
                reply = ask(thief, {"type": "state"})
                assert reply["type"] == "error", reply  # not the owner's state
                assert reply["data"]["code"] == "SESSION_ERROR"
                assert (
                    "attaching to a session is not offered"
                    in (reply["data"]["message"])
                )
        assert "result" not in handed_out  # no id handed out
        state = ask(owner, {"type": "state"})["data"]
        assert (state["seed"], state["step_count"]) == (11, 1)
