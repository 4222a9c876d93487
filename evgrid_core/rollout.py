"""Run policies over episodes: the one loop every evaluator uses."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .actions import Action
from .config import SimConfig
from .env import EVGridEnv, StepResult
from .policies import Policy
from .scenarios import Scenario


@dataclass(frozen=True)
class EpisodeResult:
    scenario: str
    seed: int
    policy: str
    ret: float  # [reward] sum over the episode
    kpis: dict[str, float]
    parts: dict[str, float]  # reward parts summed over the episode


def play_episode(
    policy: Policy,
    scenario: str | Scenario,
    seed: int,
    config: SimConfig | None = None,
    *,
    on_step: Callable[[Action | str, StepResult], None] | None = None,
    reset_kwargs: dict[str, Any] | None = None,
) -> EVGridEnv:
    """Play one full episode of ``policy`` on (scenario, seed); the finished env.

    ``on_step(action, result)`` sees every decision as it is applied (recorders).
    """
    env = EVGridEnv(config)
    obs = env.reset(seed=seed, scenario=scenario, **(reset_kwargs or {}))
    policy.reset(seed)
    while not env.done:
        action = policy.act(obs)
        res = env.step(action)
        if on_step is not None:
            on_step(action, res)
        obs = env.observation()
    return env


def run_episode(
    policy: Policy, scenario: str, seed: int, config: SimConfig | None = None
) -> EpisodeResult:
    """One full episode of ``policy`` on (scenario, seed), summarised."""
    env = play_episode(policy, scenario, seed, config)
    return EpisodeResult(scenario, seed, policy.name, env.kpis.total_return, env.kpi_summary(),
                         dict(env.kpis.parts_total))  # fmt: skip
