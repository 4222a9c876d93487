"""Advantages discounted per minute of the city's clock, not per decision.

A step of the candidate env is a decision, and decisions do not come evenly: at the
evening peak a dozen arrive in one 5-minute tick, then none for three ticks. RLlib's
GAE discounts by one ``gamma`` per step, so a DEFER (which brings its EV back as
another decision) pushes every cost still to come one more factor of ``gamma`` away,
and PPO learns to defer (``docs/rl.md``, tries 1-5). Here the discount from decision
t to decision t+1 is ``gamma ** minutes`` between them (a semi-Markov decision
process): decisions in the same tick are not discounted against each other, and
deferring buys nothing but the minutes it waits.

The env puts the clock in the observation (``obs["minute"]``, ``envs.with_clock``);
the connector replaces PPO's ``GeneralAdvantageEstimation`` in the learner
(``ClockPPOLearner``, chosen by a preset's ``gamma_minute``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from ray.rllib.algorithms.ppo.torch.ppo_torch_learner import PPOTorchLearner
from ray.rllib.connectors.common.numpy_to_tensor import NumpyToTensor
from ray.rllib.connectors.connector_v2 import ConnectorV2
from ray.rllib.core.columns import Columns
from ray.rllib.core.rl_module.apis.value_function_api import ValueFunctionAPI
from ray.rllib.evaluation.postprocessing import Postprocessing
from ray.rllib.utils.numpy import convert_to_numpy


def step_discounts(minutes: np.ndarray, lengths: list[int], gamma: float) -> np.ndarray:
    """Per row, ``gamma ** (minute of the next row - this row's)`` within each
    episode (rows concatenated, ``lengths`` each); an episode's last row gets 1
    (its reward is RLlib's artificial 0 and nothing follows it)."""
    out = np.ones(len(minutes), dtype=np.float64)
    start = 0
    for n in lengths:
        m = minutes[start : start + n].astype(np.float64)
        dt = np.diff(m)
        if (dt < 0).any():
            raise ValueError("the clock ran backwards inside an episode")
        out[start : start + n - 1] = gamma**dt
        start += n
    return out


def value_targets(
    values: np.ndarray,
    rewards: np.ndarray,
    terminateds: np.ndarray,
    truncateds: np.ndarray,
    discounts: np.ndarray,
    lambda_: float,
) -> np.ndarray:
    """GAE(lambda) value targets with a discount per row (RLlib's
    ``compute_value_targets`` with ``gamma`` an array; same flag conventions:
    ``terminateds[t]`` gates the bootstrap, either flag stops the recursion)."""
    non_terminal = 1.0 - terminateds.astype(np.float64)
    propagate = non_terminal * (1.0 - truncateds.astype(np.float64))
    next_values = np.append(values[1:], 0.0)
    delta = rewards + discounts * non_terminal * next_values - values
    adv = np.zeros(len(rewards), dtype=np.float64)
    running = 0.0
    for t in range(len(rewards) - 1, -1, -1):
        running = delta[t] + discounts[t] * lambda_ * propagate[t] * running
        adv[t] = running
    return (adv + values).astype(np.float32)


class ClockGAE(ConnectorV2):
    """The learner connector: advantages (standardised, as RLlib's) and value
    targets under ``step_discounts``. Stateless modules only (the candidate
    scorer is one)."""

    def __init__(
        self,
        input_observation_space: Any = None,
        input_action_space: Any = None,
        *,
        gamma: float,
        lambda_: float,
    ) -> None:
        super().__init__(input_observation_space, input_action_space)
        self.gamma = gamma
        self.lambda_ = lambda_
        self._to_tensor: NumpyToTensor | None = None

    def __call__(self, *, rl_module: Any, episodes: list, batch: dict, **kwargs: Any):  # noqa: ANN204
        episodes_ = list(
            self.single_agent_episode_iterator(episodes, agents_that_stepped_only=False)
        )
        results: dict[str, dict[str, np.ndarray]] = {}
        device = None
        for mid, module in rl_module.items():
            if mid not in batch or not isinstance(module, ValueFunctionAPI):
                continue
            if module.is_stateful():
                raise ValueError("ClockGAE: stateful (recurrent) modules not supported")
            values_t = module.compute_values(batch[mid])
            device = values_t.device
            values = convert_to_numpy(values_t).astype(np.float64)
            lengths = [len(e) for e in episodes_ if e.module_id in (None, mid)]
            b = batch[mid]
            minutes = convert_to_numpy(b[Columns.OBS]["minute"]).reshape(-1)
            targets = value_targets(
                values,
                convert_to_numpy(b[Columns.REWARDS]).astype(np.float64),
                convert_to_numpy(b[Columns.TERMINATEDS]),
                convert_to_numpy(b[Columns.TRUNCATEDS]),
                step_discounts(minutes, lengths, self.gamma),
                self.lambda_,
            )
            adv = targets - values
            adv = (adv - adv.mean()) / max(1e-4, adv.std())
            results[mid] = {
                Postprocessing.ADVANTAGES: adv.astype(np.float32),
                Postprocessing.VALUE_TARGETS: targets,
            }
        if self._to_tensor is None:
            self._to_tensor = NumpyToTensor(as_learner_connector=True, device=device)
        tensors = self._to_tensor(rl_module=rl_module, batch=results, episodes=episodes)
        for mid, cols in tensors.items():
            batch[mid].update(cols)
        return batch


class ClockPPOLearner(PPOTorchLearner):
    """RLlib's PPO learner with ``ClockGAE`` in place of its GAE; ``gamma`` is
    read per minute (``config.gamma``)."""

    def build(self) -> None:
        super().build()
        if self._learner_connector is not None:
            self._learner_connector.remove("GeneralAdvantageEstimation")
            self._learner_connector.append(
                ClockGAE(gamma=self.config.gamma, lambda_=self.config.lambda_)
            )
