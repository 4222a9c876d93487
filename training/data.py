"""Decision states re-created from the core: the RL stages' states and their seeds.

A row names the exact state it was taken from: ``scenario``, ``seed``, ``step``
(decisions already made) and ``generator`` (the policy that made them). The core
is deterministic, so ``restore_env`` replays those decisions and arrives at the
same state, bit for bit: rewards are computed by the environment, never by a model.
Training seeds and held-out seeds are disjoint ranges (checked in ``config``).
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from evgrid_core import EVGridEnv, format_action
from evgrid_core.policies import make_policy

from .config import DataConfig

# --- Prompt --------------------------------------------------------------------


def action_text(action: Any) -> str:
    return action if isinstance(action, str) else format_action(action)


# --- Replay ----------------------------------------------------------------------


class StateCache:
    """Restored environments by (scenario, seed, generator, step); hands out clones.

    GRPO scores ``num_generations`` completions of one prompt in a row, and the
    rollouts of one episode share prefixes, so replaying from the nearest cached
    earlier step of the same episode keeps restoring cheap.
    """

    def __init__(self, capacity: int = 256) -> None:
        self.capacity = capacity
        self._envs: OrderedDict[tuple[str, int, str, int], EVGridEnv] = OrderedDict()

    def restore(self, scenario: str, seed: int, step: int, generator: str) -> EVGridEnv:
        key = (scenario, int(seed), generator, int(step))
        env = self._envs.get(key)
        if env is None:
            env = _replay(scenario, int(seed), int(step), generator)
            self._envs[key] = env
            while len(self._envs) > self.capacity:
                self._envs.popitem(last=False)
        self._envs.move_to_end(key)
        return env.clone()


def _replay(scenario: str, seed: int, step: int, generator: str) -> EVGridEnv:
    env = EVGridEnv()
    env.reset(seed=seed, scenario=scenario)
    policy = make_policy(generator)
    policy.reset(seed)
    for i in range(step):
        if env.done:
            raise ValueError(
                f"{scenario} seed {seed} ends after {i} decisions of {generator}; "
                f"no state at step {step}"
            )
        env.step(policy.act(env.observation()))
    if env.done:
        raise ValueError(f"{scenario} seed {seed} step {step}: the episode is over")
    return env


def restore_env(scenario: str, seed: int, step: int, generator: str) -> EVGridEnv:
    """The environment in the exact state a dataset row names (a fresh replay)."""
    return _replay(scenario, int(seed), int(step), generator)


# --- Dataset rows ------------------------------------------------------------------


def train_seeds(cfg: DataConfig) -> range:
    return range(*cfg.train_seeds)


def heldout_seeds(cfg: DataConfig) -> range:
    return range(*cfg.heldout_seeds)
