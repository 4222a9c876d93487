"""The comparison report: markdown tables (mean and 95 % CI), paired tests, JSON summary.

Per scenario the feeders' and the EV owners' figures come first (``engineering``),
then the reward; notes explain figures that look wrong at first sight (``notes``).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from evgrid_core import KPI_UNITS, REWARD_KEYS, get_scenario

from .engineering import (
    definitions,
    feeder_tables,
    grid_table,
    owner_table,
    summarise_feeders,
    summarise_figures,
)
from .notes import explanations
from .runner import OPTIMUM, record_grid
from .stats import add_pct_optimal, by_scenario_policy, paired, pct_label, summarise

# KPIs in the main table (return first; % of optimal when an optimum row exists).
TABLE_KEYS = (
    "return",
    "mean_wait_min",
    "p95_wait_min",
    "evs_served",
    "energy_kwh",
    "critical_on_time_pct",
    "stranded",
    "peak_feeder_util_pct",
    "overload_feeder_min",
    "shed_kwh",
    "stress_events",
    "renewable_share_pct",
    "energy_cost_inr",
    "invalid_action_pct",
)
PAIRED_KEYS = ("return", "mean_wait_min", "stranded", "part:grid_stress", "energy_kwh")


def _fmt(x: float) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    if math.isinf(x):
        return "inf"
    a = abs(x)
    return f"{x:.0f}" if a >= 1000 else f"{x:.1f}" if a >= 10 else f"{x:.2f}"


def _p(x: float) -> str:
    return "–" if math.isnan(x) else ("<0.001" if x < 1e-3 else f"{x:.3f}")


def fill_network_parts(records: list[dict[str, Any]]) -> None:
    """Give feeder-sum records from before the network reward parts existed those
    parts at 0, what the feeder sum charges for them (the network models' records
    always carry them)."""
    for r in records:
        if record_grid(r) == "feeder_sum":
            for k in REWARD_KEYS:
                r["parts"].setdefault(k, 0.0)


def summary_json(
    records: list[dict[str, Any]],
    policies: list[str],
    scenarios: list[str],
    reference: str,
) -> dict[str, Any]:
    """Everything the tables show, as data."""
    fill_network_parts(records)
    add_pct_optimal(records)
    grouped = by_scenario_policy(records)
    out: dict[str, Any] = {"reference": reference, "scenarios": {}, "pct_label": {}}
    parts = [f"part:{k}" for k in REWARD_KEYS]
    for sc in scenarios:
        rows: dict[str, Any] = {}
        ref = grouped[sc].get(reference, {})
        for pol in policies:
            runs = grouped[sc].get(pol)
            if not runs:
                continue
            keys = list(TABLE_KEYS) + parts
            if all("derived" in r for r in runs.values()):
                keys.append("pct_optimal")
            rows[pol] = {
                "seeds": sorted(runs),
                "figures": summarise_figures(runs),
                "feeders": summarise_feeders(runs),
                "stats": summarise(runs, keys),
                "paired_vs_reference": {
                    k: paired(runs, ref, k) for k in PAIRED_KEYS if pol != reference
                },
            }
            opt = [r["optimum"] for r in runs.values() if "optimum" in r]
            if opt:
                rows[pol]["solver"] = _solver_summary(opt)
        kinds = [r["pct_of"] for r in records if r["scenario"] == sc and "pct_of" in r]
        out["pct_label"][sc] = pct_label(kinds)
        out["scenarios"][sc] = rows
    beaten = [
        (r["policy"], r["scenario"], r["seed"])
        for r in records
        if r["policy"] != OPTIMUM and r.get("derived", {}).get("pct_optimal", 0) > 100
    ]
    out["episodes_beating_optimum"] = beaten
    out["episodes_with_optimum"] = sum(r["policy"] == OPTIMUM for r in records)
    out["notes"] = explanations(grouped, scenarios)
    return out


def _solver_summary(opt: list[dict[str, Any]]) -> dict[str, Any]:
    def gap(o: dict[str, Any]) -> float | None:
        # older records: the replayed MILP plan is the reported one
        inc = o.get("incumbent_return", o["replay_return"])
        if o["objective_return"] is None or inc is None:
            return None
        return abs(inc - o["objective_return"])

    gaps = [g for g in (gap(o) for o in opt) if g is not None]
    outcome = [
        o.get("outcome", "optimal" if "Optimal" in o["status"] else "?") for o in opt
    ]
    limited = [o for o in opt if not o.get("proven_optimal", "Optimal" in o["status"])]
    return {
        "solves": len(opt),
        "optimal": sum(o.get("proven_optimal", "Optimal" in o["status"]) for o in opt),
        "outcomes": {k: outcome.count(k) for k in sorted(set(outcome))},
        "not_optimal": [
            (o["seed"], o["status"], o.get("source", "milp")) for o in limited
        ],
        "max_gap": max((o.get("gap") or 0.0 for o in limited), default=0.0),
        "from_baseline": sum(o.get("source", "milp") != "milp" for o in opt),
        "solve_s_mean": sum(o["solve_s"] for o in opt) / len(opt),
        "solve_s_max": max(o["solve_s"] for o in opt),
        "max_abs_objective_minus_replay": max(gaps) if gaps else None,
        "refused_replay_steps": sum(o["invalid_steps"] for o in opt),
        "plan_mix": {
            k: sum(o.get("plan_mix", {}).get(k, 0) for o in opt)
            for k in sorted({k for o in opt for k in o.get("plan_mix", {})})
        },
        "mean_bound_minus_replay": sum(
            (o["bound_return"] or o["replay_return"]) - o["replay_return"] for o in opt
        )
        / len(opt),
    }


def _policy_table(summary: dict[str, Any], policies: list[str], cell: Any) -> list[str]:
    """A policy x scenario table; ``cell(row, scenario, policy)`` is a cell's text
    (None or a missing row: –)."""
    scs = list(summary["scenarios"])
    lines = ["| policy | " + " | ".join(f"`{sc}`" for sc in scs) + " |",
             "|---|" + "---|" * len(scs)]  # fmt: skip
    for pol in policies:
        cells = []
        for sc in scs:
            row = summary["scenarios"][sc].get(pol)
            text = None if row is None else cell(row, sc, pol)
            cells.append("–" if text is None else text)
        lines.append(f"| {pol} | " + " | ".join(cells) + " |")
    return lines + [""]


def _headline(summary: dict[str, Any], policies: list[str]) -> list[str]:
    """Return (and % of optimal or bound where known) per policy and scenario."""
    pct_label = summary.get("pct_label", {})
    labels = sorted(
        {
            pct_label.get(sc, "% of optimal")
            for sc, rows in summary["scenarios"].items()
            if any("pct_optimal" in r["stats"] for r in rows.values())
        }
    )
    what = "mean ± 95 % CI" + (f"; in brackets {' or '.join(labels)}" if labels else "")

    def cell(row: dict[str, Any], sc: str, pol: str) -> str:
        st = row["stats"]
        text = f"{_fmt(st['return']['mean'])} ± {_fmt(st['return']['ci95'])}"
        if "pct_optimal" in st and pol != OPTIMUM:
            text += f" ({_fmt(st['pct_optimal']['mean'])} %)"
        elif "solver" in row:  # the optimum: its own % when a bound is the scale
            s = row["solver"]
            own = pct_label.get(sc, "% of optimal")
            pct = (
                ""
                if own == "% of optimal"
                else f"{_fmt(st['pct_optimal']['mean'])} %; "
            )
            text += f" ({pct}{s['optimal']}/{s['solves']} proven optimal)"
        return text

    return [f"## Summary of returns ({what})", ""] + _policy_table(
        summary, policies, cell
    )


def _glance(summary: dict[str, Any], policies: list[str]) -> list[str]:
    """Per policy and scenario: feeder-minutes over a limit, EVs left uncharged."""

    def cell(row: dict[str, Any], sc: str, pol: str) -> str | None:
        f = row.get("figures")
        if not f:
            return None
        left = f["gave_up"]["mean"] + f["turned_away"]["mean"]
        return (
            f"{_fmt(f['over_feeder_min']['mean'])} · {_fmt(left)} · "
            f"{_fmt(f['mean_wait_min']['mean'])}"
        )

    return [
        "## At a glance: the feeders and the EV owners",
        "",
        "Per scenario: feeder-minutes over a limit · EVs left uncharged (gave up or "
        "turned away) · mean wait [min]; mean over seeds.",
        "",
    ] + _policy_table(summary, policies, cell)


def markdown(
    summary: dict[str, Any], policies: list[str], plot_files: dict[str, list[str]]
) -> str:
    """The report as markdown: the feeders and EV owners first, the reward after."""
    ref = summary["reference"]
    lines = ["# Policy comparison", ""]
    lines.append(
        "Every policy ran on the same seeds (paired). Cells are mean ± 95 % CI "
        "half-width (Student t) over seeds. Each scenario shows first what the "
        "feeders carried (against their limits) and what the EV owners got, then "
        "the reward the policies optimise. Energy is in MWh, power in MW, time in "
        "clock minutes; 'feeder-min' adds the minutes of every feeder over its limit."
    )
    if summary.get("command"):
        lines += ["", f"Made by `{summary['command']}`"]
    if summary.get("provenance"):
        lines += ["", summary["provenance"]]
    lines.append("")
    lines += _glance(summary, policies)
    if summary.get("notes"):
        lines += ["## Figures that look wrong at first sight", ""]
        lines += summary["notes"] + [""]
    lines += ["## What the figures are", ""] + definitions() + [""]
    for sc, rows in summary["scenarios"].items():
        scen = get_scenario(sc)
        n = max((len(r["seeds"]) for r in rows.values()), default=0)
        lines += [f"## {scen.title} (`{sc}`), {n} seeds", "", scen.description, ""]
        plots = {Path(f).stem.removeprefix(f"{sc}_"): f for f in plot_files.get(sc, [])}

        lines += ["### The feeders", ""] + grid_table(rows, policies, ref)
        lines += ["", *feeder_tables(rows, policies)]
        lines += _image(plots, "feeder_util")
        lines += ["", "### The EV owners", ""] + owner_table(rows, policies, ref)
        lines += _image(plots, "waits") + _image(plots, "kpis")
        lines += ["", "### The reward", ""] + _reward_table(summary, sc, rows, policies)
        lines += _image(plots, "reward_parts")
        lines.append("")
    lines += _headline(summary, policies)
    return "\n".join(lines)


def _image(plots: dict[str, str], name: str) -> list[str]:
    f = plots.get(name)
    return ["", f"![{Path(f).stem}]({Path(f).name})"] if f else []


def _reward_table(
    summary: dict[str, Any], sc: str, rows: dict[str, Any], policies: list[str]
) -> list[str]:
    """The return, % of optimal, the remaining KPIs, paired tests, the solves."""
    ref = summary["reference"]
    lines = [
        "`return` is the episode's summed reward (all parts are costs, so higher = "
        "better). `% of optimal` = 100 × optimum return / policy return, per seed, "
        "where `optimum` is the hindsight MILP plan replayed through `env.step` (see "
        "`evaluation/optimum.py`), or the best baseline episode on that seed when it "
        "scored better. Where the solve did not close, the column is `% of bound` "
        "(100 × the MILP's proven bound / policy return). The optimum plans within a "
        "class narrower than the env (no queueing, no LOAD_SHIFT, the nearest "
        "stations per kind, defers up to a limit), so a policy could in principle "
        "beat it.",
        "",
    ]
    has_opt = any("pct_optimal" in r["stats"] for r in rows.values())
    keys = list(TABLE_KEYS) + (["pct_optimal"] if has_opt else [])
    head = ["policy"] + [
        f"{k} [{KPI_UNITS.get(k, '')}]".replace(" []", "")
        if k != "pct_optimal"
        else summary.get("pct_label", {}).get(sc, "% of optimal")
        for k in keys
    ]
    lines.append("| " + " | ".join(head) + " |")
    lines.append("|" + "---|" * len(head))
    for pol in policies:
        if pol not in rows:
            continue
        st = rows[pol]["stats"]
        cells = [f"**{pol}**" if pol == ref else pol]
        for k in keys:
            s = st.get(k)
            cells.append("–" if s is None else f"{_fmt(s['mean'])} ± {_fmt(s['ci95'])}")
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", f"Paired differences against **{ref}** (policy − {ref}):", ""]
    lines.append(
        "| policy | Δ return | p (t) | p (Wilcoxon) | Δ mean wait [min] "
        "| Δ stranded | Δ grid_stress part | Δ energy [kWh] |"
    )
    lines.append("|---|---|---|---|---|---|---|---|")
    for pol in policies:
        if pol not in rows or pol == ref:
            continue
        pv = rows[pol]["paired_vs_reference"]
        r = pv["return"]
        lines.append(
            f"| {pol} | {_fmt(r['mean_diff'])} ± {_fmt(r['ci95'])} | {_p(r['t_p'])} "
            f"| {_p(r['wilcoxon_p'])} | "
            + " | ".join(
                f"{_fmt(pv[k]['mean_diff'])} ± {_fmt(pv[k]['ci95'])}"
                for k in PAIRED_KEYS[1:]
            )
            + " |"
        )
    if OPTIMUM in rows and "solver" in rows[OPTIMUM]:
        lines += ["", _solver_line(rows[OPTIMUM]["solver"])]
    if summary.get("episodes_with_optimum"):
        beaten = [b for b in summary["episodes_beating_optimum"] if b[1] == sc]
        lines += [
            "",
            f"Policy episodes that scored better than the optimum's reference (plan "
            f"or bound) on the same seed: {len(beaten)}"
            + (f" ({beaten[:10]})." if beaten else "."),
        ]
    return lines


def made_by(records: list[dict[str, Any]], policies: list[str]) -> str:
    """Which code made whose episodes: a comparison resumes, so a folder can hold
    episodes from several commits (each record names its ``code``)."""
    by_code: dict[str, dict[str, int]] = {}
    for r in records:
        mine = by_code.setdefault(r.get("code", "unrecorded"), {})
        mine[r["policy"]] = mine.get(r["policy"], 0) + 1
    order = {p: i for i, p in enumerate(policies)}
    parts = []
    for code in sorted(by_code):
        counts = sorted(by_code[code].items(), key=lambda kv: order.get(kv[0], 1e9))
        parts.append(f"{code}: " + ", ".join(f"{p} ({n})" for p, n in counts))
    return f"Episodes made by code at (policy, episodes): {'; '.join(parts)}."


def write_report(
    records: list[dict[str, Any]],
    out_dir: Path,
    *,
    policies: list[str],
    scenarios: list[str],
    reference: str,
    plots: bool = True,
    command: str = "",
    provenance: str = "",
) -> list[Path]:
    """Write ``report.md``, ``summary.json`` and (unless ``plots=False``) the PNGs."""
    out_dir.mkdir(parents=True, exist_ok=True)
    fill_network_parts(records)
    summary = summary_json(records, policies, scenarios, reference)
    summary["command"] = command
    summary["provenance"] = made_by(records, policies) + (
        f" {provenance}" if provenance else ""
    )
    plot_files: dict[str, list[str]] = {}
    written: list[Path] = []
    if plots:
        from .plots import write_plots

        plot_files = write_plots(
            records, out_dir, policies=policies, scenarios=scenarios
        )
        written += [Path(p) for ps in plot_files.values() for p in ps]
    md = out_dir / "report.md"
    md.write_text(markdown(summary, policies, plot_files))
    js = out_dir / "summary.json"
    js.write_text(json.dumps(summary, indent=1, default=_json_default))
    return [md, js, *written]


def _json_default(x: Any) -> Any:
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return str(x)


def _solver_line(s: dict[str, Any]) -> str:
    """The optimum's solves in one paragraph: statuses first."""
    out = (
        f"Optimum: {s['optimal']}/{s['solves']} solves proven optimal "
        f"(gap ≤ 1e-6, within the plan class)"
    )
    if s.get("not_optimal"):
        out += (
            f"; not proven optimal: {len(s['not_optimal'])} (seed, status, reported "
            f"plan: {s['not_optimal'][:10]}), largest gap {100 * s['max_gap']:.2f} %"
        )
    if s.get("from_baseline"):
        out += f"; seeds where a baseline episode is the reported plan: {s['from_baseline']}"
    return out + (
        f". Solve time mean {s['solve_s_mean']:.1f} s, max {s['solve_s_max']:.1f} s; "
        f"largest |solver objective − replayed return| = "
        f"{s['max_abs_objective_minus_replay'] or 0.0:.1e}; replay steps the env "
        f"refused: {s['refused_replay_steps']}; mean (bound − reported return) = "
        f"{_fmt(s['mean_bound_minus_replay'])}. Its decisions, summed over "
        f"seeds: {s['plan_mix']}."
    )
