"""An episode's start drawn and packed in one compiled call is ``EVGridEnv``'s, to the bit.

``episode.renew_state`` (the batch's resets) spawns the streams, draws the arrivals
and the feeders' noise and packs the state, in place in an env's blocks, inside one
kernel. ``EVGridEnv.reset``
spawns them from Python (``episode_streams``), draws them through ``World``'s path and
packs them through ``state.make_state``. Both must give the same packed state on
every seed of every scenario, and the kernels' draws must be numpy's own.
"""

import numpy as np
import pytest

from evgrid_core.config import SimConfig
from evgrid_core.episode import (
    BACKGROUND_NOISE_SD,
    EV_BLOCKS,
    episode_inputs,
    episode_streams,
    feeder_noise,
    renew_state,
    room_state,
    start_blocks,
)
from evgrid_core.fleet import CLASS_CDF, EV_CLASSES, draw_evs
from evgrid_core.jit import COMPILED, SLOT, handle, handles
from evgrid_core.pcg import stream_of
from evgrid_core.scenarios import SCENARIOS, get_scenario
from evgrid_core.state import make_state
from evgrid_core.tables import scenario_tables

SEEDS = [*range(40), 12345, 900000, 2**31 - 1, 2**40 + 7]


def world_state(seed: int, scenario: str, config: SimConfig) -> tuple:
    """The packed state as ``World`` builds it (``EVGridEnv.reset``'s path)."""
    sc = get_scenario(scenario)
    tables = scenario_tables(sc, config)
    arrivals, noise = episode_inputs(seed, sc, config)
    return make_state(config, sc, tables, arrivals, tables.background_kw * noise)


def batch_state(seed: int, sc, config: SimConfig, room: int = 1) -> tuple:  # noqa: ANN001
    """The packed state as a batch starts it (``renew_state`` into an env's blocks with
    room for ``room`` EVs, a bigger room when it asks for one), as plain blocks."""
    start = handle(start_blocks(sc, config))
    while True:
        blocks = room_state(sc, config, room)
        records = handles([blocks], EV_BLOCKS)
        need = renew_state(records, 0, seed, start)
        if not need:
            break
        assert need > room  # it asks for more only when it had too little
        room = need
    if not COMPILED:  # as Python, the record is the tuple itself (``jit.resize``)
        return tuple(records[0])
    n = int(records[0, SLOT * EV_BLOCKS[0] + 2])  # the columns its EV blocks hold
    return tuple(
        b.reshape(-1)[: b.shape[0] * n].reshape(b.shape[0], n) if k in EV_BLOCKS else b
        for k, b in enumerate(blocks)
    )


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_the_batchs_episode_start_is_the_envs(scenario: str) -> None:
    config = SimConfig()
    for seed in SEEDS:
        want = world_state(seed, scenario, config)
        got = batch_state(seed, get_scenario(scenario), config)
        assert len(got) == len(want)
        for k, (g, w) in enumerate(zip(got, want, strict=True)):
            assert g.dtype == w.dtype and g.shape == w.shape, (scenario, seed, k)
            assert np.array_equal(g, w, equal_nan=True), (scenario, seed, k)


def test_an_episode_without_arrivals_starts_alike() -> None:
    """A seed whose Poisson draws give no EV at all (rates made zero) packs an empty
    state, in a room with no EV at all."""
    config, sc = SimConfig(), get_scenario("evening_peak")
    lam, *rest = start_blocks(sc, config)
    start = handle((lam * 0.0, *rest))
    records = handles([room_state(sc, config, 0)], EV_BLOCKS)
    assert renew_state(records, 0, 3, start) == 0
    if COMPILED:
        assert records[0, SLOT * 0 + 2] == 0 and records[0, SLOT * 1 + 2] == 0
    else:
        packed = records[0]
        assert packed[0].shape[1] == 0 and packed[1].shape[1] == 0
        assert packed[8].shape[1] == sc.n_ticks


def test_the_kernels_draws_are_numpys_vectorised_draws() -> None:
    """The kernels' ``poisson`` and ``uniform`` (``pcg.py``) consume the stream as
    numpy's vectorised calls do: the same counts, classes, nodes and uniforms."""
    for seed in range(300):
        rng = np.random.default_rng(seed + 10_000)
        lam = rng.random(int(rng.integers(1, 300))) * rng.choice([0.1, 2.0, 15.0, 40.0])
        weights = rng.random(int(rng.integers(1, 40))) + 0.01
        node_cdf = (weights / weights.sum()).cumsum()
        node_cdf /= node_cdf[-1]
        ref = np.random.default_rng(seed)
        counts = ref.poisson(lam)
        n = int(counts.sum())
        shares = np.array([c.share for c in EV_CLASSES])
        klass = ref.choice(len(shares), size=n, p=shares / shares.sum())
        node = ref.choice(len(weights), size=n, p=weights / weights.sum())
        u = ref.random((n, 6))
        g = stream_of(np.random.default_rng(seed).bit_generator)
        tick, k2, n2, u2 = draw_evs(g, lam, CLASS_CDF, node_cdf)
        assert np.array_equal(tick, np.repeat(np.arange(lam.size), counts)), seed
        assert np.array_equal(k2, klass) and np.array_equal(n2, node), seed
        assert np.array_equal(u2, u), seed


def test_the_feeders_noise_is_numpys_normal() -> None:
    for seed in range(300):
        want = np.random.default_rng(seed).normal(1.0, BACKGROUND_NOISE_SD, 6)
        got = feeder_noise(stream_of(np.random.default_rng(seed).bit_generator), 6)
        assert np.array_equal(got, want), seed


@pytest.mark.parametrize("seed", [0, 1, 2**32, 2**40 + 7, 2**63 + 5, 2**100 + 3])
def test_every_seed_spawns_numpys_streams(seed: int) -> None:
    """``episode_streams`` hands the seed over as its 32-bit words: seeds beyond
    int64 (``EVGridEnv.reset`` takes any non-negative int) spawn numpy's streams."""
    want = np.random.SeedSequence([seed, 0xE76]).spawn(2)
    for got, ss in zip(episode_streams(seed), want, strict=True):
        assert np.array_equal(got, stream_of(np.random.PCG64(ss)))
