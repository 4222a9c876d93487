"""``EVGridParallelEnv``: the core as a PettingZoo ``ParallelEnv`` of many operators.

Agents (``agents.py``): three fleet operators (one per EV class) and, with
``roles="both"``, six station operators (one per feeder's stations). Every agent
acts at every parallel step; most have only NOOP valid:

- a fleet's action is one index over ROUTE (station x kind), DEFER (minutes) and a
  last NOOP. The fleet that owns the request being decided must ROUTE or DEFER (its
  mask is the core's); a NOOP or masked-out answer from it is the core's invalid
  answer (the EV is stranded and ``invalid`` is paid). Every other fleet's mask is
  NOOP alone, and what it answers is ignored.
- an operator's action is NOOP (index 0) or a LOAD_SHIFT of one of its own stations
  (``1 + evgrid_gym``'s shift index). Shifts are applied first, in agent order,
  each checked with ``env.validate``: one the core would refuse now (the tick's
  budget used up by an earlier operator, a station not its own) is dropped at no
  cost and listed in ``infos[agent]["refused"]``. Dropped is what NOOP does, so a
  refused shift never pays better than a valid one.

So one parallel step is zero or more LOAD_SHIFT core steps and then exactly one
ROUTE / DEFER (or invalid) core step: the episode ends within the core's bound.
Each core step's reward parts are split among the agents (``attribution.py``);
an agent's reward is its share summed over the parallel step, and the agents'
rewards add up to the rewards the single-agent env pays for the same core steps
(``infos[agent]["core_steps"]`` lists them).

Observations are ``{"observation": Box, "action_mask": Box(0, 1, int8)}``: the
Gymnasium wrapper's vector of the city (``evgrid_gym.encode_observation``) with the
request's own features (the EV, its drive times, its route mask) shown to its owner
only, then the agent's role, whether it is its turn, its own stations and a one-hot
of who it is (so one policy can be shared by several agents). ``AgentView`` reads
them, and the masks, from a core ``Observation`` alone: the env and the ``mappo``
policy (the trained agents acting in the single-agent env) share it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from evgrid_core import (
    DEFAULT_SCENARIO,
    Defer,
    EVGridEnv,
    Invalid,
    LoadShift,
    Observation,
    Route,
    SimConfig,
)
from evgrid_core.city import N_STATIONS
from evgrid_core.optional import require
from evgrid_gym.env import (
    N_DEFER,
    N_ROUTE,
    N_SHIFT,
    OBS_HIGH,
    OBS_LOW,
    OBS_SIZE,
    PER_STATION,
    action_mask,
    decode_action,
    encode_observation,
)

from .agents import Roster, make_roster
from .attribution import CoreStep, attribute

spaces = require("gymnasium.spaces", "the multi-agent env", "marl")
ParallelEnv = require("pettingzoo", "the multi-agent env", "marl").ParallelEnv

FLEET_NOOP = N_ROUTE + N_DEFER  # the fleet's last index
N_FLEET_ACTIONS = FLEET_NOOP + 1
N_OPERATOR_ACTIONS = 1 + N_SHIFT  # 0 = NOOP
REQUEST = slice(6, 17)  # the request's own features in encode_observation's vector
STATIONS_AT = 17  # where the per-station columns start (drive time is column 0)
ROUTE_MASK = slice(OBS_SIZE - N_ROUTE, OBS_SIZE)


# --- What each agent sees and may do ------------------------------------------------------
class AgentView:
    """Each agent's observation and action mask, read from one core ``Observation``.

    The env's own view of the world, and the one ``mappo`` (``evgrid_rl.mappo``)
    uses to act as the agents in the single-agent env: a pure function of the
    core's observation and the roster, no state of its own.
    """

    def __init__(self, roster: Roster) -> None:
        self.roster = roster
        # fleet, operator, turn; own stations; one-hot of the agent
        self.size = OBS_SIZE + 3 + N_STATIONS + len(roster.agents)
        self._role_rows = {a: self._role_row(a) for a in roster.agents}

    def n_actions(self, agent: str) -> int:
        if agent in self.roster.fleets:
            return N_FLEET_ACTIONS
        if agent in self.roster.operators:
            return N_OPERATOR_ACTIONS
        raise ValueError(f"no agent {agent!r}; agents: {', '.join(self.roster.agents)}")

    def owner(self, obs: Observation) -> str | None:
        """The fleet whose request is being decided (None: no request)."""
        req = obs.request
        return self.roster.fleet_of_class(req.klass) if req is not None else None

    def _role_row(self, agent: str) -> np.ndarray:
        r = self.roster
        row = np.zeros(self.size - OBS_SIZE, dtype=np.float32)
        row[0], row[1] = agent in r.fleets, agent in r.operators
        for s in r.stations_of.get(agent, ()):
            row[3 + s - 1] = 1.0
        row[3 + N_STATIONS + r.agents.index(agent)] = 1.0
        return row

    def mask(self, obs: Observation, agent: str) -> np.ndarray:
        """(n,) int8: the agent's valid actions in ``obs``."""
        r = self.roster
        m = np.zeros(self.n_actions(agent), dtype=np.int8)
        if agent in r.fleets:
            if obs.request is not None and self.owner(obs) == agent:
                m[:FLEET_NOOP] = action_mask(obs)[:FLEET_NOOP]
                if not m.any():  # no station can take the EV and it cannot wait:
                    m[FLEET_NOOP] = 1  # any answer strands it; NOOP is the one offered
            else:
                m[FLEET_NOOP] = 1
            return m
        m[0] = 1
        if obs.request is not None and obs.load_shifts_left > 0:
            per_station = N_SHIFT // N_STATIONS
            for s in r.stations_of[agent]:
                if not obs.shifted[s - 1]:
                    m[1 + (s - 1) * per_station : 1 + s * per_station] = 1
        return m

    def observations(
        self, obs: Observation, agents: list[str] | tuple[str, ...]
    ) -> dict[str, dict[str, np.ndarray]]:
        """``{agent: {"observation", "action_mask"}}`` for ``agents`` in ``obs``."""
        city = encode_observation(obs)
        private = city.copy()
        private[REQUEST] = 0.0
        private[STATIONS_AT : STATIONS_AT + N_STATIONS * PER_STATION : PER_STATION] = (
            0.0
        )
        private[ROUTE_MASK] = 0.0
        owner = self.owner(obs)
        out = {}
        for a in agents:
            role = self._role_rows[a].copy()
            role[2] = a == owner or (a in self.roster.operators and owner is not None)
            vec = np.concatenate([city if a == owner else private, role])
            out[a] = {
                "observation": vec.astype(np.float32),
                "action_mask": self.mask(obs, a),
            }
        return out

    def operator_shift(self, op: str, a: int) -> LoadShift | None:
        """Operator ``op``'s LOAD_SHIFT for index ``a``; None for NOOP, an index out
        of range or another operator's station."""
        if not 1 <= a < N_OPERATOR_ACTIONS:
            return None
        shift = decode_action(N_ROUTE + N_DEFER + a - 1, 0)
        assert isinstance(shift, LoadShift)
        return shift if shift.station in self.roster.stations_of[op] else None


class EVGridParallelEnv(ParallelEnv):
    """Many operators on one ``EVGridEnv``; same seed, same episode."""

    metadata = {"render_modes": ["ansi"], "name": "evgrid_parallel_v0"}

    def __init__(
        self,
        scenario: str = DEFAULT_SCENARIO,
        config: SimConfig | None = None,
        roles: str = "both",
        render_mode: str | None = None,
    ) -> None:
        self.core = EVGridEnv(config)
        self.scenario = scenario
        self.roles = roles
        self.roster = make_roster(roles)
        self.render_mode = render_mode
        self.possible_agents = list(self.roster.agents)
        self.agents: list[str] = []
        self._obs: Observation | None = None
        self._rng = np.random.default_rng()
        self.view = AgentView(self.roster)
        self._size = self.view.size
        both = {a: self._spaces(a) for a in self.possible_agents}
        self._obs_spaces = {a: o for a, (o, _) in both.items()}  # one object per agent
        self._act_spaces = {a: d for a, (_, d) in both.items()}

    # --- Spaces -------------------------------------------------------------------------
    def observation_space(self, agent: str) -> spaces.Dict:
        return self._obs_spaces[agent]

    def action_space(self, agent: str) -> spaces.Discrete:
        return self._act_spaces[agent]

    def _spaces(self, agent: str) -> tuple[spaces.Dict, spaces.Discrete]:
        n = self._n_actions(agent)
        obs = spaces.Dict(
            {
                "observation": spaces.Box(
                    OBS_LOW, OBS_HIGH, shape=(self._size,), dtype=np.float32
                ),
                "action_mask": spaces.Box(0, 1, shape=(n,), dtype=np.int8),
            }
        )
        return obs, spaces.Discrete(n)

    def _n_actions(self, agent: str) -> int:
        return self.view.n_actions(agent)

    # --- Episode ------------------------------------------------------------------------
    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, dict[str, np.ndarray]], dict[str, dict[str, Any]]]:
        if seed is not None:
            self._rng = np.random.default_rng(seed)
            core_seed = int(seed)
        else:
            core_seed = int(self._rng.integers(0, 2**31 - 1))
        scenario = (options or {}).get("scenario", self.scenario)
        self._obs = self.core.reset(seed=core_seed, scenario=scenario)
        self.agents = [] if self.core.done else list(self.possible_agents)
        return self._observations(), {a: self._info(a, {}) for a in self.agents}

    def step(self, actions: dict[str, Any]):  # noqa: ANN201 - PettingZoo's 5 dicts
        assert self._obs is not None and self.agents, "call reset() first"
        obs, core, roster = self._obs, self.core, self.roster
        request = obs.request
        assert request is not None
        owner = roster.fleet_of_class(request.klass)
        refused: dict[str, list[int]] = {a: [] for a in self.agents}
        steps: list[tuple[str, Any, Any]] = []  # (agent, core action, StepResult)
        shares: dict[str, dict[str, float]] = {a: {} for a in self.agents}

        def apply(agent: str, act: Route | Defer | LoadShift | Invalid) -> None:
            before = core.state()
            res = core.step(act)
            after = core.state()
            steps.append((agent, act, res))
            wait_own = self._decision_wait(act, res, after)
            piece = attribute(
                CoreStep(agent, res.info["reward_parts"], res.info["valid"], wait_own,
                         tuple(res.info["gave_up"]), before, after),
                roster,
                core.config,
            )  # fmt: skip
            for a, parts in piece.items():
                for k, v in parts.items():
                    shares[a][k] = shares[a].get(k, 0.0) + v

        for op in roster.operators:  # LOAD_SHIFTs first, in agent order
            a = int(actions.get(op, 0))
            if a == 0:
                continue
            shift = self.view.operator_shift(op, a)
            if shift is None or not core.validate(shift)[0]:
                refused[op].append(a)
                continue
            apply(op, shift)
        a = int(actions.get(owner, FLEET_NOOP))
        if 0 <= a < FLEET_NOOP:
            apply(owner, decode_action(a, request.id))
        else:
            apply(
                owner, Invalid(f"NOOP {a}", ("the owner of the request answered NOOP",))
            )
        for f in roster.fleets:
            if f != owner and int(actions.get(f, FLEET_NOOP)) != FLEET_NOOP:
                refused[f].append(int(actions[f]))

        self._obs = core.observation()
        done = core.done
        live = list(self.agents)
        rewards = {a: float(sum(shares[a].values())) for a in live}
        terms = dict.fromkeys(live, done)
        truncs = dict.fromkeys(live, False)
        core_steps = [
            {"agent": ag, "action": res.info["action"], "reward": res.reward,
             "valid": res.info["valid"], "reward_parts": res.info["reward_parts"]}
            for ag, _, res in steps
        ]  # fmt: skip
        infos = {
            a: self._info(
                a,
                {
                    "reward_parts": shares[a],
                    "refused": refused[a],
                    "core_steps": core_steps,
                },
            )  # fmt: skip
            for a in live
        }
        observations = self._observations()
        if done:
            self.agents = []
        return observations, rewards, terms, truncs, infos

    def _decision_wait(self, act: Any, res: Any, after: dict[str, Any]) -> float:
        """[reward] the wait the decision itself charged (drive or defer minutes)."""
        if not res.info["valid"]:
            return 0.0
        weight = self.core.config.weights.wait
        if isinstance(act, Defer):
            return -weight * act.minutes
        if isinstance(act, Route):
            ev = next((e for e in after["evs"] if e["id"] == act.ev), None)
            if ev is None or ev["depart_minute"] is None or ev["arrive_minute"] is None:
                return 0.0
            return -weight * (ev["arrive_minute"] - ev["depart_minute"])
        return 0.0

    # --- Observations, masks ------------------------------------------------------------
    def mask(self, agent: str) -> np.ndarray:
        """(n,) int8: the agent's valid actions now."""
        assert self._obs is not None
        return self.view.mask(self._obs, agent)

    def _observations(self) -> dict[str, dict[str, np.ndarray]]:
        assert self._obs is not None
        return self.view.observations(self._obs, self.agents)

    def _info(self, agent: str, extra: dict[str, Any]) -> dict[str, Any]:
        return {**extra, "action_mask": self.mask(agent)}

    def render(self) -> str | None:
        return self.core.render_text() if self.render_mode == "ansi" else None

    def close(self) -> None:
        pass
