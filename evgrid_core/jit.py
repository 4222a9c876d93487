"""The core's one speed switch: the world's rules compiled by numba, or run as Python.

``kernel`` marks a function written in the subset of Python that numba compiles
(scalars, numpy arrays, loops, named tuples of arrays). With numba installed it is
compiled on first use and cached on disk (``cache=True``); without numba, or with
``NUMBA_DISABLE_JIT=1``, the very same function runs as plain Python, slower and
with the same floats (``tests/core/test_core_jit.py`` plays episodes both ways).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import numpy as np

F = TypeVar("F", bound=Callable)

try:
    import numba
except ImportError:  # pragma: no cover - numba is a core dependency
    numba = None

COMPILED = numba is not None and os.environ.get("NUMBA_DISABLE_JIT", "0") in ("", "0")

# --- The on-disk cache ----------------------------------------------------------------
# numba keys a cached kernel on its own file only: a kernel that calls one in another
# module (``entry.call`` calls them all) would keep the old code after that module
# changed. So the whole core's cache goes as soon as any module with a kernel changes
# (the constants the kernels read live in those modules too).
_HERE = Path(__file__).resolve().parent
_CACHE = _HERE / "__pycache__"


def _sources_digest() -> str:
    """A digest of the core's modules that hold kernels (or the kernels' constants)."""
    h = hashlib.sha256()
    for path in sorted(_HERE.glob("*.py")):
        text = path.read_bytes()
        if b"@kernel" in text:
            h.update(path.name.encode() + b"\0" + text)
    return h.hexdigest()


def _drop_stale_cache() -> None:
    stamp = _CACHE / "kernels.sources"
    digest = _sources_digest()
    try:
        if stamp.read_text() == digest:
            return
    except OSError:
        pass
    try:
        for path in _CACHE.glob("*.nb[ic]"):
            path.unlink(missing_ok=True)
        _CACHE.mkdir(exist_ok=True)
        stamp.write_text(digest)
    except OSError:  # a read-only install: numba then caches elsewhere or compiles
        pass


if COMPILED:
    _drop_stale_cache()


def kernel(fn: F | None = None, *, inline: bool = False) -> F:
    """``fn`` compiled (no Python objects, IEEE floats: no fastmath), or ``fn``.

    ``@kernel(inline=True)`` for the rules that take an episode's state: numba then
    copies them into each caller. A compiled call that hands over the state's fifty
    arrays costs about 0.8 us in reference counts, more than most rules' work (a
    tick made a dozen such calls); inlined, the caller's views are used as they are.
    The entry points (``entry.py``, ``batch.py``) stay calls, and each calls the
    clock's run (``advance_feeder_sum``, a tick's every rule) from one place only: an
    inlined kernel is compiled once per call site.
    """
    if fn is None:
        return lambda f: kernel(f, inline=inline)  # type: ignore[return-value]
    if numba is None:
        return fn
    how = "always" if inline else "never"
    return numba.njit(cache=True, nogil=True, inline=how)(fn)  # type: ignore[return-value]


# --- numpy's sum, to the bit -------------------------------------------------------
# ``np.sum`` of float64 adds pairwise (blocks of 8 partial sums up to 128 elements,
# halves above); a plain loop rounds differently. The world's totals went through
# ``ndarray.sum`` before they were compiled, so the kernels add the same way.
@kernel
def _block(a, lo: int, n: int) -> float:  # noqa: ANN001
    """numpy's sum of at most 128 elements: 8 running sums, then the rest."""
    if n < 8:
        res = -0.0
        for i in range(lo, lo + n):
            res += a[i]
        return res
    r0, r1, r2, r3 = a[lo], a[lo + 1], a[lo + 2], a[lo + 3]
    r4, r5, r6, r7 = a[lo + 4], a[lo + 5], a[lo + 6], a[lo + 7]
    i = 8
    whole = n - n % 8
    while i < whole:
        j = lo + i
        r0 += a[j]
        r1 += a[j + 1]
        r2 += a[j + 2]
        r3 += a[j + 3]
        r4 += a[j + 4]
        r5 += a[j + 5]
        r6 += a[j + 6]
        r7 += a[j + 7]
        i += 8
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < n:
        res += a[lo + i]
        i += 1
    return res


@kernel
def _pairwise(a, lo: int, n: int) -> float:  # noqa: ANN001
    """numpy's pairwise sum: blocks of at most 128, halves (multiples of 8) added.

    numpy recurses; numba's on-disk cache cannot hold a recursive kernel, so the
    same tree is walked with a stack (left half, right half, then their sum)."""
    los = np.empty(64, dtype=np.int64)
    ns = np.empty(64, dtype=np.int64)
    stage = np.zeros(64, dtype=np.int64)
    sums = np.empty(64)
    top, n_sums = 0, 0
    los[0], ns[0] = lo, n
    while top >= 0:
        here, m = los[top], ns[top]
        if m <= 128:
            sums[n_sums] = _block(a, here, m)
            n_sums += 1
            top -= 1
            continue
        half = m // 2
        half -= half % 8
        if stage[top] < 2:  # the left half first, then the right
            stage[top] += 1
            first = stage[top] == 1
            top += 1
            los[top] = here if first else here + half
            ns[top] = half if first else m - half
            stage[top] = 0
        else:
            n_sums -= 1
            sums[n_sums - 1] = sums[n_sums - 1] + sums[n_sums]
            top -= 1
    return sums[0]


@kernel
def array_sum(a, n: int) -> float:  # noqa: ANN001
    """``float(a[:n].sum())`` for a float64 array, the same float numpy gives."""
    return 0.0 if n == 0 else _pairwise(a, 0, n)


def typed_list(items: list) -> list:
    """``items`` as a list a kernel can take (numba's typed ``List``: its items all
    of one type, e.g. packed states), or the list itself when not compiled."""
    if not COMPILED:
        return list(items)
    from numba.typed import List

    out = List()
    for item in items:
        out.append(item)
    return out


# --- Views without reference counts ------------------------------------------------
# A compiled kernel takes and drops a reference (an atomic add) on an array's owner
# each time it reads an array out of a tuple, and numba's pruning leaves most of them
# in loops: in ``perf``, NRT_incref and NRT_decref took most of the kernels' time. The
# state's named arrays are therefore views *without* an owner (``numba.carray`` on
# the block's memory): the caller holds the packed blocks for the whole call, and no
# kernel keeps or returns a view. As Python (no numba) they are ordinary views.
def row(block: np.ndarray, k: int) -> np.ndarray:
    """``block[k]``: row k of a C-contiguous block (a view)."""
    return block[k]


def part(a: np.ndarray, lo: int, hi: int) -> np.ndarray:
    """``a[lo:hi]`` of a 1-D array (a view)."""
    return a[lo:hi]


def whole(a: np.ndarray) -> np.ndarray:
    """``a`` itself (compiled: a view of it without an owner)."""
    return a


if numba is not None:
    from numba import types
    from numba.extending import intrinsic, overload

    @intrinsic
    def _at(typingctx, arr, index):  # noqa: ANN001, ANN202, ARG001
        """A typed pointer to element ``index`` of a C-contiguous array's data."""

        def codegen(context, builder, sig, args):  # noqa: ANN001, ANN202, ARG001
            ary = context.make_array(sig.args[0])(context, builder, args[0])
            return builder.gep(ary.data, [args[1]])

        return types.CPointer(arr.dtype)(arr, index), codegen

    def _contiguous(a) -> bool:  # noqa: ANN001
        return isinstance(a, types.Array) and a.layout == "C"

    @overload(row)
    def _row(block, k):  # noqa: ANN001, ANN202
        if not _contiguous(block) or not 2 <= block.ndim <= 3:
            return lambda block, k: block[k]
        if block.ndim == 2:

            def impl2(block, k):  # noqa: ANN001, ANN202
                n = block.shape[1]
                return numba.carray(_at(block, k * n), (n,))

            return impl2

        def impl3(block, k):  # noqa: ANN001, ANN202
            a, b = block.shape[1], block.shape[2]
            return numba.carray(_at(block, k * a * b), (a, b))

        return impl3

    @overload(part)
    def _part(a, lo, hi):  # noqa: ANN001, ANN202
        if not _contiguous(a) or a.ndim != 1:
            return lambda a, lo, hi: a[lo:hi]
        return lambda a, lo, hi: numba.carray(_at(a, lo), (hi - lo,))

    @overload(whole)
    def _whole(a):  # noqa: ANN001, ANN202
        if not _contiguous(a):
            return lambda a: a
        return lambda a: numba.carray(_at(a, 0), a.shape)
