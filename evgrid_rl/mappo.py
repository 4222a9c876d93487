"""``mappo``: the multi-agent PPO actors, acting together in the single-agent env.

The shipped actors come from the candidate interface (``--preset cpu-mappo``, below);
older exports from the RLlib run on the PettingZoo env (``python3 -m evgrid_rl.train
--preset cpu-marl-small``) still load. That run trains one actor per module: ``fleet`` (shared by the three fleet
operators) and ``operator`` (shared by the six station operators), or one per agent
with ``--policies separate``. Their weights (``evgrid_rl/data/mappo.npz``: plain
numpy arrays, ``{module}.W0, {module}.b0, ...`` and a JSON ``meta`` with each
agent's module) are walked by numpy, so ``evgrid compare --policies mappo`` and
``main.py --policy mappo`` need neither Ray nor torch (pettingzoo, for the agents'
view: the ``marl`` extra). ``weights=PATH`` (or ``evgrid eval --policy mappo --model PATH``) loads
another export, e.g. the untrained actors (``--iterations 0``) as a baseline.

How it plays one request of the single-agent env, as ``EVGridParallelEnv`` plays
one parallel step: every agent sees its own observation of the request's state
(``evgrid_marl.AgentView``, the env's own code) and answers its masked argmax (ties
to the first index). The operators' LOAD_SHIFTs come first, in agent order, each
one the core would refuse by then (the tick's budget spent by an earlier operator)
dropped as the env drops it; then the owning fleet's ROUTE or DEFER, chosen from
the same observation. Each is one ``act`` call (a LOAD_SHIFT leaves the request
pending, so the core asks again). So the episode is the parallel env's with these
actors, core step for core step (``tests/rl`` checks it); same seed, same episode.

On the candidate interface (weights with ``meta["interface"] == "marl-candidates"``,
``evgrid_rl.candidate_marl``; the shipped ones) the agents take turns as that env
deals them: at the first request with a choice in a tick at which a feeder is
forecast over its limit (``operators_due``), each such feeder's operator scores its
rows (``operator_rows``) from the same observation and its best cap, if any, is
answered in agent order (each one the core would refuse by then
dropped, as the env drops it); then the owning fleet scores the request's candidate
rows and the best is answered.

Registered with the core as ``"mappo"`` through the ``evgrid.policies`` entry points.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from evgrid_core import Action, LoadShift, Observation
from evgrid_core.candidates import candidates
from evgrid_core.policies import register_policy
from evgrid_gym import decode_action
from evgrid_marl import FLEET_NOOP, AgentView, make_roster
from evgrid_marl.operator_rows import operator_rows, operators_due, squash_rows

from .policy import ActorMLP, best_candidate

SHIPPED_WEIGHTS = Path(__file__).parent / "data" / "mappo.npz"


class MAPPOPolicy:
    """The agents' most likely valid actions, one core step at a time."""

    name = "mappo"

    def __init__(
        self,
        weights: str | Path | None = None,
        model_path: str | None = None,
        hold_operators: bool = False,
    ) -> None:
        # hold_operators: the operators never cap (the fleets alone), to measure
        # what their caps did (``evgrid_rl.shifts``); candidate interface only
        # model_path: what `evgrid eval --model PATH` passes
        weights = weights or model_path
        path = Path(weights) if weights else SHIPPED_WEIGHTS
        if not path.is_file():
            raise FileNotFoundError(
                f"no multi-agent PPO weights at {path}: train them with "
                "`python3 -m evgrid_rl.train --preset cpu-mappo` (the rl extra)"
            )
        with np.load(path, allow_pickle=False) as z:
            self.meta: dict[str, Any] = json.loads(str(z["meta"]))
        self.module_of: dict[str, str] = self.meta["module_of"]
        self.rows = self.meta.get("interface") == "marl-candidates"
        self.actors = {
            m: ActorMLP(path, prefix=f"{m}.pi." if self.rows else f"{m}.")
            for m in sorted(set(self.module_of.values()))
        }
        self.k, self.k_op = int(self.meta.get("k", 0)), int(self.meta.get("k_op", 0))
        self._ops_tick = -1  # the tick the operators last answered (rows)
        if hold_operators and not self.rows:
            raise ValueError("hold_operators needs weights of the candidate interface")
        self.hold_operators = hold_operators
        self.view = AgentView(make_roster(self.meta.get("roles", "both")))
        # the rest of this request's parallel step: (agent, core action)
        self._queue: list[tuple[str, Action | str]] = []
        self._request: int | None = None  # the request the queue answers
        self._index: dict[str, int] = {}  # every agent's answer (index) to it

    def reset(self, seed: int) -> None:
        self._queue, self._request, self._ops_tick = [], None, -1

    def decide(self, obs: Observation) -> dict[str, int]:
        """Every agent's answer to ``obs`` (its masked argmax): the actions the
        parallel env would be given."""
        out = {}
        for agent, o in self.view.observations(obs, self.view.roster.agents).items():
            logits = self.actors[self.module_of[agent]].logits(o["observation"])
            logits[o["action_mask"] == 0] = -np.inf
            out[agent] = int(np.argmax(logits))
        return out

    def act(self, obs: Observation) -> Action | str:
        req = obs.request
        assert req is not None, "no request to decide"
        if self.rows:
            return self._act_on_rows(obs)
        if not self._queue or self._request != req.id:
            self._queue, self._request = self._step(obs), req.id
        while True:
            agent, action = self._queue.pop(0)
            if not isinstance(action, LoadShift):
                return action
            # a shift the core would refuse now (the tick's budget spent by an
            # earlier operator) is dropped, as the env drops it: the operator's mask
            if self.view.mask(obs, agent)[self._index[agent]]:
                return action

    def _act_on_rows(self, obs: Observation) -> Action | str:
        c = candidates(obs)
        if not len(c):  # no valid answer: turned away, no agent's turn
            return "NO_STATION"
        roster = self.view.roster
        due = operators_due(obs, self._ops_tick, roster.stations_of)
        if due and not self.hold_operators:
            self._ops_tick = obs.tick
            self._queue = []
            for op in due:
                x, answers = operator_rows(obs, roster.stations_of[op])
                rows, mask = squash_rows(x, self.k_op)
                scores = self.actors[self.module_of[op]].logits(rows[mask])[:, 0]
                shift = answers[int(np.argmax(scores))]
                if shift is not None:
                    self._queue.append((op, shift))
        while self._queue:  # caps in agent order; one refused by now is dropped
            _, shift = self._queue.pop(0)
            assert isinstance(shift, LoadShift)
            if obs.load_shifts_left > 0 and not obs.shifted[shift.station - 1]:
                return shift
        fleet = roster.fleet_of_class(obs.request.klass)  # type: ignore[union-attr]
        return best_candidate(self.actors[self.module_of[fleet]], c, self.k)

    def _step(self, obs: Observation) -> list[tuple[str, Action | str]]:
        """The parallel step's core actions, (agent, action): the operators' shifts
        in agent order, then the owner's ROUTE / DEFER."""
        answers = self.decide(obs)
        self._index = answers
        steps: list[tuple[str, Action | str]] = []
        for op in self.view.roster.operators:
            shift = self.view.operator_shift(op, answers[op])
            if shift is not None:
                steps.append((op, shift))
        owner = self.view.owner(obs)
        assert owner is not None and obs.request is not None
        a = answers[owner]
        # NOOP only when nothing is valid: the core strands the EV, as in the env
        steps.append(
            (
                owner,
                decode_action(a, obs.request.id) if a < FLEET_NOOP else "NO_STATION",
            )
        )
        return steps


register_policy(
    "mappo",
    MAPPOPolicy,
    "RLlib multi-agent PPO on the candidate interface (fleets pick rows, station "
    "operators cap on feeders forecast over their limit), preset cpu-mappo; numpy",
)
