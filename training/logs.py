"""Training logs: TRL's log history to CSV, and the curves to PNG."""

from __future__ import annotations

import csv
import math
from pathlib import Path
from typing import Any

CURVES = (  # (panel title, log keys) in the plot
    ("reward (weighted sum)", ("reward",)),
    ("format / validity rate", ("format_rate", "valid_rate")),
    ("vs heuristic: consequence", ("rewards/consequence_reward/mean",)),
    ("KL to the SFT model", ("kl",)),
)


def write_csv(
    history: list[dict[str, Any]],
    path: Path,
    keep: tuple[str, ...] = ("loss", "reward"),
) -> Path:
    """One row per logged step (not the end-of-training summary: rows with none of
    the ``keep`` keys are left out); ``step`` first."""
    rows = [h for h in history if any(k in h for k in keep)]
    keys = sorted({k for h in rows for k in h if isinstance(h[k], int | float)})
    keys = ["step", *[k for k in keys if k != "step"]]
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys, extrasaction="ignore")
        w.writeheader()
        for h in rows:
            w.writerow({k: h.get(k, "") for k in keys})
    return path


def read_csv(path: Path) -> list[dict[str, float]]:
    out = []
    with path.open() as f:
        for row in csv.DictReader(f):
            out.append({k: float(v) for k, v in row.items() if v not in ("", None)})
    return out


def plot_curves(
    csv_path: Path,
    png_path: Path,
    title: str = "GRPO",
    curves: tuple[tuple[str, tuple[str, ...]], ...] = CURVES,
) -> Path:
    """Panels of logged keys against step (PNG); GRPO's reward, validity, advantage
    over the heuristic and KL by default."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = read_csv(csv_path)
    fig, axes = plt.subplots(
        1, len(curves), figsize=(4 * len(curves), 3.2), squeeze=False
    )
    for ax, (name, keys) in zip(axes[0], curves, strict=True):
        for key in keys:
            pts = [(r["step"], r[key]) for r in rows if key in r and "step" in r]
            pts = [(x, y) for x, y in pts if math.isfinite(y)]
            if pts:
                ax.plot(*zip(*pts, strict=True), marker=".", label=key.split("/")[-1])
        ax.set_title(name, fontsize=9)
        ax.set_xlabel("step")
        ax.grid(alpha=0.3)
        if len(keys) > 1 and ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    png_path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(png_path, dpi=90)
    plt.close(fig)
    return png_path
