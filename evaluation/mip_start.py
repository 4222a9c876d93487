"""Feasible plans of the optimum's plan class, to start HiGHS from (a MIP start).

Two kinds of candidates, the best by the model's price wins:
- the plan-class greedy: EVs in request order, each takes its cheapest option
  given the plugs, station limits and feeder headroom the EVs before it use
  (grid stress priced at the margin); stranding is always feasible, so it always
  finds a plan;
- each baseline policy's episode mapped into the plan class: every EV takes the
  option with the station and charger kind the baseline routed it to and the
  nearest total defer; where that option does not exist or no longer fits (the
  baseline queued), the EV falls back to the greedy choice.

Baselines run here also stand beside the MILP's plan in the result (the reported
plan is the best of them all, see ``optimum.solve_episode``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from evgrid_core import Defer, EVGridEnv, Route, SimConfig, format_action

from .milp import price_selection, selection_feasible
from .plan_options import STRAND, Options


# --- Baseline episodes ----------------------------------------------------------------
@dataclass
class BaselineEpisode:
    """One baseline policy's episode, with the actions it took per EV."""

    name: str
    ret: float  # [reward] the env's return
    env: EVGridEnv  # finished
    plan: dict[int, list[str]]  # EV id -> action lines, in order (valid or not)
    defer_min: dict[int, int] = field(default_factory=dict)  # EV id -> valid DEFERs
    route: dict[int, tuple[int, int]] = field(default_factory=dict)  # -> (s, k) 0-based


def play_baseline(
    name: str,
    scenario: Any,
    seed: int,
    config: SimConfig | None = None,
    reset_kwargs: dict[str, Any] | None = None,
) -> BaselineEpisode:
    """Play a registered policy (``rollout.play_episode``), recording its actions."""
    from evgrid_core.policies import make_policy
    from evgrid_core.rollout import play_episode

    plan: dict[int, list[str]] = {}
    defer_min: dict[int, int] = {}
    route: dict[int, tuple[int, int]] = {}

    def record(action: Any, res: Any) -> None:
        ev = int(res.info["ev"])
        plan.setdefault(ev, []).append(
            action if isinstance(action, str) else format_action(action)
        )
        if res.info["valid"] and isinstance(action, Defer):
            defer_min[ev] = defer_min.get(ev, 0) + action.minutes
        elif res.info["valid"] and isinstance(action, Route):
            route[ev] = (action.station - 1, int(action.kind))

    env = play_episode(
        make_policy(name),
        scenario,
        seed,
        config,
        on_step=record,
        reset_kwargs=reset_kwargs,
    )
    return BaselineEpisode(
        name, float(env.kpis.total_return), env, plan, defer_min, route
    )


def baseline_preference(opts: Options, ep: BaselineEpisode) -> dict[int, int]:
    """EV index -> the option nearest the baseline's choice (same station and kind)."""
    ev = np.array(opts.ev)
    station, kind = np.array(opts.station), np.array(opts.kind)
    total = np.array([sum(d) for d in opts.defers])
    out: dict[int, int] = {}
    for ev_id, (s, k) in ep.route.items():
        same = np.flatnonzero((ev == ev_id - 1) & (station == s) & (kind == k))
        if len(same):
            d = ep.defer_min.get(ev_id, 0)
            out[ev_id - 1] = int(same[np.argmin(np.abs(total[same] - d))])
    for ev_id in ep.plan:  # routed nowhere: the baseline stranded it
        if ev_id not in ep.route:
            strand = np.flatnonzero((ev == ev_id - 1) & (station == STRAND))
            out[ev_id - 1] = int(strand[0])
    return out


# --- Greedy over the model ------------------------------------------------------------
def greedy_selection(
    model: Any, opts: Options, order: np.ndarray, prefer: dict[int, int] | None = None
) -> list[int]:
    """One option per EV, in ``order``: the preferred one if it still fits, else the cheapest.

    Works on the model's rows: a row with a slack (the feeder's soft limit) is
    priced at the margin, every other row is a hard limit.
    """
    A = model.A.tocsc()
    n = model.n_options
    n_rows = A.shape[0]
    soft_cost = np.zeros(n_rows)
    soft_cost[model.slack_row] = model.c[n:]
    hard = soft_cost == 0.0
    hi = model.hi
    usage = np.zeros(n_rows)
    by_ev: dict[int, list[int]] = {}
    for o, i in enumerate(opts.ev):
        by_ev.setdefault(i, []).append(o)
    chosen: list[int] = []
    for i in order.tolist():
        cols = np.array(by_ev[i])
        lens = A.indptr[cols + 1] - A.indptr[cols]
        owner = np.repeat(np.arange(len(cols)), lens)
        idx = np.concatenate(
            [np.arange(A.indptr[c], A.indptr[c + 1]) for c in cols.tolist()]
        )
        rows, vals = A.indices[idx], A.data[idx]
        before, after = usage[rows], usage[rows] + vals
        over = hard[rows] & (after > hi[rows] + 1e-9)
        bad = np.bincount(owner, weights=over, minlength=len(cols)) > 0
        extra = soft_cost[rows] * (
            np.maximum(0.0, after - hi[rows]) - np.maximum(0.0, before - hi[rows])
        )
        price = model.c[cols] + np.bincount(owner, weights=extra, minlength=len(cols))
        price[bad] = np.inf
        pick = int(np.argmin(price))
        want = (prefer or {}).get(i)
        if want is not None:
            j = int(np.flatnonzero(cols == want)[0])
            pick = pick if bad[j] else j
        usage[rows[owner == pick]] += vals[owner == pick]
        chosen.append(int(cols[pick]))
    return sorted(chosen)


@dataclass
class Start:
    """The MIP start chosen, and how every candidate priced (model returns)."""

    chosen: list[int]
    source: str  # "greedy" or "baseline:<name>"
    model_return: float
    candidates: dict[str, float]


def best_start(
    model: Any,
    opts: Options,
    order: np.ndarray,
    baselines: list[BaselineEpisode],
) -> Start:
    """The best feasible plan-class selection among the greedy and the mapped baselines."""
    cands = {"greedy": greedy_selection(model, opts, order)}
    for ep in baselines:
        pref = baseline_preference(opts, ep)
        cands[f"baseline:{ep.name}"] = greedy_selection(model, opts, order, pref)
    priced = {
        k: price_selection(model, v)
        for k, v in cands.items()
        if selection_feasible(model, v)
    }
    best = max(priced, key=lambda k: (priced[k], k == "greedy"))
    return Start(cands[best], best, priced[best], priced)
