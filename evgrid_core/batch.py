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
reproducible whatever the order they end in. The next episode starts inside the
same kernel call (``episode.renew_state``: its streams spawned, its EVs drawn and
packed into the env's blocks, reused from one episode to the next). ``threads`` > 1
steps the envs on numba's threads (``play_envs_parallel``: a ``prange`` over runs of
envs, one run a thread; each env, its resets too, is played by one thread, so the
results are the one-thread ones; ``evgrid bench`` measures both).

The kernels are handed each state's handle (``jit.room_handle``: its blocks'
addresses in one int64 row, with room for more EVs than the episode has), not the
blocks: a batch's states are rows of one array. An episode that draws more EVs than
its env's room stops the kernel for that env; Python gives it a bigger room and
starts it again (the same seed, the same episode).

Only the feeder sum (the default grid model) runs here: the network models carry
each tick from Python (``world.py``) and belong to ``EVGridEnv``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .config import SimConfig
from .decide import strand
from .episode import EV_BLOCKS, expected_evs, renew_state, room_state, start_blocks
from .features import N_ACTIONS, OBS_SIZE, decode_index, encode_cached, shift_numbers
from .jit import (
    b1_1,
    b1_2,
    f4_2,
    f8_1,
    f8_2,
    handle,
    handles,
    i8_1,
    i8_2,
    kernel,
    prange,
    room_handle,
    threads,
)  # fmt: skip
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
    N_FLOATS,
    N_INTS,
    P_INVALID,
    R_INVALID,
    unpack,
    unpack_rules,
)  # fmt: skip
from .ticks import advance_feeder_sum, carry_feeder_sum
from .world import scenario_rules

N_PARTS = 13
SEED_LIMIT = 2**62  # a batch's first seed; its later episodes' stay below 2**63
ROOM_SDS = 6.0  # an env's room: the scenario's mean EVs and this many deviations


@kernel(inline=True)
def step_env(states, rules_list, rule_of, i: int, fresh: bool, actions, reward, done,
             obs, mask, counts, ticks, parts, scratch, cache, key) -> None:  # fmt: skip  # noqa: ANN001, PLR0913
    """Step env ``i`` by one decision (``Batch.step``), or, ``fresh``, start its new
    episode: the feeders' tick before the first (no EV load) and the clock run to the
    first request, as ``EVGridEnv.reset`` does. Then its observation and mask.
    ``parts`` (13) and ``scratch`` (2, OBS_SIZE) are the caller's work arrays;
    ``cache`` and ``key``, the batch's (``features.encode_cached``, a row an env)."""
    st, rules = unpack(states[i]), unpack_rules(rules_list[rule_of[i]])
    parts[:] = 0.0
    tick = st.ints[I_TICK]
    if fresh:
        key[i] = -1  # a new episode: nothing of the last one's observation holds
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
    encode_cached(st, rules, finished, obs[i], mask[i], scratch_f, cache[i],
                  key[i : i + 1])  # fmt: skip


@kernel(inline=True)
def seed_at(seeding, i: int, k: int) -> int:  # noqa: ANN001
    """Env ``i``'s ``k``-th episode's seed (``Batch.seed_of``): ``seeding`` holds the
    first seed, the number of envs and the seed limit (0: none)."""
    seed = seeding[0] + k * seeding[1] + i
    return seed % seeding[2] if seeding[2] > 0 else seed


@kernel(inline=True)
def play_env(states, rules_list, rule_of, starts, seeding, i: int, step: bool,
             actions, reward, done, obs, mask, counts, ticks, returns, episode, ended_i,
             ended_f, need, parts, scratch, cache, key) -> None:  # fmt: skip  # noqa: ANN001, PLR0913
    """Env ``i``: one decision (``step``) and, if that ends its episode, the episode's
    summary into ``ended_i``/``ended_f`` (its counters and sums, then seed, steps,
    invalid answers and return) and the next episode's start; or (not ``step``) the
    start of its episode now. An episode with no request at all is skipped (its
    state ends at once). ``need[i]``: the EVs of an episode it had no room for."""
    fresh = not step
    while True:  # one call of each rule's kernel: each is inlined here
        if fresh:
            need[i] = renew_state(states, i, seed_at(seeding, i, episode[i]),
                                  starts[rule_of[i]])  # fmt: skip
            if need[i]:
                return
        step_env(states, rules_list, rule_of, i, fresh, actions, reward, done, obs,
                 mask, counts, ticks, parts, scratch, cache, key)  # fmt: skip
        h = states[i]
        ints = i8_1(h, 9)
        if fresh:
            if ints[I_FINISHED] == 0:
                return
            episode[i] += 1  # no request at all: the next episode
            continue
        returns[i] += reward[i]
        if not done[i]:
            return
        floats = f8_1(h, 10)
        n_ints, n_floats = ints.size, floats.size
        ended_i[i, :n_ints] = ints
        ended_i[i, n_ints] = seed_at(seeding, i, episode[i])
        ended_i[i, n_ints + 1], ended_i[i, n_ints + 2] = counts[i, 0], counts[i, 1]
        ended_f[i, :n_floats] = floats
        ended_f[i, n_floats] = returns[i]
        returns[i], counts[i, 0], counts[i, 1] = 0.0, 0, 0
        episode[i] += 1
        fresh = True


@kernel(inline=True)
def play_env_io(states, rules_list, rule_of, starts, i: int, step: bool, actions, io,
                parts, scratch) -> None:  # fmt: skip  # noqa: ANN001, PLR0913
    """``play_env`` with the batch's arrays from their handle ``io`` (``Batch._io``:
    one argument for fourteen; a compiled call checks each argument it is handed)."""
    play_env(states, rules_list, rule_of, starts, i8_1(io, 11), i, step, actions,
             f8_1(io, 0), b1_1(io, 1), f4_2(io, 2), b1_2(io, 3), i8_2(io, 4),
             i8_1(io, 5), f8_1(io, 6), i8_1(io, 7), i8_2(io, 8), f8_2(io, 9),
             i8_1(io, 10), parts, scratch, f4_2(io, 12), i8_1(io, 13))  # fmt: skip


@kernel
def play_envs(states, rules_list, rule_of, starts, which, step: bool, actions,
              io) -> None:  # fmt: skip  # noqa: ANN001
    """``play_env`` for each env of ``which``, in one thread (the rules inlined), with
    one set of work arrays."""
    parts = np.zeros(N_PARTS)
    scratch = np.zeros((2, OBS_SIZE))
    for i in which:
        play_env_io(states, rules_list, rule_of, starts, i, step, actions, io, parts,
                    scratch)  # fmt: skip


@kernel(parallel=True)
def play_envs_parallel(states, rules_list, rule_of, starts, which, step: bool, actions,
                       io, chunks: int) -> None:  # fmt: skip  # noqa: ANN001
    """``which`` cut into ``chunks`` runs of envs, each played by ``play_envs`` on one
    of numba's threads (``jit.threads``): each env is written by one thread only, so
    the result is the serial one."""
    n = which.size
    for c in prange(chunks):
        play_envs(states, rules_list, rule_of, starts,
                  which[c * n // chunks : (c + 1) * n // chunks], step, actions, io)  # fmt: skip


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
        room: float = ROOM_SDS,
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
        if not isinstance(room, int | float) or not room >= 0:
            raise ValueError(f"room must be a number of deviations >= 0, got {room!r}")
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
        self._starts = [start_blocks(sc, self.config) for sc in self.scenarios]
        self._starts_h = handles(self._starts)
        self._room = [self._room_for(sc, room) for sc in self.scenarios]
        self.obs = np.zeros((n, OBS_SIZE), dtype=np.float32)
        # each env's observation entries that hold for its tick, and which tick
        # (``features.encode_cached``)
        self._obs_tick = np.zeros((n, OBS_SIZE), dtype=np.float32)
        self._obs_key = np.full(n, -1, dtype=np.int64)
        self.mask = np.zeros((n, N_ACTIONS), dtype=bool)
        self.reward = np.zeros(n)
        self.done = np.zeros(n, dtype=bool)
        self.counts = np.zeros((n, 2), dtype=np.int64)  # this episode's steps, invalid
        self.returns = np.zeros(n)  # this episode's return so far
        self.episode = np.zeros(n, dtype=np.int64)  # each env's episode number
        self.ticks = np.zeros(n, dtype=np.int64)  # ticks simulated since reset
        self.finished: list[dict[str, Any]] = []  # episodes ended by the last step
        # the last ended episode's counters and sums (``play_env``), the EVs an
        # episode had no room for
        self._ended_i = np.zeros((n, N_INTS + 3), dtype=np.int64)
        self._ended_f = np.zeros((n, N_FLOATS + 1))
        self._need = np.zeros(n, dtype=np.int64)
        self._all = np.arange(n, dtype=np.int64)
        self._no_actions = np.zeros(n, dtype=np.int64)
        self.reset(seed)

    def _room_for(self, sc: Any, sds: float) -> int:
        """The EVs an env's blocks make room for: the mean and ``sds`` deviations."""
        mean = expected_evs(sc, self.config)
        return int(mean + sds * mean**0.5) + 1

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
        self._seeding = np.array([seed, self.n, self.seed_limit or 0], dtype=np.int64)
        for a in (self.episode, self.ticks, self.counts, self.returns, self.done):
            a[...] = 0
        self.finished = []
        self._states = [self._room_state(i, self._room[self.rule_of[i]])
                        for i in range(self.n)]  # fmt: skip
        self._heads = handles(self._states, EV_BLOCKS)  # row i: ``_states[i]``'s
        self._io = handle((self.reward, self.done, self.obs, self.mask, self.counts,
                           self.ticks, self.returns, self.episode, self._ended_i,
                           self._ended_f, self._need, self._seeding, self._obs_tick,
                           self._obs_key))  # fmt: skip
        self._run(self._all, False, self._no_actions)
        self._make_room()
        return self.obs, self.mask

    def _room_state(self, i: int, room: int) -> tuple:
        return room_state(self.scenarios[self.rule_of[i]], self.config, room)

    def _make_room(self) -> None:
        """Envs whose episode drew more EVs than their room: a bigger room, and the
        episode's start again."""
        while (needy := np.flatnonzero(self._need)).size:
            for i in needy:
                room = int(self._need[i] * 1.25) + 1
                self._states[i] = self._room_state(int(i), room)
                if isinstance(self._heads, np.ndarray):
                    self._heads[i] = room_handle(self._states[i], EV_BLOCKS)
            self._run(needy, False, self._no_actions)

    def step(self, actions: np.ndarray) -> tuple[np.ndarray, ...]:
        """One decision per env: (obs, reward, done, mask), the batch's own arrays
        (copy what you keep). Ended episodes restart at once (see ``finished``)."""
        acts = np.asarray(actions)
        if acts.shape != (self.n,) or acts.dtype.kind not in "iu":
            raise ValueError(
                f"actions must be {self.n} integer indices, got shape {acts.shape} "
                f"of {acts.dtype}"
            )
        self._run(self._all, True, acts.astype(np.int64, copy=False))
        self.finished = []
        if self.done.any():
            self.finished = [self._summary(int(i)) for i in np.flatnonzero(self.done)]
            self._make_room()
        return self.obs, self.reward, self.done, self.mask

    def _run(self, which: np.ndarray, step: bool, actions: np.ndarray) -> None:
        if self.threads > 1 and which.size > 1:
            chunks = threads(min(self.threads, which.size))
            play_envs_parallel(self._heads, self._rules_h, self.rule_of,
                               self._starts_h, which, step, actions, self._io, chunks)  # fmt: skip
        else:
            play_envs(self._heads, self._rules_h, self.rule_of, self._starts_h, which,
                      step, actions, self._io)  # fmt: skip

    def _summary(self, i: int) -> dict[str, Any]:
        """Env ``i``'s episode that the last step ended (``play_env`` kept it)."""
        ints, floats = self._ended_i[i], self._ended_f[i]
        return {
            "env": i,
            "scenario": self.scenarios[self.rule_of[i]].name,
            "seed": int(ints[N_INTS]),
            "return": float(floats[N_FLOATS]),
            "steps": int(ints[N_INTS + 1]),
            "invalid": int(ints[N_INTS + 2]),
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
        """Memory the episodes' states hold now [bytes], all envs (arrays only,
        their room for more EVs and the observations' tick entries included)."""
        kept = self._obs_tick.nbytes + self._obs_key.nbytes
        return kept + sum(a.nbytes for packed in self._states for a in packed)

    def close(self) -> None:
        """Nothing to release (numba's threads are the process's); kept for the
        vector envs' ``close``."""
