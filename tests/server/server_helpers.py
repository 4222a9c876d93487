"""Shared by the server tests: in-process reference runs and step comparison."""

from __future__ import annotations

import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from evgrid_core import EVGridEnv, format_action
from evgrid_core.policies import make_policy

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_healthy(url: str, proc: subprocess.Popen, timeout_s: float = 90.0) -> None:
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
