"""The environment's verdict on an action, never a model's.

``rollout`` applies an action to a copy of a state and plays ``horizon_ticks`` more
with a fixed policy, summing the rewards (the GRPO and RL stages score letters
with it: ``oracle_rl.Verdict``); ``completion_text`` reads a TRL completion.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from evgrid_core import EVGridEnv
from evgrid_core.policies import make_policy

# --- Completions -----------------------------------------------------------------


def completion_text(completion: Any) -> str:
    """The text of one completion: a string, or a list of chat messages (TRL)."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, list) and completion:
        last = completion[-1]
        if isinstance(last, dict):
            return str(last.get("content", ""))
    if isinstance(completion, dict):
        return str(completion.get("content", ""))
    return ""


# --- Scoring one action in one state ---------------------------------------------


@dataclass(frozen=True, slots=True)
class Rollout:
    total: float  # sum of step rewards over the rollout
    parts: dict[str, float]  # the same, per reward key
    valid: bool  # the first action was valid
    steps: int


def rollout(
    env: EVGridEnv,
    first_action: Any,
    *,
    horizon_ticks: int,
    continuation: str,
    seed: int,
) -> Rollout:
    """Apply ``first_action`` to ``env`` (mutated: pass a clone), then play on.

    The continuation heuristic decides until the clock has moved ``horizon_ticks``
    past the decision's tick or the episode ends, so a queue or an overload the
    action causes later is charged to it.
    """
    t0 = env.tick
    res = env.step(first_action)
    parts = dict(res.info["reward_parts"])
    total, valid, steps = res.reward, bool(res.info["valid"]), 1
    policy = make_policy(continuation)
    policy.reset(seed)
    while not env.done and env.tick < t0 + horizon_ticks:
        res = env.step(policy.act(env.observation()))
        total += res.reward
        steps += 1
        for k, v in res.info["reward_parts"].items():
            parts[k] += v
    return Rollout(total, parts, valid, steps)
