"""Concurrent sessions stay isolated; the session limit and idle timeout hold."""

from __future__ import annotations

import asyncio
import json
import time
from contextlib import ExitStack

import pytest

pytest.importorskip("openenv")

from server_helpers import check_step, reference  # noqa: E402

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
        # The idle first session is reaped (checked every 5 s), freeing the slot.
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
