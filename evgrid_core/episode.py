"""An episode's start from its seed: its random streams, its draws, its first state.

Every episode starts from ``episode_inputs``: the arrivals, drawn from their own
stream (``fleet.draw_arrivals``), and the feeders' background noise, from another,
both spawned from the seed (``SeedSequence([seed, 0xE76]).spawn(2)``, numpy's
default generator, run as kernels by ``pcg.py``). ``EVGridEnv.reset`` draws them and
hands them to ``World``. ``renew_state`` makes the same episode's packed state from
its seed in one compiled call, in place in a batch's env (``batch.py``), where an
episode starts every few dozen decisions: the same streams, the same kernels
(``fleet.draw_fleet``, ``state.pack_into``), so the same
floats (``tests/core/test_core_episode_start.py`` compares both ways on many seeds).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from .config import SimConfig
from .fleet import (
    ORIGIN_WEIGHT,
    Arrivals,
    arrival_rates,
    cdf_of,
    draw_arrivals,
    draw_fleet,
)  # fmt: skip
from .jit import (
    b1_1,
    b1_2,
    f8_1,
    f8_2,
    f8_3,
    has_room,
    i8_1,
    i8_2,
    i8_3,
    kernel,
    resize,
)
from .pcg import normal, stream
from .scenarios import Scenario
from .state import empty_state, pack_into
from .tables import scenario_tables

BACKGROUND_NOISE_SD = 0.02  # each feeder's background, times N(1, 0.02) an episode [A]
STREAMS_TAG = 0xE76  # the episodes' streams: SeedSequence([seed, STREAMS_TAG]).spawn(2)


def episode_streams(seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The two random streams of episode ``seed`` (``pcg.stream``): its arrivals',
    its noise's. A seed is handed over as its 32-bit words (SeedSequence's own
    reading of an int), so every non-negative int is a seed."""
    words = [seed & 0xFFFFFFFF]
    while seed >> 32:
        seed >>= 32
        words.append(seed & 0xFFFFFFFF)
    entropy = np.array([*words, STREAMS_TAG], dtype=np.int64)
    return stream(entropy, 0), stream(entropy, 1)


@kernel
def feeder_noise(rng, n: int):  # noqa: ANN001, ANN201
    """``n`` feeders' background multipliers (1.0 = none) from the stream ``rng``,
    as numpy's ``Generator.normal(1.0, BACKGROUND_NOISE_SD, n)`` draws them."""
    out = np.empty(n)
    for f in range(n):
        out[f] = normal(rng, 1.0, BACKGROUND_NOISE_SD)
    return out


def episode_inputs(
    seed: int,
    sc: Scenario,
    config: SimConfig,
    *,
    draw: bool = True,
    draw_noise: bool = True,
) -> tuple[Arrivals | None, np.ndarray | None]:
    """An episode's random inputs from its seed: the arrivals (their own stream)
    and the feeders' background noise (multipliers, 1.0 = none), each drawn when
    asked (``reset`` skips what it was handed). Every episode starts from these."""
    tables = scenario_tables(sc, config)
    arrivals_rng, noise_rng = episode_streams(seed)
    arrivals = noise = None
    if draw:
        arrivals = draw_arrivals(
            arrivals_rng,
            start_minute=sc.start_minute,
            n_ticks=sc.n_ticks,
            tick_minutes=config.tick_minutes,
            node_weights=node_weights(tables.city.nodes, sc),
            arrival_scale=sc.arrival_scale,
            critical_scale=sc.critical_scale,
        )
    if draw_noise:
        noise = feeder_noise(noise_rng, len(tables.city.feeders))
    return arrivals, noise


@lru_cache(maxsize=64)
def node_weights(nodes: tuple[str, ...], sc: Scenario) -> np.ndarray:
    """How often each node is an EV's origin in the scenario (relative weights)."""
    boost = dict(sc.origin_boost)
    out = np.array([ORIGIN_WEIGHT.get(n, 1.0) * boost.get(n, 1.0) for n in nodes])
    out.flags.writeable = False  # shared by every episode of the scenario
    return out


@lru_cache(maxsize=64)
def start_numbers(sc: Scenario, config: SimConfig) -> tuple:
    """A scenario's numbers that an episode's start reads, once per process."""
    tables = scenario_tables(sc, config)
    return (
        arrival_rates(
            sc.start_minute, sc.n_ticks, config.tick_minutes, sc.arrival_scale
        ),
        cdf_of(node_weights(tables.city.nodes, sc)),
        float(sc.critical_scale),
        np.ascontiguousarray(tables.background_kw, dtype=float),
        np.ascontiguousarray(tables.capacity_kw, dtype=float),
        np.asarray(tables.limit_kw, dtype=float),
        int(config.tick_minutes),
    )


@kernel(inline=True)
def draw_episode(seed: int, lam, node_cdf, critical_scale: float, background_kw,
                 tick_minutes: int) -> tuple:  # fmt: skip  # noqa: ANN001
    """Episode ``seed``'s draws (below 2**63): its EVs' ticks, minutes, nodes and
    attributes (``fleet.draw_fleet``'s rows) and its feeders' background."""
    entropy = np.array([seed, STREAMS_TAG], dtype=np.int64)
    arrivals_rng, noise_rng = stream(entropy, 0), stream(entropy, 1)
    tick, minute, _, node, out = draw_fleet(
        arrivals_rng, lam, node_cdf, critical_scale, tick_minutes
    )
    background = background_kw * feeder_noise(noise_rng, background_kw.shape[1])
    return tick, minute, node, out, background


# --- A batch's episodes, started in place ----------------------------------------
EV_BLOCKS = (0, 1, 2)  # a packed state's blocks sized by its EVs (rows x EVs)


def start_blocks(sc: Scenario, config: SimConfig) -> tuple:
    """``start_numbers`` as blocks, for a handle (``jit.handle``): the rates, the
    nodes' shares, the background, the capacity, the limits, then (critical scale,
    tick minutes)."""
    lam, cdf, critical, background, capacity, limit, minutes = start_numbers(sc, config)
    return (lam, cdf, background, capacity, limit,
            np.array([critical, minutes], dtype=float))  # fmt: skip


def room_state(sc: Scenario, config: SimConfig, room: int) -> tuple:
    """A packed state's blocks with room for ``room`` EVs, unfilled: a batch's
    env (``renew_state`` starts its episodes in them)."""
    tables = scenario_tables(sc, config)
    return empty_state(room, len(tables.limit_kw), tables.capacity_kw.shape[1],
                       sc.n_ticks)  # fmt: skip


def expected_evs(sc: Scenario, config: SimConfig) -> float:
    """The mean number of EVs an episode of the scenario draws."""
    return float(start_numbers(sc, config)[0].sum())


@kernel
def renew_state(records, i: int, seed: int, start) -> int:  # noqa: ANN001
    """Record ``i`` of a batch's handles (``jit.room_handle``) becomes episode
    ``seed``'s first state, in place, from its scenario's ``start_blocks`` handle.
    0, or, where its blocks have no room for the episode's EVs, how many EVs it
    draws (nothing is written; the caller makes room and asks again)."""
    lam, cdf, numbers = f8_1(start, 0), f8_1(start, 1), f8_1(start, 5)
    background_kw, capacity_kw, limit_kw = (
        f8_2(start, 2),
        f8_2(start, 3),
        f8_1(start, 4),
    )
    minutes = int(numbers[1])
    tick, minute, node, out, background = draw_episode(
        seed, lam, cdf, numbers[0], background_kw, minutes
    )
    n = tick.size
    for k in EV_BLOCKS:
        if not has_room(records, i, k, n):
            return max(n, 1)
    for k in EV_BLOCKS:
        resize(records, i, k, n)
    h = records[i]
    blocks = (f8_2(h, 0), i8_2(h, 1), b1_2(h, 2), i8_3(h, 3), i8_1(h, 4), f8_2(h, 5),
              f8_2(h, 6), b1_1(h, 7), f8_3(h, 8), i8_1(h, 9), f8_1(h, 10))  # fmt: skip
    pack_into(blocks, tick, minute, node, out[0], out[1], out[2], out[3], out[4],
              out[5], out[6], out[7] > 0, out[8], background, capacity_kw, limit_kw,
              minutes)  # fmt: skip
    return 0
