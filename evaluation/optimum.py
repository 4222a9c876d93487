"""The hindsight optimum: a MILP of one whole episode, solved with HiGHS, then replayed.

With perfect information (the exogenous trace: who arrives when, where, with what
battery; background load; tariff; renewable share) each EV gets one plan option
(``plan_options.py``: total defer, station, charger kind; it plugs in on arrival).
The model picks one option per EV subject to
- plugs: sessions holding a (station, kind) at a tick <= its plugs;
- station limits: where the plugs could together exceed a station's kW limit,
  the uncapped demand is kept within it (so the world never scales power down);
- feeders: grid_stress and peak are paid on the EV kWh above the soft limit and
  above capacity, max(0, background + EV kW - limit) per feeder and tick
  (convex piecewise-linear, exact);
and minimises the sum of every reward cost. Within its plan class the model is
the world's arithmetic, so the solver's objective and the replayed return agree
to float precision; the replayed return (``env.step`` on the real env) is the
number reported. HiGHS gets a time limit; when the MILP does not close, the
best bound is reported beside the LP relaxation.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from evgrid_core import REWARD_KEYS, ChargerKind, Defer, EVGridEnv, Route, SimConfig
from evgrid_core.trace import EpisodeTrace, episode_trace

from .plan_options import STRAND, Options, build_options

INVALID_ANSWER = "STRAND"  # not an action: the env strands the EV (a planned option)


def _require_scipy():  # noqa: ANN202
    try:
        import scipy.sparse as sp
        from scipy.optimize import Bounds, LinearConstraint, milp
    except ImportError as e:  # pragma: no cover - depends on the machine
        raise ImportError(
            "the hindsight optimum needs scipy with HiGHS: "
            "pip install 'ev-grid-oracle[eval]'"
        ) from e
    return sp, Bounds, LinearConstraint, milp


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
    n_rows: dict[str, int] = field(default_factory=dict)
    offset_parts: dict[str, float] = field(default_factory=dict)  # cost offsets


def build_model(trace: EpisodeTrace, config: SimConfig, opts: Options) -> Model:
    """The MILP over the given options (see the module docstring)."""
    sp, *_ = _require_scipy()
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
    r1 = block(
        "plugs",
        S * 3 * T,
        np.full(S * 3 * T, -np.inf),
        np.repeat(trace.plugs.reshape(-1), T).astype(float),
    )
    rows.append(r1 + (station[o_idx] * 3 + kind[o_idx]) * T + t_idx)
    cols.append(o_idx)
    vals.append(np.ones(len(o_idx)))
    # Station limits, only where the plugs together could exceed them.
    kw = np.array(opts.plug_kw)
    worst = np.zeros(S)
    for s in range(S):
        for k in range(3):
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
    # Feeders: soft-limit and hard-limit excess, one slack each per (feeder, tick).
    bg = trace.background_kw
    cap = trace.capacity_kw
    f_idx = trace.feeder_of[station[o_idx]]
    n_slack = 2 * F * T
    soft_col = n + np.arange(F * T)
    hard_col = n + F * T + np.arange(F * T)
    for name, limit, slack in (
        ("feeder_soft", config.soft_limit * cap, soft_col),
        ("feeder_hard", cap, hard_col),
    ):
        r = block(name, F * T, np.full(F * T, -np.inf), (limit - bg).T.reshape(-1))
        rows += [r + f_idx * T + t_idx, r + np.arange(F * T)]
        cols += [o_idx, slack]
        vals += [e_val / dt_h, -np.ones(F * T)]
    c = np.concatenate(
        [
            np.array(opts.cost),
            np.full(F * T, w.grid_stress * dt_h),
            np.full(F * T, w.peak * dt_h),
        ]
    )
    offset_parts = {
        "grid_stress": -dt_h
        * w.grid_stress
        * float(np.maximum(0.0, bg - config.soft_limit * cap).sum()),
        "peak": -dt_h * w.peak * float(np.maximum(0.0, bg - cap).sum()),
    }
    offset = offset_parts["grid_stress"] + offset_parts["peak"]
    A = sp.csr_matrix(
        (np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
        shape=(base, n + n_slack),
    )
    return Model(
        c,
        A,
        np.concatenate(lo),
        np.concatenate(hi),
        n,
        float(offset),
        n_rows,
        offset_parts,
    )


def price_selection(model: Model, chosen: list[int]) -> float:
    """The model's return for one option per EV (slacks at their cheapest)."""
    n = model.n_options
    x = np.zeros(len(model.c))
    x[chosen] = 1.0
    ax = model.A @ x
    slack_rows = model.A[:, n:].nonzero()[0]
    # each slack column has one row (its feeder and tick): slack = max(0, row excess)
    x[n:] = np.maximum(0.0, ax[slack_rows] - model.hi[slack_rows])
    return -(float(model.c @ x) + model.offset)


def selection_feasible(model: Model, chosen: list[int]) -> bool:
    """Does one option per EV respect plugs and station limits (rows before feeders)?"""
    x = np.zeros(len(model.c))
    x[chosen] = 1.0
    k = sum(v for name, v in model.n_rows.items() if not name.startswith("feeder"))
    ax = (model.A[:k] @ x)[:k]
    return bool(np.all(ax <= model.hi[:k] + 1e-9) and np.all(ax >= model.lo[:k] - 1e-9))


# --- Solve ----------------------------------------------------------------------------
@dataclass
class Solution:
    x: np.ndarray | None
    objective: float | None  # [cost] of the incumbent (model units, incl. offset)
    bound: float | None  # [cost] best lower bound on the cost (MIP dual bound)
    status: str
    seconds: float  # wall clock
    cpu_seconds: float  # this process's CPU time (the machine may be shared)
    gap: float | None


def solve(
    model: Model,
    *,
    time_limit_s: float = 30.0,
    relax: bool = False,
    mip_rel_gap: float = 1e-6,
) -> Solution:
    """Solve with HiGHS (``scipy.optimize.milp``); ``relax`` solves the LP relaxation."""
    _, Bounds, LinearConstraint, milp = _require_scipy()
    nvar = len(model.c)
    integrality = np.zeros(nvar)
    if not relax:
        integrality[: model.n_options] = 1
    upper = np.concatenate(
        [np.ones(model.n_options), np.full(nvar - model.n_options, np.inf)]
    )
    t0, c0 = time.perf_counter(), time.process_time()
    res = milp(
        model.c,
        constraints=LinearConstraint(model.A, model.lo, model.hi),
        integrality=integrality,
        bounds=Bounds(np.zeros(nvar), upper),
        options={
            "time_limit": float(time_limit_s),
            "mip_rel_gap": mip_rel_gap,
            "disp": False,
        },
    )
    seconds = time.perf_counter() - t0
    cpu = time.process_time() - c0
    x = res.x if res.x is not None else None
    obj = float(res.fun) + model.offset if res.fun is not None else None
    bound = getattr(res, "mip_dual_bound", None)
    if relax:
        bound = obj
    elif bound is not None:
        bound = float(bound) + model.offset
    gap = getattr(res, "mip_gap", None)
    gap = None if gap is None else float(gap)
    return Solution(x, obj, bound, str(res.message), seconds, cpu, gap)


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


@dataclass
class OptimumResult:
    """What ``optimum`` reports: model, solver and replay, side by side."""

    scenario: str
    seed: int
    n_evs: int
    n_options: int
    objective_return: float | None  # solver's objective as a return (-cost)
    bound_return: float | None  # best bound on the return over the plan class
    lp_return: float | None  # LP relaxation (bound) as a return
    replay_return: float  # the number used
    replay_parts: dict[str, float]
    model_parts: dict[str, float]
    kpis: dict[str, float]
    status: str
    solve_s: float  # [s] MILP wall clock
    solve_cpu_s: float  # [s] MILP CPU time of this process
    lp_s: float
    build_s: float
    invalid_steps: int  # replay steps the env refused (0 for a consistent plan)
    plan: dict[int, list[str]]
    env: EVGridEnv | None = None  # the finished replay (not serialised)

    def summary(self) -> dict[str, Any]:
        d = {k: v for k, v in self.__dict__.items() if k not in ("env", "plan")}
        d["plan_actions"] = sum(len(v) for v in self.plan.values())
        words = [
            a.split()[0] if not a.startswith("ROUTE") else a.split()[-1]
            for v in self.plan.values()
            for a in v
        ]
        d["plan_mix"] = {w: words.count(w) for w in sorted(set(words))}
        return d


def replay(
    env: EVGridEnv, plan: dict[int, list[Defer | Route | str]]
) -> tuple[float, int]:
    """Drive ``env`` (just reset) with the plan; returns (return, refused steps)."""
    nxt = dict.fromkeys(plan, 0)
    refused = 0
    while not env.done:
        ev = env.world.pending[0] + 1  # the request being decided
        steps = plan.get(ev, [])
        action = steps[nxt[ev]] if nxt.get(ev, 0) < len(steps) else "NO_PLAN"
        nxt[ev] = nxt.get(ev, 0) + 1
        res = env.step(action)
        refused += int(not res.info["valid"] and action != INVALID_ANSWER)
    return float(env.kpis.total_return), refused


def solve_episode(
    scenario: str | Any = "evening_peak",
    seed: int = 0,
    *,
    config: SimConfig | None = None,
    time_limit_s: float = 30.0,
    stations_per_kind: int = 6,
    max_defer_min: int = 60,
    lp_bound: bool = True,
    reset_kwargs: dict[str, Any] | None = None,
) -> OptimumResult:
    """Export the trace, build and solve the MILP, replay the plan through ``env.step``."""
    config = config or SimConfig()
    env = EVGridEnv(config)
    env.reset(seed=seed, scenario=scenario, **(reset_kwargs or {}))
    trace = episode_trace(env)
    t0 = time.perf_counter()
    opts = build_options(
        trace, config, stations_per_kind=stations_per_kind, max_defer_min=max_defer_min
    )
    model = build_model(trace, config, opts)
    build_s = time.perf_counter() - t0
    lp = solve(model, time_limit_s=time_limit_s, relax=True) if lp_bound else None
    sol = solve(model, time_limit_s=time_limit_s)
    if sol.x is None:
        raise RuntimeError(f"HiGHS found no plan within {time_limit_s} s: {sol.status}")
    plan = plan_actions(opts, sol.x)
    replay_env = EVGridEnv(config)
    replay_env.reset(seed=seed, scenario=scenario, **(reset_kwargs or {}))
    ret, refused = replay(replay_env, plan)
    return OptimumResult(
        scenario=trace.scenario,
        seed=seed,
        n_evs=trace.n_evs,
        n_options=len(opts),
        objective_return=None if sol.objective is None else -sol.objective,
        bound_return=None if sol.bound is None else -sol.bound,
        lp_return=None if lp is None or lp.objective is None else -lp.objective,
        replay_return=ret,
        replay_parts=dict(replay_env.kpis.parts_total),
        model_parts=model_parts(opts, model, sol.x, config),
        kpis=replay_env.kpi_summary(),
        status=sol.status,
        solve_s=sol.seconds,
        solve_cpu_s=sol.cpu_seconds,
        lp_s=0.0 if lp is None else lp.seconds,
        build_s=build_s,
        invalid_steps=refused,
        plan={
            k: [a if isinstance(a, str) else _fmt(a) for a in v]
            for k, v in plan.items()
        },
        env=replay_env,
    )


def _fmt(a: Defer | Route) -> str:
    from evgrid_core import format_action

    return format_action(a)


def model_parts(
    opts: Options, model: Model, x: np.ndarray, config: SimConfig
) -> dict[str, float]:
    """The model's cost of the chosen plan by reward key, as (negative) reward parts."""
    out = dict.fromkeys(REWARD_KEYS, 0.0)
    for o in np.flatnonzero(x[: len(opts)] > 0.5).tolist():
        for k, v in opts.parts[o].items():
            out[k] -= v
    n = model.n_options
    FT = (len(x) - n) // 2
    w = config.weights
    dt_h = config.tick_minutes / 60.0
    soft, hard = x[n : n + FT], x[n + FT :]
    off = model.offset_parts
    out["grid_stress"] = -w.grid_stress * dt_h * float(soft.sum()) - off["grid_stress"]
    out["peak"] = -w.peak * dt_h * float(hard.sum()) - off["peak"]
    return out
