"""Held-out checks during training, and the choice among a run's snapshots.

Seeds: training draws below 900000; the report (``evgrid compare``) plays
900000-900019; these checks play from ``VALIDATION_FIRST_SEED`` (950000), so
neither the training nor the choice of when to stop ever sees the report's seeds.
Each check plays the numpy policy (``evgrid_rl.policy.PPOPolicy``), exactly what
``evgrid compare`` will play, and greedy_eta once on the same seeds as the line to
beat.

``python3 -m evgrid_rl.validate RUN_DIR --seeds 10`` plays every snapshot a run kept
(``RUN_DIR/snapshots/*.npz``, one per check) on more validation seeds (the same
950000 range, still apart from the report's) and writes ``selection.csv``: the one to
ship is the best there, chosen without the report's seeds.
"""

from __future__ import annotations

import argparse
import csv
import re
from pathlib import Path

import numpy as np

from evgrid_core.policies import make_policy
from evgrid_core.rollout import run_episode

VALIDATION_FIRST_SEED = 950_000


def validation_seeds(n: int) -> list[int]:
    return [VALIDATION_FIRST_SEED + i for i in range(n)]


# What a check records beside the return: EVs lost and the feeders' overload.
KPIS = ("gave_up", "stranded", "overload_feeder_min", "shed_kwh", "load_shifts")


def check(
    policy_name: str, scenarios: tuple[str, ...], n_seeds: int, **policy_kwargs: object
) -> dict[str, float]:
    """Means over the first ``n_seeds`` validation seeds: ``val_<scenario>`` (return)
    per scenario, and over all scenarios ``val_return`` and ``val_<kpi>``."""
    out: dict[str, float] = {}
    kpis: dict[str, list[float]] = {k: [] for k in KPIS}
    rets = []
    policy = make_policy(policy_name, **policy_kwargs)  # reset per episode, as compare
    for sc in scenarios:
        here = []
        for seed in validation_seeds(n_seeds):
            res = run_episode(policy, sc, seed)
            here.append(res.ret)
            for k in KPIS:
                kpis[k].append(res.kpis[k])
        out[f"val_{sc}"] = float(np.mean(here))
        rets += here
    out["val_return"] = float(np.mean(rets))
    out.update({f"val_{k}": float(np.mean(v)) for k, v in kpis.items()})
    return out


def check_actor(
    weights: Path, scenarios: tuple[str, ...], n_seeds: int
) -> dict[str, float]:
    """The exported actors at ``weights`` (``check`` of the ``mappo`` policy for a
    ``mappo*.npz``, else of ``ppo``)."""
    name = "mappo" if weights.name.startswith("mappo") else "ppo"
    return check(name, scenarios, n_seeds, weights=weights)


def _iteration(path: Path) -> int:
    return int(re.search(r"_it(\d+)$", path.stem).group(1))  # type: ignore[union-attr]


def select(
    run: Path, scenarios: tuple[str, ...], n_seeds: int, top: int = 0
) -> list[dict[str, float]]:
    """The snapshots of ``run`` checked on ``n_seeds`` validation seeds per scenario,
    best return first; written to ``run/selection.csv``. ``top``: only the ``top``
    best of the run's own checks (``curve.csv``'s ``val_return``)."""
    snaps = sorted((run / "snapshots").glob("*.npz"), key=_iteration)
    if not snaps:
        raise FileNotFoundError(f"{run}/snapshots: no snapshots (*.npz) to choose from")
    if top:
        with (run / "curve.csv").open() as f:
            checked = {int(float(r["iteration"])): float(r["val_return"])
                       for r in csv.DictReader(f) if r.get("val_return")}  # fmt: skip
        snaps = sorted(
            snaps, key=lambda p: checked.get(_iteration(p), float("-inf")), reverse=True
        )[:top]
    from tqdm import tqdm

    rows = []
    for path in tqdm(snaps, desc="snapshots", unit="snapshot"):
        row = {"snapshot": path.name, **check_actor(path, scenarios, n_seeds)}
        rows.append(row)
    rows.sort(key=lambda r: -r["val_return"])
    with (run / "selection.csv").open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    return rows


def main(argv: list[str] | None = None) -> int:
    from .presets import REPORT_SCENARIOS

    p = argparse.ArgumentParser(description="choose among a run's snapshots")
    p.add_argument("run", type=Path, help="a run folder (with snapshots/)")
    p.add_argument(
        "--seeds", type=int, default=10, help="validation seeds per scenario"
    )
    p.add_argument("--scenarios", default=",".join(REPORT_SCENARIOS))
    p.add_argument(
        "--top", type=int, default=0, help="only the N best of the run's own checks"
    )
    args = p.parse_args(argv)
    if args.seeds < 1 or args.top < 0:
        p.error("--seeds must be at least 1 and --top at least 0")
    rows = select(args.run, tuple(args.scenarios.split(",")), args.seeds, args.top)
    for r in rows:
        print(f"{r['snapshot']:>24}  return {r['val_return']:9.2f}  gave up "
              f"{r['val_gave_up']:6.2f}  over a limit {r['val_overload_feeder_min']:7.2f} min")  # fmt: skip
    ref = check("greedy_eta", tuple(args.scenarios.split(",")), args.seeds)
    print(f"{'greedy_eta':>24}  return {ref['val_return']:9.2f}  gave up "
          f"{ref['val_gave_up']:6.2f}  over a limit {ref['val_overload_feeder_min']:7.2f} min")  # fmt: skip
    print(f"best on {args.seeds} validation seeds per scenario: {rows[0]['snapshot']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
