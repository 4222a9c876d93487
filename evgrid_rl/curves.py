"""Learning curves as pictures: one run's, or several runs side by side.

``python3 -m evgrid_rl.curves OUT.png RUN_DIR [RUN_DIR ...]`` draws the runs'
``curve.csv`` in one figure (the candidate interface beside the flat index).
"""

from __future__ import annotations

import argparse
import csv
from pathlib import Path

from .validate import KPIS

_NOT_SCENARIOS = {"return", *KPIS}  # the val_ columns that are not a scenario's return
KPI_LABELS = {
    "val_gave_up": "EVs that gave up",
    "val_overload_feeder_min": "feeder-min over a limit",
}


def _xy(curve: list[dict[str, float]], key: str) -> tuple[list[float], list[float]]:
    rows = [r for r in curve if key in r and r[key] == r[key]]  # NaN != NaN
    return [r["env_steps"] for r in rows], [r[key] for r in rows]


def plot_curve(
    curve: list[dict[str, float]],
    path: Path,
    title: str,
    reference: dict[str, float] | None = None,
) -> None:
    """Training return per iteration; where the run checked held-out seeds, their
    return per scenario (greedy_eta's on the same seeds dashed) and its KPIs."""
    plot_runs({title: curve}, path, reference or {})


def plot_runs(
    runs: dict[str, list[dict[str, float]]], path: Path, reference: dict[str, float]
) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    scenarios = sorted({k[4:] for c in runs.values() for r in c for k in r
                        if k.startswith("val_") and k[4:] not in _NOT_SCENARIOS})  # fmt: skip
    checked = bool(scenarios)
    fig, axes = plt.subplots(1, 3 if checked else 1, figsize=(15 if checked else 6, 4))
    axes = axes if checked else [axes]
    for name, curve in runs.items():
        line = axes[0].plot(*_xy(curve, "return_mean"), label=name)[0]
        if checked:
            axes[1].plot(*_xy(curve, "val_return"), "o-", color=line.get_color(),
                         label=f"{name}: all scenarios")  # fmt: skip
            for key, style in (
                ("val_gave_up", "o-"),
                ("val_overload_feeder_min", "s--"),
            ):
                axes[2].plot(*_xy(curve, key), style, color=line.get_color(),
                             label=f"{name}: {KPI_LABELS[key]}")  # fmt: skip
    if checked and "val_return" in reference:
        axes[1].axhline(reference["val_return"], color="k", ls="--", label="greedy_eta")
        for key, style in (("val_gave_up", ":"), ("val_overload_feeder_min", "-.")):
            axes[2].axhline(reference[key], color="k", ls=style,
                            label=f"greedy_eta: {KPI_LABELS[key]}")  # fmt: skip
    axes[0].set_title("training episodes (mean return)")
    axes[0].set_ylabel("return per episode")
    if checked:
        axes[1].set_title("held-out seeds (mean over scenarios)")
        axes[2].set_title("held-out seeds: EVs lost, feeders")
    from matplotlib.ticker import FuncFormatter

    for ax in axes:
        ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x / 1e3:g}k"))
        ax.set_xlabel("env steps sampled")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def read(path: Path) -> list[dict[str, float]]:
    with path.open() as f:
        rows = csv.DictReader(f)  # a short (torn) row: its missing cells are None
        return [
            {k: float(v) for k, v in r.items() if v not in ("", None)} for r in rows
        ]


def main(argv: list[str] | None = None) -> int:
    import json

    p = argparse.ArgumentParser(description="several runs' curves in one figure")
    p.add_argument("out", type=Path, help="the PNG to write")
    p.add_argument("runs", type=Path, nargs="+", help="run folders (with curve.csv)")
    args = p.parse_args(argv)
    runs, reference = {}, {}
    for d in args.runs:
        if not (d / "curve.csv").is_file():
            p.error(f"{d}: no curve.csv")
        runs[d.name] = read(d / "curve.csv")
        if (d / "reference.json").is_file():
            reference = json.loads((d / "reference.json").read_text())
    plot_runs(runs, args.out, reference)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
