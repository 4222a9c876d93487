"""Shared by the server tests: servers, raw sessions, reference runs, comparison."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import pytest

from evgrid_core import EVGridEnv, format_action
from evgrid_core.policies import make_policy

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_healthy(url: str, proc: subprocess.Popen, timeout_s: float = 600.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"server at {url} not healthy after {timeout_s:.0f} s")


def uvicorn_cmd(port: int, log_level: str = "warning") -> list[str]:
    """``uvicorn server:app`` with the transport's flags, as the Dockerfile runs it."""
    from evgrid_openenv.transport import uvicorn_flags  # needs the server extra

    return [sys.executable, "-m", "uvicorn", "server:app", "--host", "127.0.0.1",
            "--port", str(port), "--log-level", log_level, *uvicorn_flags()]  # fmt: skip


@contextmanager
def running_server(
    log_dir: Path, settings: dict[str, str], cmd: list[str] | None = None
) -> Iterator[str]:
    """A server with ``settings`` in its environment; its URL.

    ``cmd(port)`` starts it (default ``uvicorn_cmd``). On exit the server is
    stopped and its log checked: a traceback means some request crashed a handler.
    """
    port = free_port()
    log = log_dir / "uvicorn.log"
    env = {
        **os.environ,
        "EVGRID_SESSION_TIMEOUT_S": "120",
        "ENABLE_WEB_INTERFACE": "false",
        **settings,
    }
    argv = [a.replace("{port}", str(port)) for a in cmd] if cmd else uvicorn_cmd(port)
    with log.open("w") as out:
        proc = subprocess.Popen(
            argv, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT
        )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(url, proc)
        warm_up(url)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    assert "Traceback" not in log.read_text(), log.read_text()[-4000:]


# --- Raw /ws sessions ---------------------------------------------------------------


def warm_up(url: str, timeout_s: float = 600.0) -> None:
    """One reset and step, so that the tests' timeouts never meet the core's first
    use in a process (numba compiles its kernels then, or loads them from its cache:
    about a minute of CPU on a fresh checkout)."""
    from websockets.sync.client import connect

    # No pings: the server answers none while the first reset compiles.
    with connect(ws_url(url), ping_interval=None) as ws:
        ask(ws, {"type": "reset", "data": {"seed": 0}}, timeout=timeout_s)
        ask(ws, {"type": "step", "data": {"text": "DEFER E1 15"}}, timeout=timeout_s)


def ws_url(url: str) -> str:
    return url.replace("http", "ws", 1) + "/ws"


def ask(ws: Any, frame: str | bytes | dict, timeout: float = 30) -> dict:
    """Send one frame (a dict is written as JSON) and read the reply.

    A refused connection may be closed before the frame is sent; its error frame
    is read all the same.
    """
    from websockets.exceptions import ConnectionClosed

    with suppress(ConnectionClosed):
        ws.send(json.dumps(frame) if isinstance(frame, dict) else frame)
    return json.loads(ws.recv(timeout=timeout))


@contextmanager
def open_session(url: str, seed: int, wait_s: float = 5.0, **connect_kw: Any):
    """A raw /ws connection with an episode reset to ``seed``: yields (socket, reply).

    Retries while the server is full for up to ``wait_s`` (a socket a test closed
    a moment ago may not have given its slot back yet); then yields the refusal.
    """
    from websockets.sync.client import connect

    deadline = time.monotonic() + wait_s
    while True:
        with connect(ws_url(url), **connect_kw) as ws:
            reply = ask(ws, {"type": "reset", "data": {"seed": seed}})
            full = reply["type"] == "error" and reply["data"]["code"] == (
                "CAPACITY_REACHED"
            )
            if not full or time.monotonic() > deadline:
                yield ws, reply
                return
        time.sleep(0.2)


def as_line(action: object) -> str:
    return action if isinstance(action, str) else format_action(action)  # type: ignore[arg-type]


def as_typed(line: str):  # -> EVGridAction
    """The typed wire form of a canonical line (what a non-LLM agent sends)."""
    from evgrid_openenv.models import EVGridAction  # needs the server extra

    word, *rest = line.split()
    if word == "ROUTE":
        return EVGridAction(
            command="ROUTE",
            ev=int(rest[0][1:]),
            station=int(rest[1][1:]),
            charger=rest[2],
        )
    if word == "DEFER":
        return EVGridAction(command="DEFER", ev=int(rest[0][1:]), minutes=int(rest[1]))
    return EVGridAction(
        command="LOAD_SHIFT",
        station=int(rest[0][1:]),
        cap_pct=int(rest[1]),
        minutes=int(rest[2]),
    )


def reference(policy: str, seed: int, scenario: str, max_steps: int | None = None):
    """The in-process trajectory: (line, reward, done, parts, valid, reason, prompt)."""
    env = EVGridEnv()
    obs = env.reset(seed=seed, scenario=scenario)
    p = make_policy(policy)
    p.reset(seed)
    steps = [(None, None, env.done, None, None, None, env.render_text())]
    while not env.done and (max_steps is None or len(steps) <= max_steps):
        line = as_line(p.act(obs))
        res = env.step(line)
        obs = env.observation()
        info = res.info
        steps.append(
            (
                line,
                res.reward,
                res.done,
                info["reward_parts"],
                info["valid"],
                info["reason"],
                env.render_text(),
            )
        )
    return steps, env


def check_step(result, expected) -> None:
    line, reward, done, parts, valid, reason, prompt = expected
    obs = result.observation
    assert result.done == done
    assert obs.prompt == prompt
    if line is None:  # the reset observation
        assert obs.valid is None and obs.reward is None and obs.action is None
        return
    assert result.reward == pytest.approx(reward, abs=1e-12)
    assert obs.valid == valid and obs.reason == reason
    assert obs.model_dump()["reward_parts"] == pytest.approx(parts, abs=1e-12)
    assert sum(obs.model_dump()["reward_parts"].values()) == pytest.approx(
        reward, abs=1e-9
    )
