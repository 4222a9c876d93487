"""``evgrid compare``: policies side by side on paired seeds; table, JSON and plots."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ._optimum_args import add_optimum_arguments, describe_settings, optimum_settings
from ._ray_args import add_ray_argument, ray_address

HELP = "compare policies on the same seeds: KPI table with CIs, paired tests, plots"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--policies",
        default="random_valid,nearest,greedy_eta,least_loaded_feeder,"
        "price_renewable,urgency_first",
        help="comma-separated policy names; 'optimum' adds the hindsight optimum",
    )
    p.add_argument(
        "--scenarios", default="evening_peak", help="comma-separated scenario names"
    )
    p.add_argument("--episodes", type=int, default=10, help="seeds per scenario")
    p.add_argument("--seed", type=int, default=0, help="first seed")
    p.add_argument("--out", default="compare_out", help="output folder (resumable)")
    p.add_argument(
        "--grid",
        default="feeder_sum",
        help="grid model: feeder_sum (default), lindistflow, ac (the ac extra); "
        "one per output folder",
    )
    p.add_argument(
        "--reference",
        default="greedy_eta",
        help="policy the paired differences are taken against",
    )
    add_optimum_arguments(p)
    p.add_argument(
        "--model",
        default=None,
        help="model file for the policies named oracle* (a GGUF)",
    )
    p.add_argument(
        "--adapter",
        default=None,
        help="a trained LoRA adapter GGUF for the policies named oracle*, asked as the "
        "shipped Oracle is (folded into the package's SmolLM2, the decision prompt): "
        "to try an adapter before shipping it",
    )
    p.add_argument(
        "--prompt-style",
        default=None,
        help="how the decision prompt lists the options for oracle* (default: the "
        "shipped Oracle's, oracle/weights/oracle.json)",
    )
    p.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    add_ray_argument(p, "run the episodes")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")


def _oracle_kwargs(args: argparse.Namespace, policies: list[str]) -> dict | None:
    """What the policies named oracle* are built with, from --model, --adapter and
    --prompt-style (checked before any episode runs)."""
    if args.model and args.adapter:
        raise ValueError("--model or --adapter, not both")
    kw = {"model_path": args.model, "adapter": args.adapter}
    kw = {k: v for k, v in kw.items() if v}
    for path in kw.values():
        if not Path(path).is_file():
            raise ValueError(f"no such file: {path}")
    if args.prompt_style:
        if args.model:
            kw["prompt"] = "decision"  # a style is a way of listing the decision prompt
        kw["prompt_style"] = args.prompt_style
    if kw and not any(p.startswith("oracle") for p in policies):
        raise ValueError(
            "--model, --adapter and --prompt-style are for oracle* policies"
        )
    return {p: kw for p in policies if p.startswith("oracle")} if kw else None


def _names(text: str) -> list[str]:
    return [x.strip() for x in text.split(",") if x.strip()]


def run(args: argparse.Namespace) -> int:
    from evgrid_core import get_scenario
    from evgrid_core.grid import grid_config
    from evgrid_core.policies import policy_names

    policies, scenarios = _names(args.policies), _names(args.scenarios)
    if not policies or not scenarios:
        raise ValueError("give at least one policy and one scenario")
    if args.episodes < 1 or args.seed < 0:
        raise ValueError("--episodes must be >= 1 and --seed >= 0")
    for sc in scenarios:
        get_scenario(sc)
    config = grid_config(
        args.grid
    )  # an unknown model: a one-line error, before any run
    known = set(policy_names()) | {"optimum"}
    unknown = [p for p in policies if p not in known]
    if unknown:
        raise ValueError(
            f"unknown policy {', '.join(unknown)}; choose from: {', '.join(sorted(known))}"
        )
    if args.reference not in policies:
        raise ValueError(f"--reference {args.reference} is not among --policies")
    oracle_kw = _oracle_kwargs(args, policies)
    optimum = optimum_settings(args)
    if "optimum" in policies:
        from evaluation.milp import check_grid

        check_grid(config)

    from evaluation.report import write_report
    from evaluation.runner import code_version, run_comparison

    out = Path(args.out)
    seeds = list(range(args.seed, args.seed + args.episodes))
    if "optimum" in policies:
        from .cmd_optimum import solve_heads_up

        todo = _solves_to_run(out, scenarios, seeds)
        if any(todo.values()):
            print(solve_heads_up(todo, args.node_limit), file=sys.stderr, flush=True)
    runner, ray_kw = run_comparison, {}
    if args.ray:
        from evaluation.ray_compare import run_comparison_ray as runner

        ray_kw = {"address": ray_address(args)}
    records = runner(
        policies,
        scenarios,
        seeds,
        out,
        config=config,
        optimum=optimum,
        progress=not args.no_progress,
        code=code_version(),
        policy_kwargs=oracle_kw,
        **ray_kw,
    )
    wanted = [
        r
        for r in records
        if r["policy"] in policies and r["scenario"] in scenarios and r["seed"] in seeds
    ]
    paths = write_report(
        wanted,
        out,
        policies=policies,
        scenarios=scenarios,
        reference=args.reference,
        plots=not args.no_plots,
        provenance=describe_settings(optimum) if "optimum" in policies else "",
        command="evgrid compare " + " ".join(sys.argv[2:])
        if sys.argv[1:2] == ["compare"]
        else "",
    )
    import json

    summary = json.loads((out / "summary.json").read_text())
    print("\n".join(headline(summary, policies)))
    for p in paths:
        print(p)
    return 0


def _solves_to_run(out: Path, scenarios: list[str], seeds: list[int]) -> dict[str, int]:
    """Scenario -> optimum episodes not yet in the (resumable) output folder."""
    from evaluation.runner import EPISODES_FILE, load_records

    done = {
        (r["scenario"], r["seed"])
        for r in load_records(out / EPISODES_FILE)
        if r["policy"] == "optimum"
    }
    return {sc: sum((sc, s) not in done for s in seeds) for sc in scenarios}


# --- The headline table on stdout -------------------------------------------------------
def headline(summary: dict, policies: list[str]) -> list[str]:
    """Per scenario: each policy's return, % of optimal (when the optimum ran) and
    the feeders' figures, as aligned text (the report's tables, in short)."""
    from evaluation.engineering import fmt

    lines = []
    for sc, rows in summary["scenarios"].items():
        pols = [p for p in policies if p in rows]
        pct = any("pct_optimal" in rows[p]["stats"] for p in pols)
        n = max(len(rows[p]["seeds"]) for p in pols)
        head = ["policy", "return (mean ± 95 % CI)"]
        head += [summary.get("pct_label", {}).get(sc, "% of optimal")] if pct else []
        head += ["peak feeder load [% of limit]", "over a limit [feeder-min]",
                 "shed [MWh]"]  # fmt: skip
        table = [head]
        for p in pols:
            st, figs = rows[p]["stats"], rows[p].get("figures") or {}
            row = [p, f"{fmt(st['return']['mean'])} ± {fmt(st['return']['ci95'])}"]
            if pct:
                v = st.get("pct_optimal", {}).get("mean")
                row.append("–" if v is None else f"{fmt(v)} %")
            row += [
                fmt(figs[k]["mean"]) if k in figs else "–"
                for k in ("peak_util_pct", "over_feeder_min", "shed_mwh")
            ]
            table.append(row)
        widths = [max(len(r[i]) for r in table) for i in range(len(head))]
        lines += ["", f"{sc}: {n} seed{'s' if n != 1 else ''}, means over seeds"]
        lines += [
            "  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                      for i, (c, w) in enumerate(zip(r, widths, strict=True))).rstrip()
            for r in table
        ]  # fmt: skip
    return lines + [""]
