"""PNG plots of a comparison (matplotlib, Agg backend: no display needed).

Per scenario: the figures that matter to the grid and the EV owners as bars with
95 % CIs, the feeders' load over the clock (the policies that matter highlighted,
the time over or at a limit beside it), the distribution of plug-in waits, and the
reward breakdown. Axes are named in words with their units.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from evgrid_core import REWARD_KEYS, SimConfig, get_scenario
from evgrid_core.optional import require

from .engineering import AT_LIMIT, feeder_figures, is_learned, summarise_figures
from .runner import OPTIMUM
from .stats import by_scenario_policy, summarise

# The bar panels: (figure, title in words and units). ``left_uncharged`` is gave up
# + turned away; the others are ``engineering`` figures or ``return``.
BAR_PANELS = (
    ("over_feeder_min", "Feeder-minutes over a limit [min]"),
    ("shed_kwh", "Energy over the limits, shed [kWh]"),
    ("mean_wait_min", "Mean wait for a plug [min]"),
    ("left_uncharged", "EVs left uncharged (gave up or turned away)"),
    ("energy_mwh", "Energy delivered [MWh]"),
    ("return", "Return (sum of reward; higher is better)"),
)

# One colour per reward part, every part its own (tab10, then black, yellow, mint):
# the breakdown's stack keeps its colours whichever parts a comparison shows.
REWARD_COLORS = {
    "wait": "#1f77b4",
    "grid_stress": "#d62728",
    "peak": "#ff7f0e",
    "renewable": "#2ca02c",
    "cost": "#8c564b",
    "urgency": "#9467bd",
    "stranded": "#e377c2",
    "invalid": "#7f7f7f",
    "defer_abuse": "#bcbd22",
    "load_shift": "#17becf",
    "unmet": "#000000",
    "undervoltage": "#ffe119",
    "transformer_overload": "#aaffc3",
}
WAIT_WHISKERS = (5, 95)  # [percentile] the waits plot's whiskers; dots beyond them


def _pyplot():  # noqa: ANN202
    require("matplotlib", "plots", "eval").use("Agg")
    return require("matplotlib.pyplot", "plots", "eval")


def _colors(policies: list[str]) -> dict[str, Any]:
    plt = _pyplot()
    cmap = plt.get_cmap("tab10")
    hues = [cmap(i) for i in range(10) if i != 7]  # tab10's grey marks "the rest"
    others = [p for p in policies if p != OPTIMUM]
    out = {p: hues[i % len(hues)] for i, p in enumerate(others)}
    return out | {OPTIMUM: "black"}


def write_plots(
    records: list[dict[str, Any]],
    out_dir: Path,
    *,
    policies: list[str],
    scenarios: list[str],
) -> dict[str, list[str]]:
    """Write the four PNGs of each scenario; returns scenario -> file paths."""
    plt = _pyplot()
    out: dict[str, list[str]] = {}
    for sc in scenarios:
        files = []
        for name, fig in figures(records, policies, sc).items():
            path = out_dir / f"{sc}_{name}.png"
            fig.savefig(path, dpi=80)
            plt.close(fig)
            files.append(str(path))
        if files:
            out[sc] = files
    return out


def figures(
    records: list[dict[str, Any]], policies: list[str], scenario: str
) -> dict[str, Any]:
    """The open matplotlib figures of one scenario by name (kpis, feeder_util,
    waits, reward_parts); none when no policy ran it. The caller closes them."""
    plt = _pyplot()
    runs = by_scenario_policy(records)[scenario]
    pols = [p for p in policies if runs.get(p)]
    if not pols:
        return {}
    runs = {p: runs[p] for p in pols}
    colors = _colors(policies)
    return {
        name: draw(plt, runs, pols, colors, scenario)
        for name, draw in (
            ("kpis", _kpi_bars),
            ("feeder_util", _utilisation),
            ("waits", _waits),
            ("reward_parts", _reward_parts),
        )
    }


def highlighted(runs, pols: list[str]) -> list[str]:  # noqa: ANN001
    """The policies that matter: the optimum, the learned ones and the best of the
    rest by mean return."""
    rest = [p for p in pols if p != OPTIMUM and not is_learned(p)]
    best = max(
        rest,
        key=lambda p: np.mean([r["return"] for r in runs[p].values()]),
        default=None,
    )
    return [p for p in pols if p in (OPTIMUM, best) or is_learned(p)]


def _bar_stats(runs, pols):  # noqa: ANN001, ANN202
    out = {}
    for p in pols:
        st = summarise_figures(runs[p]) | summarise(runs[p], ["return"])
        left = [
            r["kpis"]["stranded"] for r in runs[p].values()
        ]  # gave up + turned away
        st["shed_kwh"] = {k: v * 1000.0 for k, v in st["shed_mwh"].items()}
        st["left_uncharged"] = {
            "mean": float(np.mean(left)),
            "ci95": _ci95(left),
        }
        out[p] = st
    return out


def _label_bars(ax, y, means, cis) -> None:  # noqa: ANN001
    """Each bar's mean beside its CI's end; the axis widened to hold the labels."""
    pairs = list(zip(means, cis, strict=True))
    lo = min([0.0] + [m - c for m, c in pairs if m < 0])
    hi = max([0.0] + [m + c for m, c in pairs])
    for yi, m, c in zip(y, means, cis, strict=True):
        right = m >= 0
        ax.annotate(f"{m:.3g}", (m + c if right else m - c, yi),
                    xytext=(4 if right else -4, 0), textcoords="offset points",
                    va="center", ha="left" if right else "right", fontsize=8)  # fmt: skip
    if hi == lo:  # all zero
        ax.set_xlim(0.0, 1.0)
        return
    pad = 0.22 * (hi - lo)
    ax.set_xlim(lo - (pad if lo < 0 else 0.0), hi + (pad if hi > 0 else 0.0))


def _ci95(x: list[float]) -> float:
    from evgrid_core import aggregate

    return aggregate([{"x": v} for v in x])["x"]["ci95"] if x else 0.0


def _kpi_bars(plt, runs, pols, colors, sc):  # noqa: ANN001, ANN202
    fig, axes = plt.subplots(2, 3, figsize=(13, 7))
    st = _bar_stats(runs, pols)
    y = np.arange(len(pols))[::-1]
    for ax, (key, title) in zip(axes.flat, BAR_PANELS, strict=True):
        means = [st[p][key]["mean"] for p in pols]
        ax.barh(
            y,
            means,
            xerr=[st[p][key]["ci95"] for p in pols],
            color=[colors[p] for p in pols],
            capsize=3,
        )
        cis = [st[p][key]["ci95"] for p in pols]
        _label_bars(ax, y, means, cis)
        ax.set_title(title, fontsize=10)
        ax.set_yticks(y, pols, fontsize=8)
        ax.grid(axis="x", alpha=0.3)
    fig.suptitle(
        f"{get_scenario(sc).title}: mean ± 95 % CI over "
        f"{len(next(iter(runs.values())))} seeds"
    )
    fig.tight_layout()
    return fig


def _clock(sc: str, n: int) -> tuple[np.ndarray, list[float], list[str]]:
    """Tick start times [min of day], and hourly tick positions with HH:MM labels."""
    tm = SimConfig().tick_minutes
    start = get_scenario(sc).start_minute
    minutes = start + tm * np.arange(n)
    hours = [m for m in minutes.tolist() if m % 60 == 0]
    return minutes, hours, [f"{int(m // 60) % 24:02d}:{int(m % 60):02d}" for m in hours]


def _over_per_tick(runs_p) -> tuple[np.ndarray, str]:  # noqa: ANN001
    """Per tick, summed over seeds: feeders over a limit (per-feeder records), or
    else episodes with a feeder at its limit (the highest utilisation series)."""
    figs = [feeder_figures(r) for r in runs_p.values()]
    if all(f is not None for f in figs):
        counts = sum(
            (
                (np.asarray(r["feeders"]["shed_kw"]) > 0)
                | (
                    np.asarray(r["feeders"]["background_kw"])
                    > np.asarray(r["feeders"]["capacity_kw"])
                )
            ).sum(axis=0)
            for r in runs_p.values()
        )
        return np.asarray(counts, dtype=float), "feeders over a limit (all seeds)"
    u = np.array([r["util"] for r in runs_p.values()])
    return (u >= AT_LIMIT).sum(axis=0).astype(float), "seeds with a feeder at its limit"


def _utilisation(plt, runs, pols, colors, sc):  # noqa: ANN001, ANN202
    fig = plt.figure(figsize=(13, 6.5))
    grid = fig.add_gridspec(2, 2, width_ratios=(3, 1.15), height_ratios=(2.2, 1))
    ax, ax_over, ax_bar = (
        fig.add_subplot(grid[0, 0]),
        fig.add_subplot(grid[1, 0]),
        fig.add_subplot(grid[:, 1]),
    )
    ax_over.sharex(ax)
    main = highlighted(runs, pols)
    n = len(next(iter(runs[pols[0]].values()))["util"])
    minutes, hours, labels = _clock(sc, n)
    lo = 100.0
    for p in pols:
        u = np.array([r["util"] for r in runs[p].values()]) * 100.0
        mean = u.mean(axis=0)
        lo = min(lo, float(mean.min()))
        if p in main:
            ax.plot(minutes, mean, label=p, color=colors[p], lw=2.2, zorder=3)
        else:
            ax.plot(minutes, mean, color="0.7", lw=1, zorder=2)
    if len(main) < len(pols):
        ax.plot([], [], color="0.7", lw=1, label="other policies")
    soft = 100 * SimConfig().soft_limit
    ax.axhline(soft, color="grey", ls="--", lw=1)
    ax.axhline(100, color="red", ls="--", lw=1)
    ax.text(minutes[0], 100.2, "limit", color="red", fontsize=8, va="bottom")
    ax.text(minutes[0], soft + 0.2, f"soft limit {soft:.0f} %", color="grey",
            fontsize=8, va="bottom")  # fmt: skip
    ax.set_ylim(max(0.0, min(lo, soft) - 3.0), 102.0)
    ax.set_ylabel("most loaded feeder\n[% of its limit]")
    ax.set_title(
        f"{get_scenario(sc).title}: load of the most loaded feeder, mean over seeds",
        fontsize=11,
    )
    ax.legend(fontsize=8, loc="lower center", ncol=3)
    ax.grid(alpha=0.3)
    ax.tick_params(labelbottom=False)
    width = SimConfig().tick_minutes / (len(main) + 1)
    label = ""
    for i, p in enumerate(main):
        counts, label = _over_per_tick(runs[p])
        ax_over.bar(minutes + i * width, counts, width=width, color=colors[p],
                    align="edge", label=p)  # fmt: skip
    ax_over.set_ylabel(label.replace(" (", "\n("), fontsize=8)
    ax_over.set_xticks(hours, labels)
    ax_over.set_xlabel("clock time")
    ax_over.grid(alpha=0.3)
    # Right: the overload KPI of every policy, which the mean above hides.
    st = _bar_stats(runs, pols)
    y = np.arange(len(pols))[::-1]
    means = [st[p]["over_feeder_min"]["mean"] for p in pols]
    ax_bar.barh(y, means, xerr=[st[p]["over_feeder_min"]["ci95"] for p in pols],
                color=[colors[p] if p in main else "0.7" for p in pols], capsize=3)  # fmt: skip
    _label_bars(ax_bar, y, means, [st[p]["over_feeder_min"]["ci95"] for p in pols])
    ax_bar.set_yticks(y, pols, fontsize=8)
    ax_bar.set_xlabel("feeder-minutes over a limit per episode\n(mean ± 95 % CI)")
    ax_bar.set_title("time over the limits", fontsize=10)
    ax_bar.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    return fig


def _waits(plt, runs, pols, colors, sc):  # noqa: ANN001, ANN202
    fig, ax = plt.subplots(figsize=(9, 4.5))
    data = [
        np.concatenate([np.array(r["waits"], dtype=float) for r in runs[p].values()])
        for p in pols
    ]
    data = [d if d.size else np.zeros(1) for d in data]
    # Whiskers at percentiles, not 1.5 IQR: most EVs plug in at once, so the box can
    # be a line while one in twenty waits half an hour; those show as dots.
    box = ax.boxplot(data, whis=WAIT_WHISKERS, showfliers=True, patch_artist=True,
                     flierprops={"marker": ".", "markersize": 3, "alpha": 0.4,
                                 "markeredgecolor": "0.3"}, showmeans=True,
                     meanprops={"marker": "D", "markersize": 4,
                                "markerfacecolor": "white", "markeredgecolor": "k"})  # fmt: skip
    for patch, p in zip(box["boxes"], pols, strict=True):
        patch.set_facecolor(colors[p])
        patch.set_alpha(0.6)
    lo, hi = WAIT_WHISKERS
    ax.set_xticks(np.arange(1, len(pols) + 1), pols, rotation=25, ha="right")
    ax.set_ylabel("wait from first request to plug-in [min]")
    ax.set_title(
        f"{get_scenario(sc).title}: waits of the EVs that plugged in, all seeds\n"
        f"(box 25-75 %, line median, diamond mean, whiskers {lo}-{hi} %, "
        "dots beyond)",
        fontsize=10,
    )
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    return fig


def _reward_parts(plt, runs, pols, colors, sc):  # noqa: ANN001, ANN202
    fig, ax = plt.subplots(figsize=(9, 4.5))
    keys = [k for k in REWARD_KEYS]
    means = np.array(
        [
            [np.mean([r["parts"].get(k, 0.0) for r in runs[p].values()]) for k in keys]
            for p in pols
        ]
    )
    keep = np.abs(means).sum(axis=0) > 0
    bottom = np.zeros(len(pols))
    x = np.arange(len(pols))
    for j in np.flatnonzero(keep):
        ax.bar(x, means[:, j], bottom=bottom, label=keys[j],
               color=REWARD_COLORS[keys[j]], edgecolor="0.3", linewidth=0.4)  # fmt: skip
        bottom += means[:, j]
    ax.set_xticks(x, pols, rotation=25, ha="right")
    ax.set_ylabel("reward per episode (each part a cost)")
    ax.set_title(f"{get_scenario(sc).title}: reward breakdown, mean over seeds")
    ax.legend(fontsize=8, ncol=3)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    return fig
