"""``python3 main.py --policy A --versus B``: both policies on one scenario and
seed, side by side in one MP4 (``evgrid_render.versus``), always offscreen."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def record_versus(args: argparse.Namespace) -> int:
    """``--versus``: both policies on the same scenario and seed, side by side,
    their clocks in step, into one MP4 (``evgrid_render.versus``)."""
    import pygame
    from tqdm import tqdm

    from evgrid_render.controller import Controller
    from evgrid_render.recorder import Recorder, default_path, skip_to_tick
    from evgrid_render.versus import Versus, film_versus

    ctrls = []
    try:
        for name in (args.policy, args.versus):
            ctrls.append(
                Controller(args.scenario, args.seed, name, args.model, grid=args.grid)
            )
    except ValueError as e:
        for c in ctrls:
            c.close()
        print(f"main.py: error: {e}", file=sys.stderr)
        return 2
    pygame.font.init()
    pygame.display.init()
    try:
        pygame.display.set_mode((1, 1))
        versus = Versus(ctrls[0], ctrls[1], args.size)
        surface = pygame.Surface(versus.size)
        total = ctrls[0].env.scenario.n_ticks
        first = min(args.start_tick, total - 1)
        n_ticks = (
            total - first if args.ticks is None else min(args.ticks, total - first)
        )
        for c in ctrls:
            skip_to_tick(c, first)
        path = (
            Path(args.record)
            if args.record
            else default_path(
                args.scenario, f"{args.policy}_vs_{args.versus}", args.seed
            )
        )
        rec = Recorder(path, versus.size, fps=args.fps)
        offset = first * args.frames_per_tick
        frames = range(offset, offset + n_ticks * args.frames_per_tick)
        try:
            film_versus(
                versus,
                surface,
                rec,
                tqdm(frames, desc="recording", unit="frame", file=sys.stderr),
                args.frames_per_tick,
                after_frame=pygame.event.pump,
            )
        finally:
            rec.close()
        if args.screenshot:
            pygame.image.save(surface, args.screenshot)
            print(f"screenshot: {args.screenshot}")
        w, h = versus.size
        print(
            f"recorded {rec.frames} frames ({n_ticks} ticks, {rec.frames / args.fps:.1f} s "
            f"at {args.fps} fps, {w}x{h}): {path.resolve()}"
        )
        for line in versus.counter_text:
            print(line)
        return 0
    finally:
        for c in ctrls:
            c.close()
        pygame.quit()
