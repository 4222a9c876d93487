"""City view frame rate at the default scenario's busiest tick (prints figures).

    python3 bench/viz_fps.py [--size 1280x720] [--frames 600] [--policy greedy_eta]

"Busiest" = the tick with the most EVs in the system (pending, travelling,
queued, charging). Drawing only: the full frame (map, stations, EVs interpolated
along their routes, panel) into the offscreen display surface. Recording: the
same plus the RGB grab and H.264 encoding through imageio-ffmpeg (ffmpeg runs
in its own process, in parallel). Every frame is also flipped to the display:
offscreen without ``DISPLAY``, a real X window with it (e.g. under Xvfb).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
if not os.environ.get("DISPLAY"):
    os.environ.setdefault(
        "SDL_VIDEODRIVER", "dummy"
    )  # offscreen; with DISPLAY: a window
os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")

import pygame  # noqa: E402

from evgrid_core import DEFAULT_SCENARIO  # noqa: E402
from evgrid_render.controller import Controller  # noqa: E402
from evgrid_render.recorder import Recorder  # noqa: E402
from evgrid_render.view import CityView  # noqa: E402


def busiest(policy: str, seed: int) -> tuple[int, int]:
    """(steps, EVs) at the decision point with the most EVs in the system."""
    ctrl = Controller(DEFAULT_SCENARIO, seed, policy, threaded=False)
    best = (0, len(ctrl.state["evs"]))
    while not ctrl.done:
        ctrl.display_minute = ctrl.env_minute
        ctrl.poll(block=True)
        n = len(ctrl.state["evs"]) if not ctrl.done else 0
        if n > best[1]:
            best = (ctrl.env.steps, n)
    ctrl.close()
    return best


def at_step(policy: str, seed: int, steps: int) -> Controller:
    ctrl = Controller(DEFAULT_SCENARIO, seed, policy, threaded=False)
    while ctrl.env.steps < steps:
        ctrl.display_minute = ctrl.env_minute
        ctrl.poll(block=False)
    return ctrl


def run(view: CityView, ctrl: Controller, screen, frames: int, rec=None) -> float:  # noqa: ANN001
    """Frames per second over ``frames`` frames sweeping the last tick's animation."""
    end = ctrl.env_minute
    start = max(0.0, end - ctrl.tick_minutes)
    t0 = time.perf_counter()
    for i in range(frames):
        ctrl.display_minute = start + (end - start) * (i % 30) / 30
        view.render(screen)
        if rec is not None:
            rec.add(screen)
        pygame.display.flip()
        pygame.event.pump()
    if rec is not None:
        rec.close()
    return frames / (time.perf_counter() - t0)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size", default="1280x720")
    p.add_argument("--frames", type=int, default=600)
    p.add_argument("--policy", default="greedy_eta")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    size = tuple(int(v) for v in args.size.split("x"))
    pygame.display.init()
    pygame.font.init()
    screen = pygame.display.set_mode(size)
    steps, n_evs = busiest(args.policy, args.seed)
    ctrl = at_step(args.policy, args.seed, steps)
    view = CityView(ctrl, size)
    travelling = sum(e["status"] == "traveling" for e in ctrl.state["evs"])
    print(
        f"scenario {DEFAULT_SCENARIO} seed {args.seed} policy {args.policy}: busiest at "
        f"{ctrl.state['clock']} (tick {ctrl.state['tick']}), {n_evs} EVs in the system, "
        f"{travelling} on the road; {size[0]}x{size[1]}, {os.cpu_count()} CPUs, "
        f"SDL driver {pygame.display.get_driver()}"
    )
    run(view, ctrl, screen, 60)  # warm caches (text, sprites, routes)
    draw = run(view, ctrl, screen, args.frames)
    print(f"drawing only:      {draw:7.1f} frames/s")
    with tempfile.TemporaryDirectory() as tmp:
        rec = Recorder(Path(tmp) / "bench.mp4", size, fps=30)
        recording = run(view, ctrl, screen, args.frames, rec)
        mb = (Path(tmp) / "bench.mp4").stat().st_size / 1e6
    print(
        f"while recording:   {recording:7.1f} frames/s  "
        f"({recording / 30:.1f}x real time at 30 fps; {mb:.2f} MB for {args.frames} frames)"
    )
    ctrl.close()


if __name__ == "__main__":
    main()
