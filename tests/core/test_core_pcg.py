"""numpy's default generator as kernels (``evgrid_core.pcg``) gives numpy's numbers.

Every step is compared with numpy's own: the generator a SeedSequence spawns (its
PCG64 state and increment), the raw 64-bit outputs, and the three draws the
episodes use (``random``, ``poisson`` on both of its algorithms, ``normal`` with the
ziggurat's rare branches), on seeds chosen at random and at the edges.
"""

import numpy as np
import pytest

from evgrid_core.pcg import next64, normal, poisson, stream, stream_of, uniform

ENTROPIES = [[0], [5, 0xE76], [0, 0xE76], [2**31 - 1, 0xE76], [2**40 + 7, 0xE76],
             [2**62 + 3, 9, 1, 2, 3, 4], [1, 2, 3], [7] * 9]  # fmt: skip


def numpy_generator(entropy: list[int], k: int) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence(entropy).spawn(k + 1)[k])


@pytest.mark.parametrize("entropy", ENTROPIES)
def test_a_spawned_stream_is_numpys(entropy: list[int]) -> None:
    for k in (0, 1, 2, 7, 300):
        got = stream(np.array(entropy, dtype=np.int64), k)
        want = stream_of(numpy_generator(entropy, k).bit_generator)
        assert got.dtype == np.uint64 and np.array_equal(got, want), (entropy, k)


def test_random_seeds_spawn_numpys_streams() -> None:
    rng = np.random.default_rng(20261205)
    for _ in range(200):
        entropy = [int(x) for x in rng.integers(0, 2**62, size=rng.integers(1, 7))]
        k = int(rng.integers(0, 5))
        got = stream(np.array(entropy, dtype=np.int64), k)
        assert np.array_equal(got, stream_of(numpy_generator(entropy, k).bit_generator))


def test_the_raw_outputs_and_uniforms_are_numpys() -> None:
    for entropy in ENTROPIES:
        ref = numpy_generator(entropy, 0)
        g = stream_of(ref.bit_generator)
        raw = [int(next64(g)) for _ in range(300)]
        assert raw == [int(x) for x in ref.bit_generator.random_raw(300)]
        got = [uniform(g) for _ in range(300)]
        assert got == list(ref.random(300))  # float equality: the same bits


@pytest.mark.parametrize("lam", [0.0, 1e-9, 0.3, 2.5, 9.999, 10.0, 10.5, 37.0, 400.0])
def test_poisson_is_numpys_on_both_algorithms(lam: float) -> None:
    ref = np.random.default_rng([11, int(lam * 1000)])
    g = stream_of(ref.bit_generator)
    got = [poisson(g, lam) for _ in range(2000)]
    assert got == [int(x) for x in ref.poisson(lam, 2000)]
    assert np.array_equal(g, stream_of(ref.bit_generator))  # as many outputs used


def test_normal_is_numpys_through_the_ziggurats_rare_branches() -> None:
    """200,000 draws take the base box's tail (about 1 in 4,000) and the wedges'
    rejection test many times; every float must match."""
    ref = np.random.default_rng(4)
    g = stream_of(ref.bit_generator)
    got = np.array([normal(g, 1.0, 0.02) for _ in range(200_000)])
    want = ref.normal(1.0, 0.02, 200_000)
    assert np.array_equal(got, want)
    assert (np.abs(want - 1.0) > 0.02 * 3.6541528853610088).sum() > 10  # tail draws
    assert np.array_equal(g, stream_of(ref.bit_generator))


def test_stream_of_refuses_what_it_cannot_hold() -> None:
    with pytest.raises(ValueError, match="PCG64"):
        stream_of(np.random.MT19937(0))
    bg = np.random.PCG64(0)
    bg.random_raw()
    np.random.Generator(bg).integers(0, 10, dtype=np.uint32)  # half a 64-bit output
    with pytest.raises(ValueError, match="half-used"):
        stream_of(bg)
