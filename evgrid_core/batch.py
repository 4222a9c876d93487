"""A batch of episodes stepped by one compiled call: the core of the vector envs.

``Batch(n, scenarios)`` holds n episodes as packed states (``state.py``) and steps
them all with ``step(actions)``: one discrete action index each (``features.py``'s
layout, the Gymnasium env's), judged and applied by the same kernels as
``EVGridEnv.step`` (``judge.try_action``, the clock's ``advance_feeder_sum``), with
each env's reward, done flag, observation vector and action mask written into
arrays the batch owns. Every episode is the one ``EVGridEnv`` plays with the same
(scenario, seed) and the same decisions, bit for bit (tested step by step).

Auto-reset: an env whose episode ends starts its next one in the same ``step``; its
row then holds the new episode's first observation, and ``finished`` lists the
episodes that ended (return, steps, invalid answers, the KPI counters). Env i's
k-th episode has seed ``seed + k * n + i`` (modulo ``seed_limit`` when one is given: a
trainer keeps below its held-out seeds) and scenario ``scenarios[i % len]``:
reproducible whatever the order they end in. ``threads`` > 1 steps the envs on
numba's threads (``step_envs_parallel``, a ``prange`` over the envs: each env is
stepped by one thread, so the results are the one-thread ones); the auto-resets stay
in Python, in one thread (``evgrid bench`` measures both).

The kernels are handed each state's handle (``jit.handle``: its blocks' addresses in
one int64 row), not the blocks: a batch's states are rows of one array.

Only the feeder sum (the default grid model) runs here: the network models carry
each tick from Python (``world.py``) and belong to ``EVGridEnv``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .config import SimConfig
from .decide import strand
from .episode import new_state
from .features import N_ACTIONS, OBS_SIZE, decode_index, encode_into, shift_numbers
from .jit import handle, handles, kernel, prange, threads
from .judge import A_DEFER, A_LOAD_SHIFT, A_ROUTE, OK, try_action
from .scenarios import DEFAULT_SCENARIO, get_scenario
from .state import (
    F_ENERGY,
    F_UNMET,
    I_FINISHED,
    I_GAVE_UP,
    I_N_GAVE_UP_NOW,
    I_N_PENDING,
    I_ON_TIME,
    I_OVERLOAD_TICKS,
    I_SERVED,
    I_STRANDED,
    I_STRESS_EVENTS,
    I_TICK,
    P_INVALID,
    R_INVALID,
    unpack,
    unpack_rules,
)  # fmt: skip
from .ticks import advance_feeder_sum, carry_feeder_sum
from .world import scenario_rules

N_PARTS = 13
SEED_LIMIT = 2**62  # a batch's first seed; its later episodes' stay below 2**63


@kernel(inline=True)
def step_env(states, rules_list, rule_of, i: int, fresh: bool, actions, reward, done,
             obs, mask, counts, ticks, parts, scratch) -> None:  # fmt: skip  # noqa: ANN001, PLR0913
    """Step env ``i`` by one decision (``Batch.step``), or, ``fresh``, start its new
    episode: the feeders' tick before the first (no EV load) and the clock run to the
    first request, as ``EVGridEnv.reset`` does. Then its observation and mask.
    ``parts`` (13) and ``scratch`` (2, OBS_SIZE) are the caller's work arrays."""
    st, rules = unpack(states[i]), unpack_rules(rules_list[rule_of[i]])
    parts[:] = 0.0
    tick = st.ints[I_TICK]
    if fresh:
        carry_feeder_sum(st, rules, 0)
        clock = True
    else:
        first = st.pending[0]  # the request being decided
        st.ints[I_N_GAVE_UP_NOW] = 0
        what, x, y = decode_index(actions[i])
        if what == A_ROUTE:
            code = try_action(st, rules, A_ROUTE, first + 1, x, y, parts)
        elif what == A_DEFER:
            code = try_action(st, rules, A_DEFER, first + 1, x, 0, parts)
        else:
            cap, minutes = shift_numbers(y)
            code = try_action(st, rules, A_LOAD_SHIFT, x, cap, minutes, parts)
        if code != OK:  # an invalid answer fails the request being decided
            parts[P_INVALID] -= rules.numbers[R_INVALID]
            counts[i, 1] += 1
            strand(st, rules, first, parts)
        counts[i, 0] += 1
        clock = st.ints[I_N_PENDING] == 0 and st.ints[I_FINISHED] == 0
    if clock:
        advance_feeder_sum(st, rules, parts)
    ticks[i] += st.ints[I_TICK] - tick
    finished = st.ints[I_FINISHED] != 0
    if not fresh:
        total = 0.0
        for k in range(N_PARTS):  # in order, as the env's sum of the named parts
            total += parts[k]
        reward[i] = total
        done[i] = finished
    scratch_f = scratch[:, : st.grid_util.size]
    encode_into(st, rules, finished, obs[i], mask[i], scratch_f, False)


@kernel
def step_envs(states, rules_list, rule_of, which, fresh: bool, actions, reward, done,
              obs, mask, counts, ticks) -> None:  # fmt: skip  # noqa: ANN001, PLR0913
    """``step_env`` for each env of ``which``, in one thread (the rules inlined)."""
    parts = np.zeros(N_PARTS)
    scratch = np.zeros((2, obs.shape[1]))
    for i in which:
        step_env(states, rules_list, rule_of, i, fresh, actions, reward, done, obs,
                 mask, counts, ticks, parts, scratch)  # fmt: skip


@kernel
def _step_env_alone(states, rules_list, rule_of, i: int, fresh: bool, actions, reward,
                    done, obs, mask, counts, ticks) -> None:  # fmt: skip  # noqa: ANN001, PLR0913
    """``step_env`` behind a call: the parallel loop's body (see ``jit.kernel``)."""
    step_env(states, rules_list, rule_of, i, fresh, actions, reward, done, obs, mask,
             counts, ticks, np.zeros(N_PARTS), np.zeros((2, obs.shape[1])))  # fmt: skip


@kernel(parallel=True)
def step_envs_parallel(states, rules_list, rule_of, which, fresh: bool, actions, reward,
                       done, obs, mask, counts, ticks) -> None:  # fmt: skip  # noqa: ANN001, PLR0913
    """``step_env`` for each env of ``which``, on numba's threads (``jit.threads``):
    each env is written by one thread only, so the result is the serial one."""
    for j in prange(which.size):
        _step_env_alone(states, rules_list, rule_of, which[j], fresh, actions, reward,
                        done, obs, mask, counts, ticks)  # fmt: skip


class Batch:
    """``n`` episodes stepped together; see the module's docstring."""

    def __init__(
        self,
        n: int,
        scenarios: str | Sequence[str] = DEFAULT_SCENARIO,
        *,
        seed: int = 0,
        config: SimConfig | None = None,
        threads: int = 1,
        seed_limit: int | None = None,
    ) -> None:
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValueError(f"n must be a positive integer, got {n!r}")
        if seed_limit is not None and (
            not isinstance(seed_limit, int) or seed_limit < n
        ):
            raise ValueError(f"seed_limit must be an integer >= n, got {seed_limit!r}")
        self.seed_limit = seed_limit
        if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
            raise ValueError(f"threads must be a positive integer, got {threads!r}")
        self.config = config or SimConfig()
        if self.config.grid != "feeder_sum":
            raise ValueError(
                f"a Batch runs the feeder sum only, not grid={self.config.grid!r}: "
                "use EVGridEnv for the network models"
            )
        names = [scenarios] if isinstance(scenarios, str) else list(scenarios)
        if not names:
            raise ValueError("scenarios is empty")
        self.scenarios = [get_scenario(s) for s in names]  # unknown: a clear error
        self.n, self.threads = n, min(threads, n)
        self.rule_of = np.arange(n, dtype=np.int64) % len(self.scenarios)
        self._rules = [scenario_rules(self.config, sc) for sc in self.scenarios]
        self._rules_h = handles(self._rules)  # the kernels' handles (``jit.handle``)
        self.obs = np.zeros((n, OBS_SIZE), dtype=np.float32)
        self.mask = np.zeros((n, N_ACTIONS), dtype=bool)
        self.reward = np.zeros(n)
        self.done = np.zeros(n, dtype=bool)
        self.counts = np.zeros((n, 2), dtype=np.int64)  # this episode's steps, invalid
        self.returns = np.zeros(n)  # this episode's return so far
        self.episode = np.zeros(n, dtype=np.int64)  # each env's episode number
        self.ticks = np.zeros(n, dtype=np.int64)  # ticks simulated since reset
        self.finished: list[dict[str, Any]] = []  # episodes ended by the last step
        self._all = np.arange(n, dtype=np.int64)
        self._no_actions = np.zeros(n, dtype=np.int64)
        self.reset(seed)

    # --- Episodes --------------------------------------------------------------------
    def seed_of(self, i: int, k: int | None = None) -> int:
        """The seed of env ``i``'s ``k``-th episode (its current one by default)."""
        k = int(self.episode[i]) if k is None else k
        seed = self.base_seed + k * self.n + i
        return seed if self.seed_limit is None else seed % self.seed_limit

    def reset(self, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """Every env starts its first episode (seeds ``seed`` .. ``seed + n - 1``);
        the observations and masks (the batch's own arrays)."""
        if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
            raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
        if seed >= SEED_LIMIT:  # the kernels take each episode's seed as an int64
            raise ValueError(f"a batch's seed must be below 2**62, got {seed!r}")
        self.base_seed = int(seed)
        self.episode[:] = 0
        self.ticks[:] = 0
        self.counts[:] = 0
        self.returns[:] = 0.0
        self.done[:] = False
        self.finished = []
        self._states = [self._new_state(i) for i in range(self.n)]
        self._heads = handles(self._states)  # row i: the handle of ``_states[i]``
        self._start(np.arange(self.n))
        return self.obs, self.mask

    def _new_state(self, i: int) -> tuple:
        return new_state(self.seed_of(i), self.scenarios[self.rule_of[i]], self.config)

    def _renew(self, i: int) -> None:
        """Env ``i``'s next episode's state, and its handle."""
        self._states[i] = self._new_state(i)
        if isinstance(self._heads, np.ndarray):
            self._heads[i] = handle(self._states[i])

    def _start(self, which: np.ndarray) -> None:
        while which.size:
            self._run(which, True, self._no_actions)
            # An episode with no request at all has ended already: the next one
            empty = which[[bool(self._states[i][9][I_FINISHED]) for i in which]]
            for i in empty:
                self.episode[i] += 1
                self._renew(i)
            which = empty

    def step(self, actions: np.ndarray) -> tuple[np.ndarray, ...]:
        """One decision per env: (obs, reward, done, mask), the batch's own arrays
        (copy what you keep). Ended episodes restart at once (see ``finished``)."""
        acts = np.asarray(actions)
        if acts.shape != (self.n,) or acts.dtype.kind not in "iu":
            raise ValueError(
                f"actions must be {self.n} integer indices, got shape {acts.shape} "
                f"of {acts.dtype}"
            )
        self._run(self._all, False, acts.astype(np.int64, copy=False))
        self.returns += self.reward
        self.finished = []
        ended = np.flatnonzero(self.done)
        if ended.size:
            for i in ended:
                self.finished.append(self._summary(int(i)))
                self.episode[i] += 1
                self.returns[i] = 0.0
                self.counts[i] = 0
                self._renew(int(i))
            self._start(ended)
        return self.obs, self.reward, self.done, self.mask

    def _run(self, which: np.ndarray, fresh: bool, actions: np.ndarray) -> None:
        run = step_envs
        if self.threads > 1 and which.size > 1:
            threads(self.threads)
            run = step_envs_parallel
        run(self._heads, self._rules_h, self.rule_of, which, fresh, actions,
                  self.reward, self.done, self.obs, self.mask, self.counts,
                  self.ticks)  # fmt: skip

    def _summary(self, i: int) -> dict[str, Any]:
        ints, floats = self._states[i][9], self._states[i][10]
        return {
            "env": i,
            "scenario": self.scenarios[self.rule_of[i]].name,
            "seed": self.seed_of(i),
            "return": float(self.returns[i]),
            "steps": int(self.counts[i, 0]),
            "invalid": int(self.counts[i, 1]),
            "ticks": int(ints[I_TICK]),
            "evs_served": int(ints[I_SERVED]),
            "stranded": int(ints[I_STRANDED]),
            "gave_up": int(ints[I_GAVE_UP]),
            "critical_on_time": int(ints[I_ON_TIME]),
            "overload_ticks": int(ints[I_OVERLOAD_TICKS]),
            "stress_events": int(ints[I_STRESS_EVENTS]),
            "energy_kwh": float(floats[F_ENERGY]),
            "unmet_kwh": float(floats[F_UNMET]),
        }

    # --- Introspection ---------------------------------------------------------------
    def state_bytes(self) -> int:
        """Memory the episodes' states hold now [bytes], all envs (arrays only)."""
        return sum(a.nbytes for packed in self._states for a in packed)

    def close(self) -> None:
        """Nothing to release (numba's threads are the process's); kept for the
        vector envs' ``close``."""
