"""The training pipeline's command: ``python3 -m training`` and ``evgrid train``.

Arguments and run live here, beside the pipeline they drive; ``evgrid train``
(``evgrid_cli/cmd_train.py``) delegates to them. Light to import: the pipeline
loads inside ``run``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys

HELP = "train the Oracle (SFT + GRPO, export GGUF) from a TOML preset or file"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--config",
        default="cpu-smoke",
        help="preset name (cpu-smoke, gpu-small, colab-t4-qwen3b) or a TOML file",
    )
    p.add_argument(
        "--stages",
        default="data,sft,grpo,export,eval",
        help="comma-separated stages to run (default: all)",
    )
    p.add_argument("--output-dir", default=None, help="override output_dir")
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="print the resolved plan and config, train nothing",
    )


def run(args: argparse.Namespace) -> int:
    from training.config import load_config
    from training.pipeline import STAGES, plan

    cfg = load_config(args.config)
    if args.output_dir:
        cfg = dataclasses.replace(cfg, output_dir=args.output_dir)
    stages = tuple(s.strip() for s in args.stages.split(",") if s.strip())
    bad = [s for s in stages if s not in STAGES]
    if bad:
        raise ValueError(f"unknown stage(s) {bad}; stages are {', '.join(STAGES)}")
    print(f"evgrid train: preset {cfg.name}")
    for line in plan(cfg, stages):
        print("  " + line)
    if args.dry_run:
        print(json.dumps(dataclasses.asdict(cfg), indent=2))
        return 0
    from training.pipeline import run as run_pipeline

    summary = run_pipeline(cfg, stages)
    return 0 if summary else 1


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
    except ValueError as e:
        print(f"{parser.prog}: error: {e}", file=sys.stderr)
        return 2
