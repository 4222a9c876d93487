"""``evgrid distill``: label training seeds with the optimum, then fit ``distilled``."""

from __future__ import annotations

import argparse
from pathlib import Path

from ._label_args import add_label_arguments, label_jobs
from ._optimum_args import add_optimum_arguments, optimum_settings

HELP = "train the distilled policy: optimum labels on training seeds, then gradient-boosted trees"


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_label_arguments(p, seeds="0:30")
    p.add_argument(
        "--labels",
        default="runs/labels",
        help="labels folder: episodes already solved there are reused (resumable)",
    )
    p.add_argument(
        "--validation-seeds",
        default="",
        help="FIRST:LAST of --seeds to leave out of the fit and score agreement on",
    )
    p.add_argument(
        "--look-ahead-seeds",
        default="",
        help="FIRST:LAST training seeds (optimum-labelled or not, outside "
        "--validation-seeds): after the fit on the optimum's labels, play "
        "that model on these seeds, label the states it visits by look-ahead "
        "(training/dagger.py) and fit again on both",
    )
    p.add_argument(
        "--look-ahead-scenarios",
        default=None,
        help="scenarios of the look-ahead episodes (default: --scenarios)",
    )
    p.add_argument(
        "--look-ahead-rounds",
        type=int,
        default=1,
        help="look-ahead rounds: each plays the last fit and fits again on every "
        "round's labels (with --look-ahead-seeds)",
    )
    p.add_argument(
        "--look-ahead-top-k",
        type=int,
        default=3,
        help="candidates tried at each look-ahead state: the model's best-scored",
    )
    p.add_argument(
        "--look-ahead-horizon",
        type=int,
        default=None,
        help="[ticks] of the model's own play after each tried candidate "
        "(default: to the episode's end)",
    )
    p.add_argument("--trees", type=int, default=None, help="boosting rounds")
    p.add_argument(
        "--out", default=None, help="model file (default: the committed one)"
    )
    add_optimum_arguments(p)
    p.add_argument("--no-progress", action="store_true", help="no progress bars")


def run(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from evgrid_core.distilled import MODEL_PATH
    from evgrid_core.trees import save
    from training.dagger import LookAhead, rollout_runs
    from training.distill import DistillConfig, describe, distill
    from training.labels import check_scenarios, label_runs, parse_seeds

    scenarios, seeds = label_jobs(args)
    validation = (
        parse_seeds(args.validation_seeds) if args.validation_seeds else range(0)
    )
    if not set(validation) <= set(seeds):
        raise ValueError("--validation-seeds must lie within --seeds")
    look_seeds = (
        parse_seeds(args.look_ahead_seeds) if args.look_ahead_seeds else range(0)
    )
    if set(look_seeds) & set(validation):
        raise ValueError("--look-ahead-seeds must not overlap --validation-seeds")
    look_scenarios = (
        check_scenarios(args.look_ahead_scenarios.split(","))
        if args.look_ahead_scenarios
        else scenarios
    )
    if not set(look_scenarios) <= set(scenarios):
        raise ValueError("--look-ahead-scenarios must lie within --scenarios")
    if args.look_ahead_rounds < 1:
        raise ValueError("--look-ahead-rounds must be >= 1")
    if args.look_ahead_top_k < 2:
        raise ValueError(
            "--look-ahead-top-k must be >= 2 (one candidate: nothing to try)"
        )
    if args.look_ahead_horizon is not None and args.look_ahead_horizon < 1:
        raise ValueError("--look-ahead-horizon must be >= 1")
    if args.trees is not None and args.trees < 1:
        raise ValueError("--trees must be >= 1")
    out = Path(args.out) if args.out else MODEL_PATH
    if not out.parent.is_dir():
        raise ValueError(f"--out {out}: folder {out.parent} does not exist")
    labels = Path(args.labels)
    label_runs(
        scenarios,
        seeds,
        labels,
        settings=optimum_settings(args),
        workers=args.workers,
        progress=not args.no_progress,
    )
    cfg = DistillConfig()
    if args.trees is not None:
        cfg = replace(cfg, n_trees=args.trees)

    def fit(look_ahead_dirs: list[Path]) -> tuple:
        return distill(labels, cfg, scenarios=scenarios, seeds=seeds,
                       validation_seeds=validation, look_ahead_dirs=look_ahead_dirs,
                       look_ahead_seeds=look_seeds, progress=not args.no_progress)  # fmt: skip

    model, report = fit([])
    look_dirs: list[Path] = []
    for i in range(args.look_ahead_rounds if look_seeds else 0):
        # Round i+1 plays the last fit; its file names it in the labels folder.
        look_dir = labels / f"look-ahead-{i + 1}"
        look_dir.mkdir(parents=True, exist_ok=True)
        played = look_dir / "model-played.json"
        save(model, played)
        print(describe(report))
        rollout_runs(
            look_scenarios,
            look_seeds,
            look_dir,
            played,
            LookAhead(
                top_k=args.look_ahead_top_k, horizon_ticks=args.look_ahead_horizon
            ),
            workers=args.workers,
            progress=not args.no_progress,
        )
        look_dirs.append(look_dir)
        model, report = fit(look_dirs)
    save(model, out)
    print(describe(report))
    print(f"wrote {out} ({out.stat().st_size / 1e6:.2f} MB, {len(model.roots)} trees)")
    return 0
