"""The optimum's MILP solved with HiGHS (``highspy``): MIP start, limits, status, progress.

``scipy.optimize.milp`` cannot take a MIP start, so the model goes to ``highspy``
directly. Limits: a node limit (``mip_max_nodes``), which is deterministic: the
same model gives the same plan and bound on any machine and under any load, and
a wall-clock time limit as a safety net only (where it stops a solve, the answer
depends on the machine). Every solve ends with one of the statuses below and a
human line for it (``status_line``).
"""

from __future__ import annotations

import contextlib
import math
import os
import signal
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from evgrid_core.optional import require

OPTIMAL = "optimal"  # the MILP closed: gap <= mip_rel_gap
TIME_LIMITED = (
    "time-limited"  # the wall-clock safety net stopped it (machine-dependent)
)
WORK_LIMITED = "work-limited"  # the node limit stopped it (reproducible)
FAILED = "failed"  # HiGHS gave no usable answer (the MIP start stands in)
MIP_REL_GAP = 1e-6  # HiGHS's relative gap at which a solve counts as closed
PROGRESS_EVERY_S = 5.0  # [s] between progress lines during a solve


def _require_highspy():  # noqa: ANN202
    return require("highspy", "the hindsight optimum", "eval")


def _new_highs():  # noqa: ANN202
    """A silent ``Highs``; its one-time banner goes to /dev/null, not to stdout.

    HiGHS prints a banner on C-level stdout when the first instance is made,
    which would break ``evgrid optimum --json``.
    """
    highspy = _require_highspy()
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 1)
            h = highspy.Highs()
    finally:
        os.dup2(saved, 1)
        os.close(saved)
    h.setOptionValue("output_flag", False)
    return h


@contextlib.contextmanager
def _on_ctrl_c(handler: Callable[..., None]) -> Iterator[None]:
    """SIGINT calls ``handler`` meanwhile (main thread only; elsewhere, no change)."""
    try:
        previous = signal.signal(signal.SIGINT, handler)
    except ValueError:  # not the main thread
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _ret(cost: float) -> str:
    """A cost as a return, for progress lines."""
    return f"{-cost:9.3f}" if math.isfinite(cost) else f"{'–':>9}"


@dataclass
class Solution:
    x: np.ndarray | None
    objective: float | None  # [cost] of the incumbent (model units, incl. offset)
    bound: float | None  # [cost] best lower bound on the cost (MIP dual bound)
    outcome: str  # OPTIMAL, TIME_LIMITED, WORK_LIMITED or FAILED
    highs_status: str  # HiGHS's own model status
    seconds: float  # wall clock
    cpu_seconds: float  # this process's CPU time (the machine may be shared)
    gap: float | None  # (objective - bound) / |objective|
    nodes: int  # branch-and-bound nodes
    start_objective: float | None = None  # [cost] of the MIP start given
    start_accepted: bool | None = None  # did HiGHS take the start as its incumbent?


def relative_gap(cost: float | None, bound: float | None) -> float | None:
    """(cost - bound) / |cost| as HiGHS defines it (0 when both are 0)."""
    if cost is None or bound is None or not math.isfinite(bound):
        return None
    if cost == bound:
        return 0.0
    return max(0.0, cost - bound) / max(abs(cost), 1e-12)


def status_line(outcome: str, gap: float | None) -> str:
    """The words every output shows: 'optimal (gap ≤ 1e-6)', 'time-limited, gap 2.10 %'."""
    if outcome == OPTIMAL:
        return f"optimal (gap ≤ {MIP_REL_GAP:.0e})".replace("e-0", "e-")
    if gap is None:
        return f"{outcome}, no bound"
    return f"{outcome}, gap {100.0 * gap:.2f} %"


def _highs_lp(model: Any, highspy: Any, relax: bool) -> Any:
    A = model.A.tocsr()
    nvar = len(model.c)
    inf = highspy.kHighsInf
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = nvar, A.shape[0]
    lp.col_cost_ = np.asarray(model.c, dtype=float)
    lp.offset_ = float(model.offset)
    lp.col_lower_ = np.zeros(nvar)
    lp.col_upper_ = np.concatenate(
        [np.ones(model.n_options), np.full(nvar - model.n_options, inf)]
    )
    lp.row_lower_ = np.where(np.isinf(model.lo), -inf, model.lo)
    lp.row_upper_ = np.where(np.isinf(model.hi), inf, model.hi)
    m = lp.a_matrix_
    m.format_ = highspy.MatrixFormat.kRowwise
    m.num_col_, m.num_row_ = nvar, A.shape[0]
    m.start_, m.index_, m.value_ = A.indptr, A.indices, A.data
    if not relax:
        kinds = highspy.HighsVarType
        lp.integrality_ = [kinds.kInteger] * model.n_options + [kinds.kContinuous] * (
            nvar - model.n_options
        )
    return lp


def solve(
    model: Any,
    *,
    time_limit_s: float = 600.0,
    node_limit: int | None = None,
    relax: bool = False,
    mip_rel_gap: float = MIP_REL_GAP,
    start: np.ndarray | None = None,
    progress: Callable[[str], None] | None = None,
) -> Solution:
    """Solve ``model`` (``milp.Model``) with HiGHS; ``relax`` solves the LP relaxation.

    ``start``: a feasible point (options and slacks) given as the MIP start.
    ``progress``: called with a line (elapsed, nodes, incumbent, bound, gap as
    returns) every ``PROGRESS_EVERY_S`` seconds of the solve.
    """
    highspy = _require_highspy()
    h = _new_highs()
    t0, c0 = time.perf_counter(), time.process_time()
    h.passModel(_highs_lp(model, highspy, relax))
    _set_options(h, time_limit_s, mip_rel_gap, node_limit)
    start_obj = None
    if start is not None and not relax:
        start_obj = float(model.c @ start) + model.offset
        sol = highspy.HighsSolution()
        sol.col_value = np.asarray(start, dtype=float)
        sol.value_valid = True
        h.setSolution(sol)
    watch = _Watch(progress)
    if not relax:
        h.setCallback(watch.on_interrupt, None)
        h.startCallback(highspy.cb.HighsCallbackType.kCallbackMipInterrupt)
    # Ctrl+C during the solve: a Python exception raised inside the callback would
    # become a HiGHS "solve error", so the handler only asks HiGHS to stop.
    with _on_ctrl_c(lambda *_: watch.ctrl_c.append(True)):
        try:
            h.run()
            ok, err = True, ""
        except Exception as e:  # noqa: BLE001 - a solver crash must not end a comparison
            ok, err = False, f"{type(e).__name__}: {e}"
    if watch.ctrl_c:
        raise KeyboardInterrupt
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    x, obj, bound, nodes = _read_solution(h, highspy, ok, relax)
    outcome = _outcome(h, highspy, ok)
    status = h.modelStatusToString(h.getModelStatus()) if ok else err
    accepted = None
    if start_obj is not None:
        seen = watch.first_primal[0] if watch.first_primal else (
            obj if obj is not None else math.inf)  # fmt: skip
        accepted = seen <= start_obj + 1e-9 * max(1.0, abs(start_obj))
    return Solution(x, obj, bound, outcome, status, seconds, cpu,
                    relative_gap(obj, bound), nodes, start_obj, accepted)  # fmt: skip


def _set_options(h: Any, time_limit_s: float, mip_rel_gap: float,
                 node_limit: int | None) -> None:  # fmt: skip
    h.setOptionValue("time_limit", float(time_limit_s))
    h.setOptionValue("mip_rel_gap", float(mip_rel_gap))
    h.setOptionValue("random_seed", 0)
    # No presolve, no restart (which presolves again): HiGHS 1.16's MIP presolve ran
    # in strengthenInequalities for over 10 minutes on evening_peak seed 900001,
    # never checking the time limit (the safety net did not fire). Without it that
    # seed closes at the root in 1.8 s; others may take more nodes.
    h.setOptionValue("presolve", "off")
    h.setOptionValue("mip_allow_restart", False)
    if node_limit is not None:
        h.setOptionValue("mip_max_nodes", int(node_limit))


class _Watch:
    """HiGHS's MIP callback: the first incumbent it saw (was the start taken?), a
    progress line every ``PROGRESS_EVERY_S`` s, and a stop asked for on Ctrl+C."""

    def __init__(self, progress: Callable[[str], None] | None) -> None:
        self.progress = progress
        self.first_primal: list[float] = []
        self.ctrl_c: list[bool] = []
        self.last = 0.0

    def on_interrupt(
        self, _type: Any, _msg: str, out: Any, inp: Any, _data: Any
    ) -> None:
        if self.ctrl_c:
            inp.user_interrupt = True
        if not self.first_primal:
            self.first_primal.append(float(out.mip_primal_bound))
        if self.progress is None or out.running_time - self.last < PROGRESS_EVERY_S:
            return
        self.last = out.running_time
        inc, bnd = out.mip_primal_bound, out.mip_dual_bound
        gap = relative_gap(inc, bnd) if math.isfinite(inc) else None
        self.progress(
            f"  HiGHS {out.running_time:5.0f} s  {out.mip_node_count:>7} nodes  "
            f"incumbent {_ret(inc)}  bound {_ret(bnd)}  "
            f"gap {'–' if gap is None else f'{100 * gap:.2f} %'}"
        )


def _read_solution(h: Any, highspy: Any, ok: bool, relax: bool) -> tuple[Any, ...]:
    """(x or None, objective or None, bound or None, nodes) after a run."""
    info = h.getInfo() if ok else None
    has_x = ok and info.primal_solution_status == highspy.kSolutionStatusFeasible
    x = np.asarray(h.getSolution().col_value, dtype=float) if has_x else None
    obj = float(info.objective_function_value) if has_x else None
    if relax:
        bound = obj
    elif ok and math.isfinite(info.mip_dual_bound):
        bound = float(info.mip_dual_bound)
    else:
        bound = None
    nodes = max(0, int(info.mip_node_count)) if ok and not relax else 0
    return x, obj, bound, nodes


def _outcome(h: Any, highspy: Any, ok: bool) -> str:
    ms, status = highspy.HighsModelStatus, h.getModelStatus() if ok else None
    if status == ms.kOptimal:
        return OPTIMAL
    if status == ms.kTimeLimit:
        return TIME_LIMITED
    if status in (ms.kSolutionLimit, ms.kIterationLimit):
        return WORK_LIMITED
    return FAILED
