"""The one episode loop: every evaluator, recorder and front end plays through it.

``drive(env, policy)`` is the decision loop (the policy answers each request of an
env already reset, until the episode ends); ``play_episode`` resets an env and
drives it, with hooks: ``on_reset(env)`` right after the reset (the comparison's
feeder log), ``on_step(action, result)`` after each decision (the optimum's plan
recorder, the labels). ``episode_record`` is the per-episode record they all write
(``evgrid eval``'s per-episode KPIs, ``evgrid compare``'s ``episodes.jsonl`` line,
with or without Ray, the labels' episode summary), and ``run_episode`` its summary
as a dataclass.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .actions import Action
from .config import SimConfig
from .env import EVGridEnv, StepResult
from .policies import Policy
from .scenarios import Scenario

OnStep = Callable[[Action | str, StepResult], None]


@dataclass(frozen=True)
class EpisodeResult:
    scenario: str
    seed: int
    policy: str
    ret: float  # [reward] sum over the episode
    kpis: dict[str, float]
    parts: dict[str, float]  # reward parts summed over the episode


def drive(
    env: EVGridEnv, policy: Policy, *, on_step: OnStep | None = None
) -> EVGridEnv:
    """Let ``policy`` answer every request of ``env`` (reset, and the policy reset
    for its seed) to the episode's end; ``on_step(action, result)`` sees each
    decision as it is applied. Returns ``env``."""
    obs = env.observation()
    while not env.done:
        action = policy.act(obs)
        res = env.step(action)
        if on_step is not None:
            on_step(action, res)
        obs = env.observation()
    return env


def play_episode(
    policy: Policy,
    scenario: str | Scenario,
    seed: int,
    config: SimConfig | None = None,
    *,
    on_reset: Callable[[EVGridEnv], None] | None = None,
    on_step: OnStep | None = None,
    reset_kwargs: dict[str, Any] | None = None,
) -> EVGridEnv:
    """Play one full episode of ``policy`` on (scenario, seed); the finished env.

    ``on_reset(env)`` runs right after the reset, before the policy's; ``on_step``
    as in ``drive``.
    """
    env = EVGridEnv(config)
    env.reset(seed=seed, scenario=scenario, **(reset_kwargs or {}))
    if on_reset is not None:
        on_reset(env)
    policy.reset(seed)
    return drive(env, policy, on_step=on_step)


def max_feeder_utilisation(env: EVGridEnv) -> list[float]:
    """Per tick so far, the highest feeder utilisation [0-1] (from the KPI history)."""
    return [float(max(u)) for u in env.kpis.feeder_util_history]


def episode_record(env: EVGridEnv, policy: str, seed: int) -> dict[str, Any]:
    """A played episode as the JSON-able record every evaluator writes: who, where,
    the grid model, the return, the KPIs, the reward parts, each tick's highest
    feeder utilisation and every EV's wait."""
    k = env.kpis
    assert env.scenario is not None
    return {
        "policy": policy,
        "scenario": env.scenario.name,
        "seed": seed,
        "grid": env.config.grid,
        "return": float(k.total_return),
        "kpis": {key: float(v) for key, v in env.kpi_summary().items()},
        "parts": {key: float(v) for key, v in k.parts_total.items()},
        "util": [round(u, 4) for u in max_feeder_utilisation(env)],
        "waits": [round(float(x), 1) for x in k.waits],
    }


def run_episode(
    policy: Policy, scenario: str | Scenario, seed: int, config: SimConfig | None = None
) -> EpisodeResult:
    """One full episode of ``policy`` on (scenario, seed), summarised: the numbers of
    its ``episode_record`` (the KPIs' counts kept as integers)."""
    env = play_episode(policy, scenario, seed, config)
    assert env.scenario is not None
    return EpisodeResult(env.scenario.name, seed, policy.name, float(env.kpis.total_return),
                         env.kpi_summary(), dict(env.kpis.parts_total))  # fmt: skip
