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
from dataclasses import dataclass
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
from evgrid_core.chargers import KIND_NAMES
from evgrid_core.rollout import OnStep, drive
from evgrid_core.trace import EpisodeTrace, episode_trace

from .highs_solve import (
    OPTIMAL,
    Solution,
    relative_gap,
    solve,
    status_line,
)
from .milp import Model, build_model, check_grid, full_point, grid_limits
from .mip_start import best_start, play_baseline
from .plan_options import STRAND, Options, build_options

INVALID_ANSWER = "STRAND"  # not an action: the env strands the EV (a planned option)


# The core's baseline ladder, run beside every solve: MIP starts, and the floor of
# the reported plan.
BASELINES = tuple(cls.name for cls in policies.BASELINES)


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


class PlanPolicy:
    """A plan (EV id -> its actions, in order) as a policy: each request gets its
    EV's next action, "NO_PLAN" (invalid) once they are used up."""

    name = "plan"

    def __init__(self, plan: dict[int, list[Defer | Route | str]]) -> None:
        self.plan = plan
        self.next: dict[int, int] = {}

    def reset(self, seed: int) -> None:
        self.next = {}

    def act(self, obs: Any) -> Defer | Route | str:
        ev = obs.request.id  # the request being decided
        i = self.next[ev] = self.next.get(ev, -1) + 1
        steps = self.plan.get(ev, [])
        return steps[i] if i < len(steps) else "NO_PLAN"


def replay(
    env: EVGridEnv,
    plan: dict[int, list[Defer | Route | str]],
    on_step: OnStep | None = None,
) -> tuple[float, int]:
    """Drive ``env`` (just reset) with the plan (``rollout.drive``; ``on_step`` as
    there); returns (return, refused steps: invalid answers it did not plan)."""
    refused = 0

    def count(action: Any, res: Any) -> None:
        nonlocal refused
        refused += int(not res.info["valid"] and action != INVALID_ANSWER)
        if on_step is not None:
            on_step(action, res)

    drive(env, PlanPolicy(plan), on_step=count)
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
    episode = (scenario, seed, config, reset_kwargs)
    p = _problem(episode, stations_per_kind, max_defer_min, baselines)
    lp = solve(p.model, time_limit_s=time_limit_s, relax=True) if lp_bound else None
    sol = solve(p.model, time_limit_s=time_limit_s, node_limit=node_limit,
                start=p.x_start, progress=progress)  # fmt: skip
    x = sol.x
    if x is None or sol.objective is None or sol.objective > -p.start.model_return:
        x = p.x_start  # HiGHS gave nothing better: the start is a plan of the class
    x = full_point(p.model, np.flatnonzero(x[: p.model.n_options] > 0.5).tolist())
    r = _reported(p, x, episode)
    return _result(p, sol, lp, x, r, config, node_limit, time_limit_s)


@dataclass
class _Problem:
    """An episode's MILP and what it starts from."""

    seed: int
    trace: EpisodeTrace
    opts: Options
    model: Model
    baselines: list[Any]  # mip_start.BaselineEpisode, one per baseline policy
    start: Any  # mip_start.Start
    x_start: np.ndarray
    build_s: float  # [s] options, model and MIP start (baseline episodes included)


def _problem(episode: tuple, stations_per_kind: int, max_defer_min: int,
             baselines: Sequence[str]) -> _Problem:  # fmt: skip
    scenario, seed, config, reset_kwargs = episode
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
    return _Problem(seed, trace, opts, model, eps, start, x_start, build_s)


@dataclass
class _Reported:
    """The plan reported: the MILP's replay unless a baseline episode did better."""

    source: str
    ret: float
    env: EVGridEnv
    plan: dict[int, list[str]]
    milp_ret: float  # the MILP's plan replayed
    refused: int  # its replay's refused steps


def _reported(p: _Problem, x: np.ndarray, episode: tuple) -> _Reported:
    scenario, seed, config, reset_kwargs = episode
    plan = plan_actions(p.opts, x)
    milp_env = EVGridEnv(config)
    milp_env.reset(seed=seed, scenario=scenario, **(reset_kwargs or {}))
    milp_ret, refused = replay(milp_env, plan)
    best = max(p.baselines, key=lambda e: e.ret, default=None)
    if best is not None and best.ret > milp_ret + 1e-9 * max(1.0, abs(milp_ret)):
        return _Reported(f"baseline:{best.name}", best.ret, best.env, best.plan,
                         milp_ret, refused)  # fmt: skip
    text = {k: [a if isinstance(a, str) else format_action(a) for a in v]
            for k, v in plan.items()}  # fmt: skip
    return _Reported(MILP, milp_ret, milp_env, text, milp_ret, refused)


def _best_bound(sol: Solution, lp: Solution | None) -> float | None:
    """HiGHS's bound, or the LP relaxation's where tighter (before the root node,
    e.g. under a node limit of 0, HiGHS has none), as a return."""
    costs = [sol.bound] + ([lp.objective] if lp and lp.outcome == OPTIMAL else [])
    costs = [b for b in costs if b is not None]
    return -max(costs) if costs else None


def _result(p: _Problem, sol: Solution, lp: Solution | None, x: np.ndarray,
            r: _Reported, config: SimConfig, node_limit: int | None,
            time_limit_s: float) -> OptimumResult:  # fmt: skip
    trace, opts, model, eps, start, build_s = (p.trace, p.opts, p.model, p.baselines,
                                               p.start, p.build_s)  # fmt: skip
    source, ret, out_env, out_plan = r.source, r.ret, r.env, r.plan
    milp_ret, refused = r.milp_ret, r.refused
    bound = _best_bound(sol, lp)
    line, proven, ref, kind, gap = reported_status(sol, source, ret, bound)
    objective = -(float(model.c @ x) + model.offset)
    return OptimumResult(
        scenario=trace.scenario,
        seed=p.seed,
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
