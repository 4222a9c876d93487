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


def kernel(fn: F | None = None, *, inline: bool = False, parallel: bool = False) -> F:
    """``fn`` compiled (no Python objects, IEEE floats: no fastmath), or ``fn``.

    ``@kernel(inline=True)`` for the rules that take an episode's state: numba then
    copies them into each caller. A compiled call that hands over the state's fifty
    arrays costs about 0.8 us in reference counts, more than most rules' work (a
    tick made a dozen such calls); inlined, the caller's views are used as they are.
    The entry points (``entry.py``, ``batch.py``) stay calls, and each calls the
    clock's run (``advance_feeder_sum``, a tick's every rule) from one place only: an
    inlined kernel is compiled once per call site.

    ``@kernel(parallel=True)``: numba's threads run its ``prange`` loops. Its loop
    body should be a call to a kernel that is not inlined: numba would otherwise turn
    the rules' own array expressions into parallel loops too, and their sums could
    round differently.
    """
    if fn is None:
        return lambda f: kernel(f, inline=inline, parallel=parallel)  # type: ignore[return-value]
    if numba is None:
        return fn
    how = "always" if inline else "never"
    return numba.njit(cache=True, nogil=True, inline=how, parallel=parallel)(fn)  # type: ignore[return-value]


# ``@kernel(parallel=True)``'s loops over ``prange`` run on numba's threads (as
# Python, or with the JIT disabled, ``prange`` is ``range``); ``threads`` sets how many.
prange = numba.prange if numba is not None else range


def threads(n: int) -> int:
    """Let the next parallel kernels of this thread use ``n`` threads (at most what
    numba started with); how many they will use."""
    if not COMPILED:
        return 1
    n = max(1, min(n, numba.config.NUMBA_NUM_THREADS))
    numba.set_num_threads(n)
    return n


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


# --- Handles: a packed record's blocks as one array of addresses ---------------------
# A compiled call from Python unboxes every array it is handed (about 80 ns each): the
# two dozen blocks of a state and its rules cost more than a decision's rules. So a
# kernel is handed a *handle*: one int64 array holding each block's address and shape
# (``SLOT`` numbers a block), and it makes its views from that (``f8_2(h, k)``: block
# k as a 2-D float64 view, without an owner). The caller keeps the blocks alive for
# as long as the handle is used (``World`` and ``Batch`` hold both). As Python (no
# numba) a handle is the tuple of blocks itself, and ``f8_2(h, k)`` is ``h[k]``.
SLOT = 6  # address, then up to five dimensions


def handle(blocks: tuple) -> np.ndarray | tuple:
    """The handle of a tuple of C-contiguous blocks (see above)."""
    if not COMPILED:
        return blocks
    for k, b in enumerate(blocks):
        if not b.flags.c_contiguous or b.ndim >= SLOT:
            raise ValueError(f"block {k} is not C-contiguous with at most 5 dims")
    out = np.zeros(SLOT * len(blocks), dtype=np.int64)
    _fill_handle(blocks, out)  # compiled: numpy's ``ctypes.data`` takes 2 us a block
    return out


def handles(records: list[tuple], grown: tuple[int, ...] = ()) -> np.ndarray | list:
    """Many records' handles, one row each (a batch's), or the list as Python;
    ``grown``: their blocks with room to grow (``room_handle``)."""
    if not COMPILED:
        return records
    if not records:
        return np.zeros((0, 0), dtype=np.int64)
    return np.stack([room_handle(r, grown) if grown else handle(r) for r in records])


# --- Room to grow: a batch's records reused episode after episode -----------------
# A batch keeps each env's blocks from one episode to the next (its kernels start the
# next episode in place). The blocks sized by the episode's EVs (rows x EVs) are
# allocated with room for more, and their handle records the room in the block's
# last slot; ``resize`` then sets how many columns the block holds (its first
# rows x n elements, C-contiguous). As Python, ``resize`` gives the record a new
# block of the size asked (the batch's records are then the tuples themselves).
ROOM = SLOT - 1  # the slot of a 2-D block's room [elements]


def room_handle(blocks: tuple, grown: tuple[int, ...]) -> np.ndarray | tuple:
    """``handle(blocks)`` whose 2-D blocks ``grown`` hold no column yet and record
    their size as their room (``resize``). As Python, the blocks themselves."""
    h = handle(blocks)
    if COMPILED:
        for k in grown:
            if blocks[k].ndim != 2:
                raise ValueError(f"block {k} is not 2-D")
            h[SLOT * k + 2], h[SLOT * k + ROOM] = 0, blocks[k].size
    return h


def has_room(records, i: int, k: int, n: int) -> bool:  # noqa: ANN001
    """Whether 2-D block ``k`` of record ``i`` (a batch's ``room_handle`` rows) has
    room for ``n`` columns. As Python there is always room (``resize`` allocates)."""
    return True


def resize(records, i: int, k: int, n: int) -> None:  # noqa: ANN001
    """2-D block ``k`` of record ``i`` holds ``n`` columns from now on (check
    ``has_room`` first): compiled, the first rows x n elements of its room; as Python,
    a new block, unfilled, in a new tuple at ``records[i]``."""
    rec = records[i]
    block = np.empty((rec[k].shape[0], n), dtype=rec[k].dtype)
    records[i] = (*rec[:k], block, *rec[k + 1 :])


def _block_view(dtype: str, ndim: int) -> Callable:
    """``block(h, k)``: block k of handle ``h`` as an ``ndim``-D ``dtype`` view."""

    def block(h, k: int) -> np.ndarray:  # noqa: ANN001
        return h[k]

    block.__name__ = block.__qualname__ = f"{dtype}_{ndim}"
    return block


f8_1, f8_2, f8_3 = (_block_view("f8", d) for d in (1, 2, 3))
i8_1, i8_2, i8_3 = (_block_view("i8", d) for d in (1, 2, 3))
b1_1, b1_2, b1_5 = (_block_view("b1", d) for d in (1, 2, 5))
f4_2 = _block_view("f4", 2)  # a batch's observations


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


if numba is not None:
    from numba import literal_unroll, types
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

    def _pointer(nbtype):  # noqa: ANN001, ANN202
        @intrinsic
        def at_address(typingctx, addr):  # noqa: ANN001, ANN202, ARG001
            """The int64 ``addr`` as a typed pointer."""

            def codegen(context, builder, sig, args):  # noqa: ANN001, ANN202, ARG001
                return builder.inttoptr(
                    args[0], context.get_value_type(sig.return_type)
                )

            return types.CPointer(nbtype)(types.int64), codegen

        return at_address

    _POINTERS = {"f8": _pointer(types.float64), "i8": _pointer(types.int64),
                 "f4": _pointer(types.float32),
                 "b1": _pointer(types.boolean)}  # fmt: skip

    def _register_block(fn, dtype: str, ndim: int) -> None:  # noqa: ANN001
        ptr = _POINTERS[dtype]

        @overload(fn)
        def _impl(h, k):  # noqa: ANN001, ANN202
            if not (isinstance(h, types.Array) and h.dtype == types.int64):
                return None
            if ndim == 1:
                return lambda h, k: numba.carray(ptr(h[SLOT * k]), (h[SLOT * k + 1],))
            if ndim == 2:
                return lambda h, k: numba.carray(
                    ptr(h[SLOT * k]), (h[SLOT * k + 1], h[SLOT * k + 2])
                )
            if ndim == 3:
                return lambda h, k: numba.carray(
                    ptr(h[SLOT * k]),
                    (h[SLOT * k + 1], h[SLOT * k + 2], h[SLOT * k + 3]),
                )
            return lambda h, k: numba.carray(
                ptr(h[SLOT * k]),
                (h[SLOT * k + 1], h[SLOT * k + 2], h[SLOT * k + 3], h[SLOT * k + 4],
                 h[SLOT * k + 5]),
            )  # fmt: skip

    for _fn in (f8_1, f8_2, f8_3, i8_1, i8_2, i8_3, b1_1, b1_2, b1_5, f4_2):
        _dtype, _ndim = _fn.__name__.split("_")
        _register_block(_fn, _dtype, int(_ndim))

    def _records(records) -> bool:  # noqa: ANN001
        return isinstance(records, types.Array) and records.ndim == 2

    @overload(has_room)
    def _has_room(records, i, k, n):  # noqa: ANN001, ANN202
        if not _records(records):
            return None
        return lambda records, i, k, n: (
            records[i, SLOT * k + 1] * n <= records[i, SLOT * k + ROOM]
        )

    @overload(resize)
    def _resize(records, i, k, n):  # noqa: ANN001, ANN202
        if not _records(records):
            return None

        def impl(records, i, k, n):  # noqa: ANN001, ANN202
            records[i, SLOT * k + 2] = n

        return impl

    @intrinsic
    def _address(typingctx, arr):  # noqa: ANN001, ANN202, ARG001
        """The address of an array's first element, as an int64."""

        def codegen(context, builder, sig, args):  # noqa: ANN001, ANN202, ARG001
            ary = context.make_array(sig.args[0])(context, builder, args[0])
            return builder.ptrtoint(ary.data, context.get_value_type(types.int64))

        return types.int64(arr), codegen

    @numba.njit(cache=True)
    def _fill_handle(blocks, out):  # noqa: ANN001, ANN202
        k = 0
        for b in literal_unroll(blocks):
            out[SLOT * k] = _address(b)
            for d in range(b.ndim):
                out[SLOT * k + 1 + d] = b.shape[d]
            k += 1  # noqa: SIM113  (literal_unroll: no enumerate)
