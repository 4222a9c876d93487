"""numpy's default random generator as kernels: the episodes' streams in one call.

An episode's random inputs come from ``np.random.default_rng`` streams spawned from
its seed (``episode.episode_streams``): a ``SeedSequence`` hashes the seed into a
``PCG64`` state, and the draws are numpy's algorithms over PCG64's 64-bit outputs.
numba can run those algorithms on a numpy ``Generator`` it is handed, but it cannot
make one, and making one from Python costs tens of microseconds an episode: more
than the episode's draws. So the same three steps are written here as kernels over a
generator held in four uint64s (``G_*``: PCG64's 128-bit state and increment):

- ``stream(entropy, k)``: ``default_rng(SeedSequence(entropy).spawn(k + 1)[k])``'s
  generator: numpy's SeedSequence (its hash and mix of 32-bit words, pool of 4) and
  PCG64's seeding (``pcg64_set_seed``);
- ``next64``: PCG64's step (the 128-bit LCG) and output (XSL-RR);
- ``uniform``, ``poisson``, ``normal``: ``Generator.random``, ``.poisson`` (the
  multiplication method below 10, PTRS from 10) and ``.normal`` (the 256-box
  ziggurat, with numpy's tables, ``data/ziggurat.npz``), the same floats.

``tests/core/test_core_pcg.py`` compares every step with numpy's on many seeds.
The arithmetic wraps at 64 bits as C's does; compiled that is numba's uint64, and as
Python (``NUMBA_DISABLE_JIT=1``) numpy's uint64 scalars, which wrap alike but warn:
the Python path silences that warning (``np.errstate``), nothing else.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path

import numpy as np

from .jit import COMPILED, kernel

G_STATE_HI, G_STATE_LO, G_INC_HI, G_INC_LO = 0, 1, 2, 3  # a generator's four words

_U = np.uint64
_M32, _S1, _S11, _S16, _S32, _S58, _S63, _S64 = (
    _U(0xFFFFFFFF), _U(1), _U(11), _U(16), _U(32), _U(58), _U(63), _U(64)
)  # fmt: skip
_ONE, _ZERO = _U(1), _U(0)
_MULT_HI, _MULT_LO = _U(2549297995355413924), _U(4865540595714422341)  # PCG64's
# SeedSequence's hash constants (numpy's ``bit_generator.pyx``)
_INIT_A, _MULT_A = _U(0x43B0D7E5), _U(0x931E8875)
_INIT_B, _MULT_B = _U(0x8B51F9DD), _U(0x58F38DED)
_MIX_L, _MIX_R = _U(0xCA01F9DD), _U(0x4973F715)
_TWO32 = _U(1 << 32)
POOL = 4  # SeedSequence's default pool size [32-bit words]

_Z = np.load(Path(__file__).with_name("data") / "ziggurat.npz")
KI, WI, FI = _Z["ki"], _Z["wi"], _Z["fi"]  # numpy's ziggurat tables, 256 boxes
for _t in (KI, WI, FI):
    _t.flags.writeable = False
ZIGGURAT_R = 3.6541528853610088  # the base box's edge
ZIGGURAT_INV_R = 0.27366123732975828


def _wrapping(fn: Callable) -> Callable:
    """``fn`` compiled, or, as Python, ``fn`` with numpy's overflow warning off (its
    uint64 scalars wrap as C's do; they only warn)."""
    if COMPILED:
        return kernel(fn)

    @functools.wraps(fn)
    def python(*args):  # noqa: ANN002, ANN202
        with np.errstate(over="ignore"):
            return fn(*args)

    return python


# --- PCG64 -----------------------------------------------------------------------
@_wrapping
def _mulhi(a, b):  # noqa: ANN001, ANN202
    """The high 64 bits of the 128-bit product of two uint64 (32-bit halves)."""
    a_lo, a_hi, b_lo, b_hi = a & _M32, a >> _S32, b & _M32, b >> _S32
    lolo, hilo = a_lo * b_lo, a_hi * b_lo
    cross = (lolo >> _S32) + (hilo & _M32) + a_lo * b_hi
    return a_hi * b_hi + (hilo >> _S32) + (cross >> _S32)


@_wrapping
def _step(g) -> None:  # noqa: ANN001
    """PCG64's LCG: state = state * multiplier + increment (mod 2**128)."""
    hi, lo = g[G_STATE_HI], g[G_STATE_LO]
    new_lo = lo * _MULT_LO
    new_hi = _mulhi(lo, _MULT_LO) + hi * _MULT_LO + lo * _MULT_HI
    out_lo = new_lo + g[G_INC_LO]
    carry = _ONE if out_lo < new_lo else _ZERO
    g[G_STATE_HI], g[G_STATE_LO] = new_hi + g[G_INC_HI] + carry, out_lo


@_wrapping
def next64(g):  # noqa: ANN001, ANN201
    """The generator's next 64 random bits (PCG64's step, then XSL-RR)."""
    _step(g)
    hi = g[G_STATE_HI]
    x, rot = hi ^ g[G_STATE_LO], hi >> _S58
    return (x >> rot) | (x << ((_S64 - rot) & _S63))


@_wrapping
def uniform(g) -> float:  # noqa: ANN001
    """``Generator.random()``: 53 random bits in [0, 1)."""
    return float(next64(g) >> _S11) * (1.0 / 9007199254740992.0)


# --- SeedSequence ------------------------------------------------------------------
@_wrapping
def _hashmix(value, hash_const):  # noqa: ANN001, ANN202
    """SeedSequence's hashmix of a 32-bit word: (hashed word, next hash constant)."""
    value = (value ^ hash_const) & _M32
    hash_const = (hash_const * _MULT_A) & _M32
    value = (value * hash_const) & _M32
    return value ^ (value >> _S16), hash_const


@_wrapping
def _mix(x, y):  # noqa: ANN001, ANN202
    """SeedSequence's mix of two 32-bit words (``L * x - R * y`` mod 2**32)."""
    r = (((_MIX_L * x) & _M32) + _TWO32 - ((_MIX_R * y) & _M32)) & _M32
    return r ^ (r >> _S16)


@_wrapping
def stream(entropy, k: int):  # noqa: ANN001, ANN201
    """The generator of ``default_rng(SeedSequence(entropy).spawn(k + 1)[k])``:
    ``entropy`` non-negative ints (int64), ``k`` >= 0; four uint64 (``G_*``)."""
    words = np.zeros(2 * entropy.size + POOL + 1, dtype=np.uint64)
    n = 0
    for v in entropy:  # each int as its 32-bit words, low first; 0 is one word
        words[n] = _U(v) & _M32
        n += 1
        v >>= 32
        while v > 0:
            words[n] = _U(v) & _M32
            n += 1
            v >>= 32
    n = max(n, POOL)  # the run's entropy padded to the pool before a spawn key
    words[n] = _U(k)
    n += 1
    pool = np.zeros(POOL, dtype=np.uint64)
    hc = _INIT_A
    for i in range(POOL):
        pool[i], hc = _hashmix(words[i], hc)
    for src in range(POOL):
        for dst in range(POOL):
            if src != dst:
                h, hc = _hashmix(pool[src], hc)
                pool[dst] = _mix(pool[dst], h)
    for src in range(POOL, n):
        for dst in range(POOL):
            h, hc = _hashmix(words[src], hc)
            pool[dst] = _mix(pool[dst], h)
    state = np.zeros(8, dtype=np.uint64)  # generate_state(4, uint64) as 8 words
    hb = _INIT_B
    for i in range(8):
        v = (pool[i % POOL] ^ hb) & _M32
        hb = (hb * _MULT_B) & _M32
        v = (v * hb) & _M32
        state[i] = v ^ (v >> _S16)
    seed = np.zeros(4, dtype=np.uint64)
    for i in range(4):  # little-endian uint64 of word pairs: seed hi, lo, inc hi, lo
        seed[i] = state[2 * i] | (state[2 * i + 1] << _S32)
    g = np.zeros(4, dtype=np.uint64)  # pcg64_set_seed: inc = initseq << 1 | 1
    g[G_INC_HI] = (seed[2] << _S1) | (seed[3] >> _S63)
    g[G_INC_LO] = (seed[3] << _S1) | _ONE
    _step(g)
    lo = g[G_STATE_LO] + seed[1]
    carry = _ONE if lo < seed[1] else _ZERO
    g[G_STATE_HI], g[G_STATE_LO] = g[G_STATE_HI] + seed[0] + carry, lo
    _step(g)
    return g


def stream_of(bit_generator: np.random.PCG64) -> np.ndarray:
    """A numpy PCG64's generator as four uint64 (``G_*``), where it stands now."""
    s = bit_generator.state
    if s["bit_generator"] != "PCG64" or s["has_uint32"]:
        raise ValueError("only a PCG64 with no half-used 64-bit output is supported")
    st, inc, m = s["state"]["state"], s["state"]["inc"], (1 << 64) - 1
    return np.array([st >> 64, st & m, inc >> 64, inc & m], dtype=np.uint64)


# --- Draws -----------------------------------------------------------------------
@_wrapping
def _loggam(x: float) -> float:
    """log(Gamma(x)) as numpy's ``random_loggam`` computes it (PTRS's test)."""
    if x == 1.0 or x == 2.0:
        return 0.0
    n = int(7 - x) if x < 7.0 else 0
    x0 = x + n
    x2 = (1.0 / x0) * (1.0 / x0)
    gl0 = -1.39243221690590e00
    for a in (1.796443723688307e-01, -2.955065359477124e-02, 6.410256410256410e-03,
              -1.917526917526918e-03, 8.417508417508418e-04, -5.952380952380952e-04,
              7.936507936507937e-04, -2.777777777777778e-03, 8.333333333333333e-02):  # fmt: skip
        gl0 = gl0 * x2 + a
    gl = gl0 / x0 + 0.5 * 1.8378770664093453e00 + (x0 - 0.5) * np.log(x0) - x0
    for _ in range(n):
        gl -= np.log(x0 - 1.0)
        x0 -= 1.0
    return gl


@_wrapping
def poisson(g, lam: float) -> int:  # noqa: ANN001
    """``Generator.poisson(lam)``: multiplication below 10, PTRS (Hormann) above."""
    if lam < 10.0:
        if lam == 0.0:
            return 0
        enlam, x, prod = np.exp(-lam), 0, 1.0
        while True:
            prod *= uniform(g)
            if prod > enlam:
                x += 1
            else:
                return x
    slam, loglam = np.sqrt(lam), np.log(lam)
    b = 0.931 + 2.53 * slam
    a = -0.059 + 0.02483 * b
    invalpha = 1.1239 + 1.1328 / (b - 3.4)
    vr = 0.9277 - 3.6224 / (b - 2)
    while True:
        u = uniform(g) - 0.5
        v = uniform(g)
        us = 0.5 - abs(u)
        k = int(np.floor((2 * a / us + b) * u + lam + 0.43))
        if us >= 0.07 and v <= vr:
            return k
        if k < 0 or (us < 0.013 and v > us):
            continue
        if np.log(v) + np.log(invalpha) - np.log(a / (us * us) + b) <= (
            -lam + k * loglam - _loggam(k + 1.0)
        ):
            return k


@_wrapping
def normal(g, loc: float, scale: float) -> float:  # noqa: ANN001
    """``Generator.normal(loc, scale)``: numpy's ziggurat, scaled."""
    while True:
        r = next64(g)
        idx = int(r & _U(0xFF))
        r >>= _U(8)
        rabs = (r >> _S1) & _U(0x000FFFFFFFFFFFFF)
        x = float(rabs) * WI[idx]
        if r & _ONE:
            x = -x
        if rabs < KI[idx]:
            return loc + scale * x
        if idx == 0:  # the tail beyond the base box
            while True:
                xx = -ZIGGURAT_INV_R * np.log1p(-uniform(g))
                yy = -np.log1p(-uniform(g))
                if yy + yy > xx * xx:
                    z = ZIGGURAT_R + xx
                    return loc + scale * (-z if (rabs >> _U(8)) & _ONE else z)
        elif (FI[idx - 1] - FI[idx]) * uniform(g) + FI[idx] < np.exp(-0.5 * x * x):
            return loc + scale * x
