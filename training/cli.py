"""The training chain's command: ``evgrid train`` and ``python3 -m training``.

Arguments and run live here, beside the chain they drive (``training/chain.py``:
labels -> distill -> sft -> grpo -> ship); ``evgrid train``
(``evgrid_cli/cmd_train.py``) delegates to them. Light to import: the chain's
stages load inside ``run``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from pathlib import Path

from evgrid_core.optional import DependencyNotInstalled

HELP = (
    "train the Oracle end to end (optimum labels -> distilled -> SFT -> GRPO -> ship) "
    "from a TOML preset; resumable"
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--config",
        default="cpu-smollm2",
        help="preset name (cpu-smollm2: the shipped recipe; gpu-smollm2, "
        "colab-t4-qwen1.5b on CUDA) or a TOML file",
    )
    p.add_argument(
        "--stages",
        default="labels,distill,sft,grpo,ship",
        help="comma-separated stages to run, in order (default: all)",
    )
    p.add_argument("--out", default=None, help="run folder (overrides output_dir)")
    p.add_argument(
        "--labels",
        default=None,
        help="optimum labels folder to use and extend (default: <out>/labels; "
        "`tar xzf training/data/optimum-labels.tgz -C runs/` gives the shipped run's "
        "in runs/labels)",
    )
    p.add_argument(
        "--ship-to",
        default=None,
        help="where the GGUF adapter and TRAINING.md go (default: <out>/ship; "
        "oracle/weights replaces the shipped Oracle)",
    )
    p.add_argument(
        "--set",
        action="append",
        metavar="KEY=VALUE",
        help="override one preset key (section.field=TOML value, e.g. grpo.steps=0); "
        "repeatable",
    )
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="print the plan and the resolved config, train nothing",
    )


def run(args: argparse.Namespace) -> int:
    from training.chain import STAGES, paths, plan
    from training.config import resolve_config_path
    from training.oracle_sft import config_with_overrides

    cfg = config_with_overrides(args.config, args.set)
    if args.out:
        cfg = dataclasses.replace(cfg, output_dir=args.out)
    stages = tuple(s.strip() for s in args.stages.split(",") if s.strip())
    bad = [s for s in stages if s not in STAGES]
    if bad or not stages:
        raise ValueError(f"unknown stage(s) {bad}; stages are {', '.join(STAGES)}")
    where = paths(
        cfg,
        Path(args.labels).resolve() if args.labels else None,
        Path(args.ship_to).resolve() if args.ship_to else None,
    )
    print(f"evgrid train: preset {cfg.name}")
    for line in plan(cfg, stages, where):
        print("  " + line)
    if args.dry_run:
        print(json.dumps(dataclasses.asdict(cfg), indent=2))
        return 0
    # torch's OpenMP threads spin while they wait for each other; on a CPU shared
    # with other work that costs 5-10x. Must be set before torch loads.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    from training.chain import run as run_chain

    run_chain(cfg, stages, where, resolve_config_path(args.config),
              log=lambda m: print(m, file=sys.stderr, flush=True))  # fmt: skip
    print(f"evgrid train: done; the run's record: {where.out / 'chain.json'}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """``python3 -m training``: bad input is one line on stderr and status 2, as
    under ``evgrid``."""
    parser = argparse.ArgumentParser(prog="python3 -m training", description=HELP)
    add_arguments(parser)
    args = parser.parse_args(argv)
    try:
        return run(args)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except (ValueError, DependencyNotInstalled) as e:
        print(f"{parser.prog}: error: {e}", file=sys.stderr)
        return 2
