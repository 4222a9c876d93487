"""An episode's start from its seed: its random streams, its draws, its first state.

Every episode starts from ``episode_inputs``: the arrivals, drawn from their own
stream (``fleet.draw_arrivals``), and the feeders' background noise, from another,
both spawned from the seed (``SeedSequence([seed, 0xE76]).spawn(2)``, numpy's
default generator, run as kernels by ``pcg.py``). ``EVGridEnv.reset`` draws them and
hands them to ``World``. ``seeded_state`` makes the same episode's packed state from
its seed in one compiled call, for the batch of episodes (``batch.py``), where an
episode starts every few dozen decisions: the same streams, the same kernels
(``fleet.draw_evs``, ``fleet.draw_attributes``, ``state.pack_state``), so the same
floats (``tests/core/test_core_episode_start.py`` compares both ways on many seeds).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from .config import SimConfig
from .fleet import (
    BATTERIES,
    CLASS_CDF,
    CLASS_TABLE,
    N_DRAWN,
    ORIGIN_WEIGHT,
    Arrivals,
    arrival_rates,
    cdf_of,
    draw_arrivals,
    draw_attributes,
    draw_evs,
)  # fmt: skip
from .jit import kernel
from .pcg import normal, stream
from .scenarios import Scenario
from .state import pack_state
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
    """A scenario's numbers that ``seeded_state`` reads, once per process."""
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


@kernel
def seeded_state(seed: int, lam, node_cdf, critical_scale: float, background_kw,
                 capacity_kw, limit_kw, tick_minutes: int) -> tuple:  # fmt: skip  # noqa: ANN001, PLR0913
    """The packed first state of episode ``seed`` (below 2**63; see the module's
    docstring): what ``World`` starts from after ``episode_inputs``."""
    entropy = np.array([seed, STREAMS_TAG], dtype=np.int64)
    arrivals_rng, noise_rng = stream(entropy, 0), stream(entropy, 1)
    tick, klass, node, u = draw_evs(arrivals_rng, lam, CLASS_CDF, node_cdf)
    out = np.empty((N_DRAWN, tick.size))
    draw_attributes(klass, u, CLASS_TABLE, BATTERIES, critical_scale, out)
    background = background_kw * feeder_noise(noise_rng, background_kw.shape[1])
    minute = (tick * tick_minutes).astype(np.float64)
    return pack_state(tick, minute, node, out[0], out[1], out[2], out[3], out[4],
                      out[5], out[6], out[7] > 0, out[8], background, capacity_kw,
                      limit_kw, tick_minutes)  # fmt: skip


def new_state(seed: int, sc: Scenario, config: SimConfig) -> tuple:
    """Episode ``seed``'s first packed state, drawn and packed in one call."""
    return seeded_state(seed, *start_numbers(sc, config))
