"""The hindsight optimum: a MILP of one whole episode, solved with HiGHS, then replayed.

With perfect information (the exogenous trace: who arrives when, where, with what
battery; background load; tariff; renewable share) each EV gets one plan option
(``plan_options.py``: total defer, station, charger kind; it plugs in on arrival).
The model picks one option per EV subject to
- plugs: sessions holding a (station, kind) at a tick <= its plugs;
- station limits: where the plugs could together exceed a station's kW limit,
  the uncapped demand is kept within it (so the world never scales power down);
- feeders: grid_stress is paid on the EV kWh above the soft limit,
  max(0, background + EV kW - limit) per feeder and tick (convex piecewise-linear,
  exact); capacity is a hard limit (the world sheds EV charging above it and
  charges ``peak`` on what it shed: a plan never sheds);
- under ``lindistflow``, the network (``grid.LinearLimits``): each point of
  supply's voltage deficit is linear in the stations' kW (LinDistFlow's v^2 is),
  so ``undervoltage`` is paid on max(0, deficit) per bus and tick less the
  background's own (a slack each, like the soft limit), and ``transformer_overload``
  on max(0, kVA - rating) per station DT and tick (kVA = kW / pf on the LV side);
  under ``feeder_sum`` none of these rows exist, and other grid models are refused
  (``check_grid``);
and minimises the sum of every reward cost. Within its plan class the model is
the world's arithmetic, so the solver's objective and the replayed return agree
to float precision.

``solve_episode`` starts HiGHS from the best feasible plan it knows (a greedy and
the baselines mapped into the plan class, ``mip_start.py``), replays the MILP's
incumbent through ``env.step``, and reports the best of that replay and the
baseline episodes on the same seed: the baselines queue, which the plan class
cannot, so a limited solve could otherwise report a plan worse than a baseline.
The result says which plan it is (``source``) and how the solve ended
(``status``); it is "optimal" only when the MILP closed and its plan is the one
reported. "% of optimal" elsewhere is taken against ``reference_return``: the
reported return when optimal, else the MILP's bound ("% of bound").
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from evgrid_core import (
    REWARD_KEYS,
    ChargerKind,
    Defer,
    EVGridEnv,
    LoadShift,
    Route,
    SimConfig,
    format_action,
    parse_action,
    policies,
)
from evgrid_core.chargers import KIND_NAMES, N_KINDS
from evgrid_core.grid import LinDistFlow, LinearLimits
from evgrid_core.network import TRANSFORMER_LIMIT
from evgrid_core.trace import EpisodeTrace, episode_trace

from .highs_solve import (
    OPTIMAL,
    Solution,
    relative_gap,
    solve,
    status_line,
)
from .mip_start import best_start, play_baseline
from .plan_options import STRAND, Options, build_options

INVALID_ANSWER = "STRAND"  # not an action: the env strands the EV (a planned option)


FEEDER_MARGIN_KW = 1e-5  # [kW] kept below capacity: solver tolerances never shed
# The grid models whose limits are linear in the loads: the model is exact on them.
LINEAR_GRIDS = ("feeder_sum", "lindistflow")
# The core's baseline ladder, run beside every solve: MIP starts, and the floor of
# the reported plan.
BASELINES = tuple(cls.name for cls in policies.BASELINES)


def _require_scipy():  # noqa: ANN202
    try:
        import scipy.sparse as sp
    except ImportError as e:  # pragma: no cover - depends on the machine
        raise ImportError(
            "the hindsight optimum needs scipy: pip install 'ev-grid-oracle[eval]'"
        ) from e
    return sp


# --- Model ----------------------------------------------------------------------------
@dataclass
class Model:
    """min c.x + offset  s.t.  lo <= A x <= hi, x[:n_options] binary, the rest >= 0."""

    c: np.ndarray
    A: Any  # scipy.sparse csr
    lo: np.ndarray
    hi: np.ndarray
    n_options: int
    offset: float  # [reward units] constant part of the grid terms
    slack_row: np.ndarray  # the row of each slack column (x[n_options:])
    n_rows: dict[str, int] = field(default_factory=dict)
    offset_parts: dict[str, float] = field(default_factory=dict)  # cost offsets
    # reward key -> its slack columns (grid_stress; under lindistflow undervoltage
    # and transformer_overload too)
    slack_cols: dict[str, slice] = field(default_factory=dict)


def check_grid(config: SimConfig) -> None:
    """The model is exact for the linear grid models only: a one-line error else."""
    if config.grid not in LINEAR_GRIDS:
        raise ValueError(
            f"the optimum's model is linear in the loads: grid model {config.grid!r} "
            f"is not; use one of {', '.join(LINEAR_GRIDS)}"
        )


def grid_limits(env: EVGridEnv) -> LinearLimits | None:
    """The episode's linearised network limits (lindistflow), None for the feeder sum."""
    check_grid(env.config)
    grid = env.world.grid  # the optimum reads the episode's model, as the trace does
    return grid.linear_limits() if isinstance(grid, LinDistFlow) else None


def build_model(
    trace: EpisodeTrace,
    config: SimConfig,
    opts: Options,
    limits: LinearLimits | None = None,
) -> Model:
    """The MILP over the given options (see the module docstring); ``limits``
    (``grid_limits``) adds the network's voltage and DT rows (lindistflow)."""
    sp = _require_scipy()
    w = config.weights
    T, S = trace.n_ticks, len(trace.limit_kw)
    F = trace.background_kw.shape[1]
    dt_h = config.tick_minutes / 60.0
    n = len(opts)
    rows: list[np.ndarray] = []
    cols: list[np.ndarray] = []
    vals: list[np.ndarray] = []
    lo: list[np.ndarray] = []
    hi: list[np.ndarray] = []
    n_rows: dict[str, int] = {}
    base = 0

    def block(name: str, count: int, lower: np.ndarray, upper: np.ndarray) -> int:
        nonlocal base
        start = base
        lo.append(lower)
        hi.append(upper)
        n_rows[name] = count
        base += count
        return start

    ev = np.array(opts.ev)
    station = np.array(opts.station)
    kind = np.array(opts.kind)
    arrive = np.array(opts.arrive_tick)
    lengths = np.array([len(e) for e in opts.energy])
    # One option per EV.
    r0 = block("assign", trace.n_evs, np.ones(trace.n_evs), np.ones(trace.n_evs))
    rows.append(r0 + ev)
    cols.append(np.arange(n))
    vals.append(np.ones(n))
    # Session ticks of every option, flattened.
    has = lengths > 0
    o_idx = np.repeat(np.flatnonzero(has), lengths[has])
    t_idx = np.concatenate(
        [arrive[o] + np.arange(lengths[o]) for o in np.flatnonzero(has)]
        or [np.zeros(0, int)]
    )
    e_val = np.concatenate(
        [opts.energy[o] for o in np.flatnonzero(has)] or [np.zeros(0)]
    )
    # Plugs per (station, kind, tick).
    K = trace.plugs.shape[1]
    r1 = block(
        "plugs",
        S * K * T,
        np.full(S * K * T, -np.inf),
        np.repeat(trace.plugs.reshape(-1), T).astype(float),
    )
    rows.append(r1 + (station[o_idx] * K + kind[o_idx]) * T + t_idx)
    cols.append(o_idx)
    vals.append(np.ones(len(o_idx)))
    # Station limits, only where the plugs together could exceed them.
    kw = np.array(opts.plug_kw)
    worst = np.zeros(S)
    for s in range(S):
        for k in range(N_KINDS):
            on = (station == s) & (kind == k)
            worst[s] += trace.plugs[s, k] * (kw[on].max() if on.any() else 0.0)
    tight = np.flatnonzero(worst > trace.limit_kw + 1e-9)
    if len(tight):
        pos = -np.ones(S, dtype=int)
        pos[tight] = np.arange(len(tight))
        r2 = block(
            "station_limit",
            len(tight) * T,
            np.full(len(tight) * T, -np.inf),
            np.repeat(trace.limit_kw[tight], T),
        )
        sel = pos[station[o_idx]] >= 0
        rows.append(r2 + pos[station[o_idx[sel]]] * T + t_idx[sel])
        cols.append(o_idx[sel])
        vals.append(kw[o_idx[sel]])
    # Feeders: the soft limit's excess is paid (grid_stress, one slack per feeder and
    # tick); capacity is a hard limit, as the world sheds EV charging above it (a
    # plan never sheds, so it never pays `peak`).
    bg = trace.background_kw
    cap = trace.capacity_kw
    f_idx = trace.feeder_of[station[o_idx]]
    soft_col = n + np.arange(F * T)
    r = block(
        "feeder_soft",
        F * T,
        np.full(F * T, -np.inf),
        (config.soft_limit * cap - bg).T.reshape(-1),
    )
    rows += [r + f_idx * T + t_idx, r + np.arange(F * T)]
    cols += [o_idx, soft_col]
    vals += [e_val / dt_h, -np.ones(F * T)]
    slack_row = r + np.arange(F * T)
    # grid.feeder_protection sheds EV load above max(0, capacity - background); the
    # tight-feeder test checks that a plan breaks this row exactly when the env sheds.
    headroom = np.maximum(0.0, cap - bg - FEEDER_MARGIN_KW)
    r = block("feeder_capacity", F * T, np.full(F * T, -np.inf), headroom.T.reshape(-1))
    rows.append(r + f_idx * T + t_idx)
    cols.append(o_idx)
    vals.append(e_val / dt_h)
    c = np.concatenate([np.array(opts.cost), np.full(F * T, w.grid_stress * dt_h)])
    offset_parts = {
        "grid_stress": -dt_h
        * w.grid_stress
        * float(np.maximum(0.0, bg - config.soft_limit * cap).sum()),
    }
    slack_cols = {"grid_stress": slice(n, n + F * T)}
    n_cols = n + F * T
    if limits is not None:  # the network's limits, one slack per row
        station_kw = e_val / dt_h  # [kW] each session tick's draw
        for key, (r_, c_, v_, lower, upper, offset) in _network_rows(
            limits, config, trace, station[o_idx], t_idx, o_idx, station_kw
        ).items():
            count = len(upper)
            r = block(key, count, lower, upper)
            slack = n_cols + np.arange(count)
            rows += [r + r_, r + np.arange(count)]
            cols += [c_, slack]
            vals += [v_, -np.ones(count)]
            slack_row = np.concatenate([slack_row, r + np.arange(count)])
            c = np.concatenate([c, np.full(count, getattr(w, key) * dt_h)])
            offset_parts[key] = -dt_h * getattr(w, key) * offset
            slack_cols[key] = slice(n_cols, n_cols + count)
            n_cols += count
    offset = sum(offset_parts.values())
    A = sp.csr_matrix(
        (np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
        shape=(base, n_cols),
    )
    return Model(
        c,
        A,
        np.concatenate(lo),
        np.concatenate(hi),
        n,
        float(offset),
        slack_row,
        n_rows,
        offset_parts,
        slack_cols,
    )


NetworkRows = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, float]


def _network_rows(
    limits: LinearLimits,
    config: SimConfig,
    trace: EpisodeTrace,
    st: np.ndarray,
    t_idx: np.ndarray,
    o_idx: np.ndarray,
    station_kw: np.ndarray,
) -> dict[str, NetworkRows]:
    """The lindistflow rows, by reward key: (row within the block, column, value,
    lower, upper, the cost the background alone leaves [p.u. or kVA x ticks]).

    ``undervoltage``: per point of supply and tick, its deficit = base + the
    stations' kW x sensitivity, paid above 0 by the row's slack; the background's
    own deficit is the offset (the world charges what EV load adds). Rows only
    where the stations at their limits could take the bus below its floor.
    ``transformer_overload``: per station DT and tick, kVA = kW / pf, paid above
    its rating; rows only where the station's limit could exceed it.
    """
    T = trace.n_ticks
    base = limits.base_deficit_pu[:T]  # (T, B)
    sens = limits.deficit_per_kw  # (B, S)
    worst = base + sens @ trace.limit_kw  # (T, B) every station at its limit
    t_b, b = np.nonzero((worst > 0.0) & limits.supply_bus)
    pos = -np.ones(base.shape, dtype=int)
    pos[t_b, b] = np.arange(len(b))
    # every (session tick, bus its station's kW reaches) pair, at-risk buses only
    reached = sens.T > 0.0  # (S, B)
    width = max(1, int(reached.sum(axis=1).max()))
    buses = np.full((len(reached), width), -1)
    for s_, row in enumerate(reached):
        buses[s_, : row.sum()] = np.flatnonzero(row)
    i_s = np.repeat(np.arange(len(st)), width)
    b_s = buses[st].reshape(-1)
    keep = b_s >= 0
    i_s, b_s = i_s[keep], b_s[keep]
    keep = pos[t_idx[i_s], b_s] >= 0
    i_s, b_s = i_s[keep], b_s[keep]
    v = sens[b_s, st[i_s]] * station_kw[i_s]
    out = {
        "undervoltage": (
            pos[t_idx[i_s], b_s], o_idx[i_s], v,
            np.full(len(b), -np.inf), -base[t_b, b],
            float(np.maximum(0.0, base[t_b, b]).sum()),
        )
    }  # fmt: skip
    # DTs: the rating may be swapped per tick; NaN (HT) never binds.
    rating = TRANSFORMER_LIMIT * limits.dt_kva[:T]  # (T, S)
    reach = trace.limit_kw * limits.kva_per_kw  # (S,) [kVA] at the station's limit
    t_s, s_s = np.nonzero(reach[None, :] > np.nan_to_num(rating, nan=np.inf))
    dpos = -np.ones(rating.shape, dtype=int)
    dpos[t_s, s_s] = np.arange(len(s_s))
    sel = dpos[t_idx, st] >= 0
    out["transformer_overload"] = (
        dpos[t_idx[sel], st[sel]], o_idx[sel], station_kw[sel] * limits.kva_per_kw,
        np.full(len(s_s), -np.inf), rating[t_s, s_s], 0.0,
    )  # fmt: skip
    return out


def price_selection(model: Model, chosen: list[int]) -> float:
    """The model's return for one option per EV (slacks at their cheapest)."""
    return -(float(model.c @ full_point(model, chosen)) + model.offset)


def full_point(model: Model, chosen: list[int]) -> np.ndarray:
    """x for one option per EV, each slack at its cheapest: max(0, its row's excess)."""
    n = model.n_options
    x = np.zeros(len(model.c))
    x[chosen] = 1.0
    ax = model.A @ x
    x[n:] = np.maximum(0.0, ax[model.slack_row] - model.hi[model.slack_row])
    return x


def selection_feasible(model: Model, chosen: list[int]) -> bool:
    """Does one option per EV respect every hard row (plugs, station limits, capacity)?"""
    x = np.zeros(len(model.c))
    x[chosen] = 1.0
    hard = np.ones(len(model.hi), dtype=bool)
    hard[model.slack_row] = False
    ax = (model.A @ x)[hard]
    return bool(
        np.all(ax <= model.hi[hard] + 1e-9) and np.all(ax >= model.lo[hard] - 1e-9)
    )


# --- Plan and replay ------------------------------------------------------------------
def plan_actions(opts: Options, x: np.ndarray) -> dict[int, list[Defer | Route | str]]:
    """EV id -> the actions that realise its chosen option, in order."""
    chosen = np.flatnonzero(x[: len(opts)] > 0.5)
    plan: dict[int, list[Defer | Route | str]] = {}
    for o in chosen.tolist():
        ev_id = opts.ev[o] + 1
        if opts.station[o] == STRAND:
            plan[ev_id] = [INVALID_ANSWER]
            continue
        steps: list[Defer | Route | str] = [Defer(ev_id, m) for m in opts.defers[o]]
        steps.append(Route(ev_id, opts.station[o] + 1, ChargerKind(opts.kind[o])))
        plan[ev_id] = steps
    return plan


def replay(
    env: EVGridEnv, plan: dict[int, list[Defer | Route | str]]
) -> tuple[float, int]:
    """Drive ``env`` (just reset) with the plan; returns (return, refused steps)."""
    nxt = dict.fromkeys(plan, 0)
    refused = 0
    while not env.done:
        ev = env.request_id  # the request being decided
        steps = plan.get(ev, [])
        action = steps[nxt[ev]] if nxt.get(ev, 0) < len(steps) else "NO_PLAN"
        nxt[ev] = nxt.get(ev, 0) + 1
        res = env.step(action)
        refused += int(not res.info["valid"] and action != INVALID_ANSWER)
    return float(env.kpis.total_return), refused


# --- Result ---------------------------------------------------------------------------
MILP = "milp"  # source: the MILP's incumbent (or the MIP start, if HiGHS gave none)


@dataclass
class OptimumResult:
    """What ``optimum`` reports: model, solver and replay, side by side.

    ``replay_return`` is the reported plan's return (the number used); ``source``
    says which plan that is: ``milp`` or ``baseline:<name>`` (a baseline episode
    on the same seed scored better than the MILP's incumbent).
    """

    scenario: str
    seed: int
    n_evs: int
    n_options: int
    replay_return: float  # the number used: the reported plan's return
    source: str  # "milp" or "baseline:<name>"
    status: str  # "optimal (gap ≤ 1e-6)", "time-limited, gap 2.10 %", ...
    outcome: str  # optimal, time-limited, work-limited, failed (the MILP solve's)
    proven_optimal: bool  # the MILP closed and its plan is the reported one
    reference_return: float  # what "% of optimal/bound" divides by
    reference_kind: str  # "optimal", "bound" or "best" (see stats.PCT_LABELS)
    gap: float | None  # (reported cost - bound) / |reported cost|
    objective_return: float | None  # the MILP incumbent's model return (-cost)
    incumbent_return: float | None  # the MILP incumbent replayed through env.step
    bound_return: float | None  # best bound on the return over the plan class
    lp_return: float | None  # LP relaxation (bound) as a return
    start_return: float  # the MIP start's model return
    start_source: str  # "greedy" or "baseline:<name>"
    start_accepted: bool | None  # HiGHS took the start as its first incumbent
    baseline_returns: dict[str, float]
    replay_parts: dict[str, float]  # the reported plan's reward parts
    model_parts: dict[str, float]  # the MILP incumbent's, by the model
    kpis: dict[str, float]
    highs_status: str
    nodes: int
    node_limit: int | None
    time_limit_s: float
    solve_s: float  # [s] MILP wall clock
    solve_cpu_s: float  # [s] MILP CPU time of this process
    lp_s: float
    build_s: float  # [s] options, model and MIP start (baseline episodes included)
    invalid_steps: int  # replay steps the env refused (0 for a consistent plan)
    plan: dict[int, list[str]]
    env: EVGridEnv | None = (
        None  # the reported plan's finished episode (not serialised)
    )

    def summary(self) -> dict[str, Any]:
        d = {k: v for k, v in self.__dict__.items() if k not in ("env", "plan")}
        d["plan_actions"] = sum(len(v) for v in self.plan.values())
        words = [_mix_word(a) for v in self.plan.values() for a in v]
        d["plan_mix"] = {w: words.count(w) for w in sorted(set(words))}
        return d


def _mix_word(line: str) -> str:
    """A plan step's kind in ``plan_mix``: the charger kind of a ROUTE, else its verb
    (or, for an answer that is not an action, such as ``INVALID_ANSWER``, itself)."""
    action = parse_action(line)
    if isinstance(action, Route):
        return KIND_NAMES[action.kind]
    if isinstance(action, Defer):
        return "DEFER"
    return "LOAD_SHIFT" if isinstance(action, LoadShift) else line


def reported_status(
    sol: Solution, source: str, reported: float, bound: float | None
) -> tuple[str, bool, float, str, float | None]:
    """(status line, proven optimal, reference return, its kind, gap) of a result.

    Optimal only when the MILP closed and its plan is reported; otherwise "% of"
    is taken against the bound where the bound is above the reported return (a
    plan outside the class can beat a closed class), else the reported return.
    """
    if sol.outcome == OPTIMAL and source == MILP:
        return status_line(OPTIMAL, 0.0), True, reported, "optimal", 0.0
    if bound is None:
        return status_line(sol.outcome, None), False, reported, "best", None
    if bound >= reported:
        gap = relative_gap(-reported, -bound)
        line = status_line(sol.outcome, gap)
        if sol.outcome == OPTIMAL:  # closed, but the reported plan is not the MILP's
            line = f"plan class closed, gap {100.0 * (gap or 0.0):.2f} % to its bound"
        return line, False, bound, "bound", gap
    what = "plan class closed" if sol.outcome == OPTIMAL else sol.outcome
    return f"{what}; {source} beats the class's bound", False, reported, "best", None


# --- The whole episode ----------------------------------------------------------------
def solve_episode(
    scenario: str | Any = "evening_peak",
    seed: int = 0,
    *,
    config: SimConfig | None = None,
    time_limit_s: float = 600.0,
    node_limit: int | None = None,
    stations_per_kind: int = 6,
    max_defer_min: int = 60,
    lp_bound: bool = True,
    baselines: Sequence[str] = BASELINES,
    progress: Callable[[str], None] | None = None,
    reset_kwargs: dict[str, Any] | None = None,
) -> OptimumResult:
    """Export the trace, build and solve the MILP from a MIP start, replay, report the best.

    ``node_limit``: HiGHS's node limit (reproducible); ``time_limit_s`` is the
    wall-clock safety net. Never raises for a limited or failed solve: the MIP
    start and the baselines stand in, and the status says so.
    """
    config = config or SimConfig()
    check_grid(config)
    env = EVGridEnv(config)
    env.reset(seed=seed, scenario=scenario, **(reset_kwargs or {}))
    trace = episode_trace(env)
    t0 = time.perf_counter()
    opts = build_options(
        trace, config, stations_per_kind=stations_per_kind, max_defer_min=max_defer_min
    )
    model = build_model(trace, config, opts, grid_limits(env))
    eps = [play_baseline(b, scenario, seed, config, reset_kwargs) for b in baselines]
    order = np.argsort(trace.ev_minute, kind="stable")
    start = best_start(model, opts, order, eps)
    x_start = full_point(model, start.chosen)
    build_s = time.perf_counter() - t0
    lp = solve(model, time_limit_s=time_limit_s, relax=True) if lp_bound else None
    sol = solve(
        model,
        time_limit_s=time_limit_s,
        node_limit=node_limit,
        start=x_start,
        progress=progress,
    )
    x = sol.x
    if x is None or sol.objective is None or sol.objective > -start.model_return:
        x = x_start  # HiGHS gave nothing better: the start is a plan of the class
    x = full_point(model, np.flatnonzero(x[: model.n_options] > 0.5).tolist())
    plan = plan_actions(opts, x)
    milp_env = EVGridEnv(config)
    milp_env.reset(seed=seed, scenario=scenario, **(reset_kwargs or {}))
    milp_ret, refused = replay(milp_env, plan)
    # The reported plan: the MILP's replay unless a baseline episode did better.
    best = max(eps, key=lambda e: e.ret, default=None)
    if best is not None and best.ret > milp_ret + 1e-9 * max(1.0, abs(milp_ret)):
        source, ret, out_env = f"baseline:{best.name}", best.ret, best.env
        out_plan = best.plan
    else:
        source, ret, out_env = MILP, milp_ret, milp_env
        out_plan = {
            k: [a if isinstance(a, str) else format_action(a) for a in v]
            for k, v in plan.items()
        }
    # The best bound: HiGHS's, or the LP relaxation's where tighter (before the
    # root node, e.g. under a node limit of 0, HiGHS has none).
    costs = [sol.bound] + ([lp.objective] if lp and lp.outcome == OPTIMAL else [])
    costs = [b for b in costs if b is not None]
    bound = -max(costs) if costs else None
    line, proven, ref, kind, gap = reported_status(sol, source, ret, bound)
    objective = -(float(model.c @ x) + model.offset)
    return OptimumResult(
        scenario=trace.scenario,
        seed=seed,
        n_evs=trace.n_evs,
        n_options=len(opts),
        replay_return=ret,
        source=source,
        status=line,
        outcome=sol.outcome,
        proven_optimal=proven,
        reference_return=ref,
        reference_kind=kind,
        gap=gap,
        objective_return=objective,
        incumbent_return=milp_ret,
        bound_return=bound,
        lp_return=None if lp is None or lp.objective is None else -lp.objective,
        start_return=start.model_return,
        start_source=start.source,
        start_accepted=sol.start_accepted,
        baseline_returns={e.name: e.ret for e in eps},
        replay_parts=dict(out_env.kpis.parts_total),
        model_parts=model_parts(opts, model, x, config),
        kpis=out_env.kpi_summary(),
        highs_status=sol.highs_status,
        nodes=sol.nodes,
        node_limit=node_limit,
        time_limit_s=float(time_limit_s),
        solve_s=sol.seconds,
        solve_cpu_s=sol.cpu_seconds,
        lp_s=0.0 if lp is None else lp.seconds,
        build_s=build_s,
        invalid_steps=refused,
        plan=out_plan,
        env=out_env,
    )


def model_parts(
    opts: Options, model: Model, x: np.ndarray, config: SimConfig
) -> dict[str, float]:
    """The model's cost of the chosen plan by reward key, as (negative) reward parts."""
    out = dict.fromkeys(REWARD_KEYS, 0.0)
    for o in np.flatnonzero(x[: len(opts)] > 0.5).tolist():
        for k, v in opts.parts[o].items():
            out[k] -= v
    w = config.weights
    dt_h = config.tick_minutes / 60.0
    off = model.offset_parts
    for key, cols in model.slack_cols.items():
        out[key] = -getattr(w, key) * dt_h * float(x[cols].sum()) - off[key]
    return out
