"""``evgrid optimum``: the hindsight-optimal plan of one episode (MILP, HiGHS), replayed."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ._optimum_args import add_optimum_arguments, optimum_settings

HELP = "hindsight optimum of one episode: MILP with HiGHS, replayed through env.step"

# [s] one solve at the default node limit on the dev machine (2 shared cores),
# baselines included: evening_peak seed 0 by `evgrid optimum` (issue 34); the others
# the mean solve of docs/benchmarks.md's report run, festival_surge its longest.
SOLVE_S = {"evening_peak": 55.0, "heatwave": 9.0, "feeder_fault": 34.0,
           "festival_surge": 337.0}  # fmt: skip
UNMEASURED_SOLVE_S = 60.0  # [s] what a scenario not measured is counted at


def add_arguments(p: argparse.ArgumentParser) -> None:
    from evgrid_core.policies import BASELINES

    p.add_argument("--scenario", default="evening_peak", help="scenario name")
    p.add_argument("--seed", type=int, default=0, help="episode seed")
    add_optimum_arguments(p)
    p.add_argument(
        "--baselines",
        default=",".join(cls.name for cls in BASELINES),  # the core's ladder
        help="comma-separated policies run on the same episode: MIP starts, and "
        "the reported plan is never worse than the best of them ('' for none)",
    )
    p.add_argument(
        "--out",
        default=None,
        help="folder for trace.json (the exogenous trace) and plan.json",
    )
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.add_argument(
        "--no-progress", action="store_true", help="no progress lines during the solve"
    )


def run(args: argparse.Namespace) -> int:
    from evgrid_core import get_scenario
    from evgrid_core.policies import policy_names

    scenario = get_scenario(args.scenario)  # looked up once, used below
    if args.seed < 0:
        raise ValueError("--seed must be >= 0")
    settings = optimum_settings(args)
    baselines = [b.strip() for b in args.baselines.split(",") if b.strip()]
    unknown = sorted(set(baselines) - set(policy_names()))
    if unknown:
        raise ValueError(f"unknown baseline {', '.join(unknown)}")

    from evaluation.optimum import solve_episode

    _stderr(solve_heads_up({args.scenario: 1}, args.node_limit))
    res = solve_episode(
        scenario,
        args.seed,
        baselines=baselines,
        progress=None if args.no_progress else _stderr,
        **settings,
    )
    out = res.summary()
    if args.out:
        from evgrid_core import EVGridEnv
        from evgrid_core.trace import episode_trace

        folder = Path(args.out)
        folder.mkdir(parents=True, exist_ok=True)
        env = EVGridEnv()
        env.reset(seed=args.seed, scenario=scenario)
        (folder / "trace.json").write_text(json.dumps(episode_trace(env).to_dict()))
        (folder / "plan.json").write_text(json.dumps(res.plan, indent=0))
    if args.json:
        print(json.dumps(out, indent=1, default=float))
        return 0
    _print(res)
    return 0


def _duration(s: float) -> str:
    if s < 90:
        return f"{5 * round(s / 5):.0f} s" if s >= 10 else f"{s:.0f} s"
    return f"{s / 60:.0f} min" if s < 5400 else f"{s / 3600:.1f} h"


def _took(sc: str) -> str:
    bound = "up to " if sc == "festival_surge" else "~"
    return f"{bound}{_duration(SOLVE_S[sc])} on {sc}"


def solve_heads_up(solves: dict[str, int], node_limit: int) -> str:
    """One line before the optimum's solves start: how many, and how long one took
    on the dev machine (``solves``: scenario -> solves to run)."""
    from evaluation.plan_options import DEFAULT_NODE_LIMIT

    todo = {sc: n for sc, n in solves.items() if n > 0}
    n = sum(todo.values())
    known = [_took(sc) for sc in todo if sc in SOLVE_S]
    unknown = [sc for sc in todo if sc not in SOLVE_S]
    took = ", ".join(known or [_took("evening_peak")]) + " on the dev machine"
    if n == 1:
        line = "heads-up: the optimum solves a MILP: " + (
            took if known else f"not timed on {unknown[0]} ({took})"
        )
    else:
        total = sum(k * SOLVE_S.get(sc, UNMEASURED_SOLVE_S) for sc, k in todo.items())
        line = f"heads-up: {n} optimum solves to run (a MILP each); one took {took}"
        if unknown:
            line += (
                f"; not timed on {', '.join(unknown)}, counted at "
                f"{_duration(UNMEASURED_SOLVE_S)}"
            )
        line += f": about {_duration(total)} in all"
    if node_limit != DEFAULT_NODE_LIMIT:
        line += f" (timed at node limit {DEFAULT_NODE_LIMIT}, this run {node_limit})"
    return line


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _print(res) -> None:  # noqa: ANN001
    from evaluation.stats import PCT_LABELS, pct_of_optimal

    def f(x: float | None) -> str:
        return "–" if x is None else f"{x:.4f}"

    print(
        f"{res.scenario} seed {res.seed}: {res.n_evs} EVs, {res.n_options} plan options"
    )
    print(f"  status: {res.status}   (reported plan: {res.source})")
    print(
        f"  build {res.build_s:.1f} s, LP {res.lp_s:.1f} s, MILP {res.solve_s:.1f} s "
        f"(CPU {res.solve_cpu_s:.1f} s, {res.nodes} nodes; limits: "
        f"{res.node_limit} nodes, {res.time_limit_s:g} s); HiGHS: {res.highs_status}"
    )
    accepted = {True: "accepted", False: "NOT accepted", None: "–"}[res.start_accepted]
    print(
        f"  MIP start ({res.start_source}, model return) {f(res.start_return)}  {accepted}"
    )
    print(f"  MILP incumbent (model return)  {f(res.objective_return)}")
    print(f"  MILP incumbent (replayed)      {f(res.incumbent_return)}")
    print(f"  best bound (return)            {f(res.bound_return)}")
    print(f"  LP relaxation (return)         {f(res.lp_return)}")
    print(
        f"  reported return (the number)   {res.replay_return:.4f}   "
        f"refused steps: {res.invalid_steps}"
    )
    print("  reward parts  reported / MILP model:")
    for k, v in res.replay_parts.items():
        print(f"    {k:<12}{v:>10.4f} {res.model_parts.get(k, 0.0):>10.4f}")
    if res.baseline_returns:
        label = PCT_LABELS[res.reference_kind]
        print(f"  baselines on the same episode (return, {label}):")
        for name, ret in sorted(res.baseline_returns.items(), key=lambda kv: -kv[1]):
            pct = pct_of_optimal(ret, res.reference_return)
            print(f"    {name:<22}{ret:>10.4f} {pct:>7.1f} %")
