"""Reward functions for GRPO, computed by the environment, never by a model.

Each is a small named callable with TRL's signature
``f(prompts, completions, **columns) -> list[float]``; the dataset columns
``scenario``, ``seed``, ``step`` and ``generator`` name the exact state (see
``training.data``). Three signals:

- ``format_reward``: the completion is one action line the core's parser accepts.
- ``validity_reward``: and the core's validator accepts it in this state.
- ``consequence_reward``: the environment's own verdict. Restore the state, apply
  the action, play ``horizon_ticks`` more ticks with a fixed heuristic, sum the
  rewards; subtract the same rollout after the heuristic's own action. Positive
  means "better than the heuristic here"; the heuristic scores exactly 0.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from evgrid_core import REWARD_KEYS, EVGridEnv, Invalid, parse_action
from evgrid_core.policies import make_policy

from .config import RewardConfig
from .data import StateCache, action_text

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


def reference_action(env: EVGridEnv, continuation: str, seed: int) -> str:
    """The continuation heuristic's own decision in this state."""
    policy = make_policy(continuation)
    policy.reset(seed)
    return action_text(policy.act(env.observation()))


def advantage_over_heuristic(
    env: EVGridEnv, action: Any, cfg: RewardConfig, seed: int
) -> tuple[float, dict[str, float], bool]:
    """Rollout return after ``action`` minus after the heuristic's action (unclipped).

    ``env`` is left untouched. Returns (difference, per-part difference, valid).
    """
    ref_action = reference_action(env, cfg.continuation, seed)
    kw = {"horizon_ticks": cfg.horizon_ticks, "continuation": cfg.continuation}
    mine = rollout(env.clone(), action, seed=seed, **kw)
    ref = rollout(env.clone(), ref_action, seed=seed, **kw)
    diff = {k: mine.parts[k] - ref.parts[k] for k in REWARD_KEYS}
    return mine.total - ref.total, diff, mine.valid


# --- TRL reward functions ----------------------------------------------------------


class EnvRewards:
    """The reward functions for one training run, sharing one cache of restored states."""

    def __init__(self, cfg: RewardConfig, cache: StateCache | None = None) -> None:
        self.cfg = cfg
        self.cache = cache or StateCache()

    def functions(self) -> list[Callable[..., list[float]]]:
        return [self.format_reward, self.validity_reward, self.consequence_reward]

    def weights(self) -> list[float]:
        c = self.cfg
        return [c.format_weight, c.valid_weight, c.consequence_weight]

    def _states(self, kw: dict[str, Sequence[Any]], n: int) -> list[EVGridEnv]:
        keys = ("scenario", "seed", "step", "generator")
        missing = [k for k in keys if k not in kw]
        if missing:
            raise ValueError(f"dataset rows lack the replay column(s) {missing}")
        return [
            self.cache.restore(*(kw[k][i] for k in keys))  # type: ignore[arg-type]
            for i in range(n)
        ]

    def format_reward(self, completions: Sequence[Any], **kw: Any) -> list[float]:
        """1.0 for one line the core's parser accepts, else 0.0."""
        scores = [
            0.0 if isinstance(parse_action(completion_text(c)), Invalid) else 1.0
            for c in completions
        ]
        _log(kw, "format_rate", scores)
        return scores

    def validity_reward(self, completions: Sequence[Any], **kw: Any) -> list[float]:
        """1.0 for an action the core's validator accepts in the row's state."""
        envs = self._states(kw, len(completions))
        scores = []
        for c, env in zip(completions, envs, strict=True):
            ok, _ = env.validate(completion_text(c))
            scores.append(1.0 if ok else 0.0)
        _log(kw, "valid_rate", scores)
        return scores

    def consequence_reward(self, completions: Sequence[Any], **kw: Any) -> list[float]:
        """Rollout return after the action minus after the heuristic's, clipped."""
        envs = self._states(kw, len(completions))
        clip = self.cfg.consequence_clip
        scores, part_sums = [], dict.fromkeys(REWARD_KEYS, 0.0)
        for i, (c, env) in enumerate(zip(completions, envs, strict=True)):
            seed = int(kw["seed"][i])
            diff, parts, _ = advantage_over_heuristic(
                env, completion_text(c).strip(), self.cfg, seed
            )
            scores.append(max(-clip, min(clip, diff)))
            for k in REWARD_KEYS:
                part_sums[k] += parts[k]
        log_metric = kw.get("log_metric")
        if log_metric is not None and completions:
            for k, v in part_sums.items():
                log_metric(f"vs_heuristic/{k}", v / len(completions))
        return scores


def _log(kw: dict[str, Any], name: str, scores: list[float]) -> None:
    log_metric = kw.get("log_metric")
    if log_metric is not None and scores:
        log_metric(name, sum(scores) / len(scores))
