"""A comparison in a grid engineer's and an EV owner's units, from the episode records.

Per episode: how close the feeders came to their limits and how long and how much
they went over (minutes, MWh), and what the EV owners got (waits, EVs fully
charged, still charging, gave up, turned away, kWh delivered and still owed).
Records that carry per-feeder series (``runner.feeder_series``) also give each
feeder's peak in MW against its limit and its own minutes and MWh over it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from evgrid_core import SimConfig, aggregate

# What each figure is, in words and units: (column head, what it counts).
GRID_FIGURES: dict[str, tuple[str, str]] = {
    "peak_util_pct": (
        "peak load, most loaded feeder [% of its limit]",
        "the highest load any feeder carried, as a share of its limit at that tick "
        "(protection sheds EV load above the limit, so a carried load never passes "
        "100 %)",
    ),
    "above_soft_min": (
        "time with a feeder above {soft:.0f} % [min]",
        "clock minutes in which at least one feeder carried more than the soft "
        "limit, where the `grid_stress` cost starts",
    ),
    "at_limit_min": (
        "time with a feeder at its limit [min]",
        "clock minutes in which at least one feeder carried 100 % of its limit "
        "(to the 0.01 % a record keeps): either shedding load or planned up to the "
        "limit exactly",
    ),
    "over_feeder_min": (
        "over the limit [feeder-min]",
        "feeder-minutes in which EV load was asked above a feeder's limit (and shed) "
        "or its background alone exceeded it; two feeders over for 5 min = 10",
    ),
    "shed_mwh": (
        "energy over the limit, shed [MWh]",
        "EV charging asked above the feeders' limits, which protection shed (the "
        "energy stays owed to its EVs)",
    ),
}
OWNER_FIGURES: dict[str, tuple[str, str]] = {
    "mean_wait_min": (
        "mean wait [min]",
        "from an EV's first request until it plugged in; an EV that left uncharged "
        "counts its whole patience",
    ),
    "p95_wait_min": ("95th-percentile wait [min]", "of the same waits"),
    "evs_requested": ("EVs asking", "EVs that asked for a charger"),
    "evs_plugged_in": ("plugged in [EVs]", "EVs that reached a plug"),
    "evs_served": (
        "fully charged [EVs]",
        "sessions that reached their target before the window closed",
    ),
    "still_charging": (
        "still charging at the end [EVs]",
        "plugged in but short of their target when the window closed",
    ),
    "gave_up": ("gave up [EVs]", "patience ran out before they plugged in"),
    "turned_away": (
        "turned away [EVs]",
        "stranded by an invalid answer (the env's only way to decline an EV)",
    ),
    "critical_on_time_pct": (
        "critical EVs on time [%]",
        "critical EVs plugged in before their deadline",
    ),
    "energy_mwh": ("delivered [MWh]", "energy charged into the EVs' batteries"),
    "unmet_mwh": (
        "still owed at the end [MWh]",
        "energy the EVs on their way, queued or charging still needed when the "
        "window closed",
    ),
}
LEARNED_PREFIXES = ("distilled", "oracle", "ppo")  # policies learnt from data
AT_LIMIT = 0.9999  # [0-1] a record's utilisation (4 decimals) at its limit


# The KPIs the figures read (every runner record has them).
KPIS_READ = (
    "peak_feeder_util_pct", "overload_feeder_min", "shed_kwh", "mean_wait_min",
    "p95_wait_min", "evs_requested", "evs_plugged_in", "evs_served", "gave_up",
    "stranded", "critical_on_time_pct", "energy_kwh", "unmet_kwh",
)  # fmt: skip


def is_learned(policy: str) -> bool:
    return policy.startswith(LEARNED_PREFIXES)


def has_figures(r: Mapping[str, Any]) -> bool:
    """Whether a record holds what the figures read (hand-made ones may not)."""
    return "util" in r and all(k in r.get("kpis", {}) for k in KPIS_READ)


# --- Per episode ----------------------------------------------------------------------
def grid_figures(r: Mapping[str, Any], config: SimConfig | None = None) -> dict:
    """The grid figures of one record (every record has them)."""
    cfg = config or SimConfig()
    util = np.asarray(r["util"], dtype=float)  # highest feeder utilisation per tick
    k, tm = r["kpis"], cfg.tick_minutes
    return {
        "peak_util_pct": float(k["peak_feeder_util_pct"]),
        "above_soft_min": float(np.count_nonzero(util > cfg.soft_limit) * tm),
        "at_limit_min": float(np.count_nonzero(util >= AT_LIMIT) * tm),
        "over_feeder_min": float(k["overload_feeder_min"]),
        "shed_mwh": float(k["shed_kwh"]) / 1000.0,
    }


def owner_figures(r: Mapping[str, Any]) -> dict:
    """The EV owners' figures of one record (every record has them).

    An EV that plugged in stays until it reaches its target or the window closes,
    so plugged in - fully charged = still charging at the end; every EV that left
    uncharged either gave up or was turned away by an invalid answer.
    """
    k = r["kpis"]
    return {
        "mean_wait_min": float(k["mean_wait_min"]),
        "p95_wait_min": float(k["p95_wait_min"]),
        "evs_requested": float(k["evs_requested"]),
        "evs_plugged_in": float(k["evs_plugged_in"]),
        "evs_served": float(k["evs_served"]),
        "still_charging": float(k["evs_plugged_in"] - k["evs_served"]),
        "gave_up": float(k["gave_up"]),
        "turned_away": float(k["stranded"] - k["gave_up"]),
        "critical_on_time_pct": float(k["critical_on_time_pct"]),
        "energy_mwh": float(k["energy_kwh"]) / 1000.0,
        "unmet_mwh": float(k["unmet_kwh"]) / 1000.0,
    }


def feeder_figures(r: Mapping[str, Any]) -> dict[str, np.ndarray] | None:
    """Per feeder (F,): its lowest limit and its peak load asked [MW], its minutes
    and MWh over the limit; None for a record without per-feeder series.

    Load asked = background + EV load carried + EV load shed: what the feeder would
    have carried without protection. A feeder is over its limit in a tick when
    protection shed EV load or its background alone exceeded the limit.
    """
    f = r.get("feeders")
    if not f:
        return None
    cap, bg, ev, shed = (
        np.asarray(f[k], dtype=float)
        for k in ("capacity_kw", "background_kw", "ev_kw", "shed_kw")
    )  # (F, T) [kW]
    dt_h = f["tick_minutes"] / 60.0
    over = (shed > 0) | (bg > cap)
    return {
        "limit_mw": cap.min(axis=1) / 1000.0,
        "peak_asked_mw": (bg + ev + shed).max(axis=1) / 1000.0,
        "over_min": over.sum(axis=1) * float(f["tick_minutes"]),
        "over_mwh": shed.sum(axis=1) * dt_h / 1000.0,
    }


# --- Over seeds -----------------------------------------------------------------------
def summarise_figures(
    runs: Mapping[int, Mapping[str, Any]], config: SimConfig | None = None
) -> dict[str, dict[str, float]]:
    """Mean, sd, 95 % CI and n of every grid and owner figure over one policy's
    seeds; empty unless every record holds what they read."""
    if not all(has_figures(r) for r in runs.values()):
        return {}
    return aggregate(
        [grid_figures(r, config) | owner_figures(r) for r in runs.values()]
    )


def summarise_feeders(
    runs: Mapping[int, Mapping[str, Any]],
) -> dict[str, Any] | None:
    """Per feeder: names, lowest limit and mean ± CI of each per-feeder figure over
    the seeds; None unless every record of the policy carries the series."""
    figs = [feeder_figures(r) for r in runs.values()]
    if not figs or any(f is None for f in figs):
        return None
    names = next(iter(runs.values()))["feeders"]["names"]
    out: dict[str, Any] = {"names": list(names)}
    out["limit_mw"] = np.min([f["limit_mw"] for f in figs], axis=0).tolist()
    for key in ("peak_asked_mw", "over_min", "over_mwh"):
        rows = [{n: float(f[key][i]) for i, n in enumerate(names)} for f in figs]
        out[key] = aggregate(rows)
    return out


# --- Markdown tables ------------------------------------------------------------------
def fmt(x: float | None) -> str:
    """A figure with three significant digits or so (– when missing)."""
    if x is None or not np.isfinite(x):
        return "–"
    a = abs(x)
    if a >= 1000:
        return f"{x:.0f}"
    if a >= 10:
        return f"{x:.1f}"
    if a >= 1 or a == 0:
        return f"{x:.2f}"
    return f"{x:.3f}"


def _cell(s: Mapping[str, float] | None) -> str:
    return "–" if s is None else f"{fmt(s['mean'])} ± {fmt(s['ci95'])}"


def _table(
    rows: Mapping[str, Mapping[str, Any]],
    policies: list[str],
    figures: Mapping[str, tuple[str, str]],
    bold: str,
) -> list[str]:
    soft = 100 * SimConfig().soft_limit
    head = [figures[k][0].format(soft=soft) for k in figures]
    lines = ["| policy | " + " | ".join(head) + " |", "|---|" + "---|" * len(head)]
    for pol in policies:
        if pol not in rows:
            continue
        st = rows[pol].get("figures", {})
        name = f"**{pol}**" if pol == bold else pol
        lines.append(
            f"| {name} | " + " | ".join(_cell(st.get(k)) for k in figures) + " |"
        )
    return lines


def grid_table(
    rows: Mapping[str, Mapping[str, Any]], policies: list[str], bold: str = ""
) -> list[str]:
    return _table(rows, policies, GRID_FIGURES, bold)


def owner_table(
    rows: Mapping[str, Mapping[str, Any]], policies: list[str], bold: str = ""
) -> list[str]:
    return _table(rows, policies, OWNER_FIGURES, bold)


def feeder_tables(
    rows: Mapping[str, Mapping[str, Any]], policies: list[str]
) -> list[str]:
    """Per feeder: peak load asked [MW] against its limit, minutes and MWh over it;
    a plain sentence instead when the records carry no per-feeder series."""
    have = [p for p in policies if p in rows and rows[p].get("feeders")]
    missing = [p for p in policies if p in rows and not rows[p].get("feeders")]
    if not have:
        return [
            "Per feeder: these records carry no per-feeder series (they were made "
            "before the runner wrote them), so the figures above are over all "
            "feeders and the peak is a share of the limit, not MW. Episodes run "
            "again record each feeder's load tick by tick, and this report then "
            "shows each feeder's peak in MW against its limit and its own minutes "
            "and MWh over it."
        ]
    first = rows[have[0]]["feeders"]
    names, limits = first["names"], first["limit_mw"]
    head = [f"{n} ({fmt(lim)} MW)" for n, lim in zip(names, limits, strict=True)]
    out = [
        "Per feeder (head: the feeder and its lowest limit in the episode), mean ± "
        "95 % CI over seeds. Load asked = background + EV load carried + EV load "
        "shed, what the feeder would have carried without protection."
    ]
    for key, title in (
        ("peak_asked_mw", "Peak load asked [MW]"),
        ("over_min", "Minutes over the limit [min]"),
        ("over_mwh", "Energy over the limit, shed [MWh]"),
    ):
        out += ["", f"{title}:", ""]
        out.append("| policy | " + " | ".join(head) + " |")
        out.append("|---|" + "---|" * len(head))
        for pol in have:
            st = rows[pol]["feeders"][key]
            out.append(
                f"| {pol} | " + " | ".join(_cell(st.get(n)) for n in names) + " |"
            )
    if missing:
        out += [
            "",
            f"No per-feeder series in the records of: {', '.join(missing)} "
            "(made before the runner wrote them).",
        ]
    return out


def definitions() -> list[str]:
    """What each figure in the feeder and EV-owner tables is."""
    soft = 100 * SimConfig().soft_limit
    out = []
    for figures in (GRID_FIGURES, OWNER_FIGURES):
        for head, what in figures.values():
            out.append(f"- *{head.format(soft=soft)}*: {what}.")
    return out
