"""Multi-agent PPO on the candidate interface: fleets pick rows, operators cap stations.

The agents are ``evgrid_marl``'s (three fleet operators, one per EV class; six
station operators, one per feeder), taking turns on one core episode
(RLlib's turn-based ``MultiAgentEnv``):

- at the first request with a choice in a tick at which a feeder is forecast over
  its limit (``operators_due``), the operators of such feeders answer from the same
  observation with a row of their own (``operator_rows``: hold, or cap one of their
  stations drawing power at 25/50/75 % for 15-60 minutes); the caps apply in agent
  order, each one the core would refuse by then (the tick's budget of
  ``max_load_shifts_per_tick`` spent) dropped at no cost;
- then the fleet that owns the request picks one of its candidate rows
  (``evgrid_core.candidates.fixed_view``, as ``CandidateGymEnv``), and the core
  steps. Requests with no valid answer are answered by the env (turned away), as in
  ``CandidateGymEnv``.

The reward is the team's (cooperative MAPPO): every agent that has acted is paid
each step's core reward; RLlib sums what an agent is paid between two of its turns.
So each agent's return is the episode's, the same objective as ``ppo``'s, and an
operator's cap is worth what it saves the whole city (the ``load_shift`` cost
included). Each observation carries ``minute`` for the per-minute discount
(``clock_gae``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces
from ray.rllib.env.multi_agent_env import MultiAgentEnv

from evgrid_core import EVGridEnv
from evgrid_core.candidates import Candidates, fixed_view
from evgrid_core.features import OBS_HIGH, OBS_LOW, OBS_SIZE
from evgrid_gym.candidate_env import K_DEFAULT, N_FEATURES, to_next_choice
from evgrid_marl import make_roster
from evgrid_marl.operator_rows import (
    N_OPERATOR_FEATURES,
    operator_rows,
    operator_rows_k,
    operators_due,
    squash_rows,
)

from .envs import CLOCK_SPACE, draw_episode


def _space(k: int, f: int) -> spaces.Dict:
    return spaces.Dict(
        {
            "action_mask": spaces.Box(0.0, 1.0, shape=(k,), dtype=np.float32),
            "candidates": spaces.Box(-np.inf, np.inf, shape=(k, f), dtype=np.float32),
            "state": spaces.Box(OBS_LOW, OBS_HIGH, shape=(OBS_SIZE,), dtype=np.float32),
            "minute": CLOCK_SPACE,
        }
    )


class CandidateMultiAgentEnv(MultiAgentEnv):
    """``config``: ``scenarios``, ``seed``, ``reward_scale`` (as the single-agent
    training envs)."""

    def __init__(self, config: dict[str, Any] | None = None) -> None:
        super().__init__()
        config = dict(config or {})
        self.scenarios = list(config.get("scenarios", ["evening_peak"]))
        self.reward_scale = float(config.get("reward_scale", 1.0))
        self._rng = np.random.default_rng(config.get("seed"))
        self.roster = make_roster("both")
        self.k_op = operator_rows_k(max(map(len, self.roster.stations_of.values())))
        fleet = _space(K_DEFAULT, N_FEATURES)
        operator = _space(self.k_op, N_OPERATOR_FEATURES)
        self.agents = self.possible_agents = list(self.roster.agents)
        self.observation_spaces = {
            a: fleet if a in self.roster.fleets else operator for a in self.agents
        }
        self.action_spaces = {
            a: spaces.Discrete(K_DEFAULT if a in self.roster.fleets else self.k_op)
            for a in self.agents
        }
        self.core = EVGridEnv()
        self._turn: list[str] = []
        self._answers: dict[str, list[Any]] = {}  # each agent's row -> action
        self._acted: set[str] = set()
        self._ops_tick = -1
        self._carry = 0.0
        self._cands: Candidates | None = None  # the request's, when it has a choice
        self.shifts = 0  # LOAD_SHIFTs applied this episode

    def reset(self, *, seed: int | None = None, options: dict | None = None):  # noqa: ANN201
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        scenario, ep_seed = draw_episode(self._rng, self.scenarios)
        self.core.reset(seed=ep_seed, scenario=scenario)
        self._acted, self._ops_tick, self.shifts = set(), -1, 0
        self._carry = self._to_next_choice()  # paid with the first step's reward
        return self._observe(), {}

    def step(self, actions: dict[str, int]):  # noqa: ANN201
        reward, self._carry = self._carry, 0.0
        for agent in self._turn:
            if agent not in actions:
                raise ValueError(f"{agent} has the turn but gave no action")
            row = int(actions[agent])
            if not 0 <= row < len(self._answers[agent]):
                raise ValueError(f"{agent}: row {row} is not one of its candidates")
        if self._turn and self._turn[0] in self.roster.operators:
            self._ops_tick = self.core.observation().tick
            for op in self._turn:  # in agent order; refused caps are dropped
                shift = self._answers[op][int(actions[op])]
                if shift is not None and self.core.validate(shift)[0]:
                    reward += self.core.step(shift).reward
                    self.shifts += 1
        else:
            (fleet,) = self._turn
            reward += self.core.step(self._answers[fleet][int(actions[fleet])]).reward
        self._acted.update(self._turn)
        reward += self._to_next_choice()
        done = self.core.done
        obs = self._observe()
        rewards = dict.fromkeys(self._acted, reward * self.reward_scale)
        terms = {"__all__": done, **dict.fromkeys(obs, done)}
        return obs, rewards, terms, {"__all__": False}, {}

    def _to_next_choice(self) -> float:
        reward, self._cands = to_next_choice(self.core)
        return reward

    def _observe(self) -> dict[str, dict[str, np.ndarray]]:
        """The observations of the agents whose turn it is (at the end: of every
        agent that acted, a last one with one masked-in padding row)."""
        obs = self.core.observation()
        minute = np.array([self.core.world.minute], dtype=np.float32)
        state = self.core.features()[0]
        if self.core.done:
            self._turn = []
            return {
                a: {
                    "action_mask": np.eye(1, self.action_spaces[a].n, dtype=np.float32)[0],
                    "candidates": np.zeros(self.observation_spaces[a]["candidates"].shape,
                                           dtype=np.float32),
                    "state": state, "minute": minute,
                }
                for a in self._acted
            }  # fmt: skip
        out = {}
        due = operators_due(obs, self._ops_tick, self.roster.stations_of)
        if due:
            self._turn = due
            for op in self._turn:
                x, answers = operator_rows(obs, self.roster.stations_of[op])
                rows, mask = squash_rows(x, self.k_op)
                self._answers[op] = answers
                out[op] = {"action_mask": mask.astype(np.float32), "candidates": rows,
                           "state": state, "minute": minute}  # fmt: skip
            return out
        assert obs.request is not None
        fleet = self.roster.fleet_of_class(obs.request.klass)
        c = self._cands  # listed by _to_next_choice for this very observation
        assert c is not None
        rows, mask, pick = fixed_view(c, K_DEFAULT)
        self._answers[fleet] = [c.actions[int(p)] for p in pick[mask]]
        self._turn = [fleet]
        return {fleet: {"action_mask": mask.astype(np.float32), "candidates": rows,
                        "state": state, "minute": minute}}  # fmt: skip


def log_team_return(
    *, episode: Any, prev_episode_chunks: list | None = None,
    metrics_logger: Any = None, **kwargs: Any,
) -> None:  # fmt: skip
    """RLlib ``on_episode_end`` callback: the team's return as ``team_return`` (the
    env runners' mean over the last 100 episodes). The agents who answered the
    episode's first turn were paid every step's reward; every other agent only from
    its first turn on, so with rewards that are costs (never positive) the team's
    return is the lowest agent's, summed over the episode's chunks."""
    per_agent: dict[str, float] = {}
    for chunk in [*(prev_episode_chunks or []), episode]:
        for agent, ep in chunk.agent_episodes.items():
            per_agent[agent] = per_agent.get(agent, 0.0) + float(ep.get_return())
    if per_agent and metrics_logger is not None:
        metrics_logger.log_value(
            "team_return", min(per_agent.values()), reduce="mean", window=100
        )
