"""PNG plots of a comparison (matplotlib, Agg backend: no display needed).

Per scenario: KPI bars with 95 % CIs, the highest feeder utilisation over the
episode per policy, the distribution of plug-in waits, and the reward breakdown.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from evgrid_core import KPI_UNITS, REWARD_KEYS

from .stats import by_scenario_policy, summarise

BAR_KEYS = (
    "return",
    "mean_wait_min",
    "stranded",
    "evs_served",
    "peak_feeder_util_pct",
    "energy_cost_inr",
)


def _pyplot():  # noqa: ANN202
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:  # pragma: no cover - depends on the machine
        raise ImportError(
            "plots need matplotlib: pip install 'ev-grid-oracle[eval]'"
        ) from e
    return plt


def _colors(policies: list[str]) -> dict[str, Any]:
    plt = _pyplot()
    cmap = plt.get_cmap("tab10")
    return {p: cmap(i % 10) for i, p in enumerate(policies)}


def write_plots(
    records: list[dict[str, Any]],
    out_dir: Path,
    *,
    policies: list[str],
    scenarios: list[str],
) -> dict[str, list[str]]:
    """Write the four PNGs of each scenario; returns scenario -> file paths."""
    plt = _pyplot()
    grouped = by_scenario_policy(records)
    colors = _colors(policies)
    out: dict[str, list[str]] = {}
    for sc in scenarios:
        pols = [p for p in policies if grouped[sc].get(p)]
        if not pols:
            continue
        runs = {p: grouped[sc][p] for p in pols}
        files = []
        for name, draw in (
            ("kpis", _kpi_bars),
            ("feeder_util", _utilisation),
            ("waits", _waits),
            ("reward_parts", _reward_parts),
        ):
            fig = draw(plt, runs, pols, colors, sc)
            path = out_dir / f"{sc}_{name}.png"
            fig.savefig(path, dpi=80)
            plt.close(fig)
            files.append(str(path))
        out[sc] = files
    return out


def _kpi_bars(plt, runs, pols, colors, sc):  # noqa: ANN001, ANN202
    fig, axes = plt.subplots(2, 3, figsize=(12, 6.5))
    x = np.arange(len(pols))
    for ax, key in zip(axes.flat, BAR_KEYS, strict=True):
        st = [summarise(runs[p], [key])[key] for p in pols]
        ax.bar(
            x,
            [s["mean"] for s in st],
            yerr=[s["ci95"] for s in st],
            color=[colors[p] for p in pols],
            capsize=3,
        )
        unit = KPI_UNITS.get(key, "")
        ax.set_title(f"{key} [{unit}]" if unit else key, fontsize=10)
        ax.set_xticks(x, pols, rotation=35, ha="right", fontsize=8)
        ax.grid(axis="y", alpha=0.3)
    fig.suptitle(f"{sc}: mean ± 95 % CI over seeds")
    fig.tight_layout()
    return fig


def _utilisation(plt, runs, pols, colors, sc):  # noqa: ANN001, ANN202
    fig, ax = plt.subplots(figsize=(9, 4.5))
    for p in pols:
        u = np.array([r["util"] for r in runs[p].values()]) * 100.0
        ticks = np.arange(u.shape[1])
        ax.plot(ticks, u.mean(axis=0), label=p, color=colors[p], lw=1.5)
    ax.axhline(90, color="grey", ls="--", lw=1)
    ax.axhline(100, color="red", ls="--", lw=1)
    ax.set_xlabel("tick (5 min)")
    ax.set_ylabel("highest feeder utilisation [%]")
    ax.set_title(f"{sc}: highest feeder utilisation per tick, mean over seeds")
    ax.legend(fontsize=8, ncol=2)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig


def _waits(plt, runs, pols, colors, sc):  # noqa: ANN001, ANN202
    fig, ax = plt.subplots(figsize=(9, 4.5))
    data = [
        np.concatenate([np.array(r["waits"], dtype=float) for r in runs[p].values()])
        for p in pols
    ]
    data = [d if d.size else np.zeros(1) for d in data]
    box = ax.boxplot(data, showfliers=False, patch_artist=True)
    for patch, p in zip(box["boxes"], pols, strict=True):
        patch.set_facecolor(colors[p])
        patch.set_alpha(0.6)
    ax.set_xticks(np.arange(1, len(pols) + 1), pols, rotation=25, ha="right")
    ax.set_ylabel("wait from request to plug-in [min]")
    ax.set_title(
        f"{sc}: plug-in waits, all EVs of all seeds (box 25-75 %, whiskers 1.5 IQR)"
    )
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    return fig


def _reward_parts(plt, runs, pols, colors, sc):  # noqa: ANN001, ANN202
    fig, ax = plt.subplots(figsize=(9, 4.5))
    keys = [k for k in REWARD_KEYS]
    means = np.array(
        [
            [np.mean([r["parts"][k] for r in runs[p].values()]) for k in keys]
            for p in pols
        ]
    )
    keep = np.abs(means).sum(axis=0) > 0
    cmap = plt.get_cmap("tab10")
    bottom = np.zeros(len(pols))
    x = np.arange(len(pols))
    for j in np.flatnonzero(keep):
        ax.bar(x, means[:, j], bottom=bottom, label=keys[j], color=cmap(j % 10))
        bottom += means[:, j]
    ax.set_xticks(x, pols, rotation=25, ha="right")
    ax.set_ylabel("reward per episode (parts are costs)")
    ax.set_title(f"{sc}: reward breakdown, mean over seeds")
    ax.legend(fontsize=8, ncol=3)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    return fig
