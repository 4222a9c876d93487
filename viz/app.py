"""``python3 main.py``: the live window, or offscreen recording when headless.

Live: the display clock follows the wall clock (``--speed`` ticks per second).
Recording (``--record``, or no display): exactly ``--frames-per-tick`` frames per
simulated tick, each rendered from simulation time, so a loaded machine writes
the same video. The policy decides in a worker thread either way.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")
os.environ.setdefault("SDL_VIDEO_X11_WMCLASS", "ev-grid-oracle")
os.environ.setdefault("SDL_AUDIODRIVER", "dummy")

WINDOW_TITLE = "EV Grid Oracle — Bengaluru"
OFFSCREEN_DRIVERS = ("dummy", "offscreen", "evdev")  # SDL drivers that show nothing
SPEEDS = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0)  # [ticks per second] live


# --- Arguments ----------------------------------------------------------------------
def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    from evgrid_core import DEFAULT_SCENARIO, SCENARIOS
    from evgrid_core.grid import grid_model_factory
    from evgrid_core.policies import policy_names

    p = argparse.ArgumentParser(
        prog="main.py",
        description="EV Grid Oracle city view: Bengaluru's stations, feeders and EVs, live or recorded.",
    )
    p.add_argument("--scenario", default=DEFAULT_SCENARIO, choices=sorted(SCENARIOS))
    p.add_argument(
        "--policy",
        default="greedy_eta",
        help=f"one of: {', '.join(policy_names())}",
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--grid",
        default="feeder_sum",
        metavar="NAME",
        help="grid model: feeder_sum, lindistflow or ac (voltages and transformers)",
    )
    p.add_argument(
        "--model",
        default=None,
        metavar="PATH",
        help="oracle: a GGUF to use instead of the shipped trained Oracle",
    )
    p.add_argument("--size", default="1280x720", help="window / video size WxH [px]")
    p.add_argument(
        "--record",
        nargs="?",
        const="",
        default=None,
        metavar="PATH",
        help="write an MP4 (default: recordings/<scenario>_<policy>_seed<N>_<time>.mp4)",
    )
    p.add_argument(
        "--ticks",
        type=int,
        default=None,
        help="stop after N ticks (recording: default the whole episode)",
    )
    p.add_argument(
        "--start-tick",
        type=int,
        default=0,
        help="recording: decide the first N ticks without filming them",
    )
    p.add_argument("--fps", type=int, default=30, help="video frames per second")
    p.add_argument(
        "--frames-per-tick", type=int, default=10, help="video frames per 5-minute tick"
    )
    p.add_argument("--speed", type=float, default=1.0, help="live: ticks per second")
    p.add_argument(
        "--headless",
        action="store_true",
        help="render offscreen (and record) even with a display",
    )
    p.add_argument(
        "--screenshot",
        default=None,
        metavar="PATH",
        help="also save the last frame as PNG",
    )
    p.add_argument("--manual", action="store_true", help="start in manual control")
    p.add_argument(
        "--versus",
        default=None,
        metavar="POLICY",
        help="record --policy and POLICY side by side on the same scenario and seed "
        "into one MP4 (each half --size; feeder MW traces, events, counters below)",
    )
    args = p.parse_args(argv)
    try:
        w, h = (int(v) for v in args.size.lower().split("x"))
    except ValueError:
        p.error(f"--size must be WxH, got {args.size!r}")
    if w < 800 or h < 500:
        p.error("--size must be at least 800x500")
    args.size = (w, h)
    try:
        grid_model_factory(args.grid)  # an unknown model: a one-line error, no window
    except ValueError as e:
        p.error(f"--grid: {e}")
    if args.frames_per_tick < 1 or args.fps < 1:
        p.error("--fps and --frames-per-tick must be >= 1")
    if args.start_tick < 0:
        p.error("--start-tick must be >= 0")
    if args.ticks is not None and args.ticks < 1:
        p.error("--ticks must be >= 1")
    if args.versus is not None and args.manual:
        p.error("--versus records two policies: it takes no --manual")
    if args.record:
        problem = output_problem(Path(args.record), ".mp4")
        if problem:
            p.error(f"--record {args.record}: {problem}")
    if args.screenshot:
        problem = output_problem(Path(args.screenshot), ".png")
        if problem:
            p.error(f"--screenshot {args.screenshot}: {problem}")
    return args


def output_problem(path: Path, suffix: str) -> str | None:
    """Why ``path`` cannot take the file we would write, or None.

    Checked before any work, so a bad path is a one-line error rather than a
    traceback at the end. Folders are never created here: the recorder makes
    only its own ``recordings/`` (the default location).
    """
    if path.suffix.lower() != suffix:
        return f"the file must end in {suffix} (got {path.suffix or 'no extension'!r})"
    parent = path.parent
    if not parent.exists():
        return f"the folder {parent} does not exist (create it first)"
    if not parent.is_dir():
        return f"{parent} is not a folder"
    if path.is_dir():
        return "that is a folder, not a file"
    existed = path.exists()
    try:
        with open(path, "ab"):
            pass
    except OSError as e:
        return f"cannot write there ({e.strerror or e})"
    if not existed:
        path.unlink()
    return None


def display_available() -> bool:
    """Is there a screen to open a window on?"""
    if os.environ.get("SDL_VIDEODRIVER", "") in ("dummy", "offscreen"):
        return False
    if sys.platform.startswith("linux"):
        return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))
    return True


# --- Entry --------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    headless = args.headless or not display_available() or args.versus is not None
    if headless:
        os.environ["SDL_VIDEODRIVER"] = "dummy"
    import pygame

    if args.versus is not None:  # a recording, never a window
        from viz.replay import record_versus

        return record_versus(args)

    from evgrid_render.controller import Controller

    try:
        ctrl = Controller(
            args.scenario, args.seed, args.policy, args.model, grid=args.grid
        )
    except ValueError as e:
        print(f"main.py: error: {e}", file=sys.stderr)
        return 2
    pygame.font.init()
    try:
        screen = None
        if not headless:
            try:
                pygame.display.init()
                driver = pygame.display.get_driver()
                if driver in OFFSCREEN_DRIVERS:  # SDL found no screen either
                    raise pygame.error(f"SDL fell back to the {driver} driver")
                screen = pygame.display.set_mode(args.size, pygame.RESIZABLE)
            except pygame.error as e:
                print(f"No usable display ({e}).", file=sys.stderr)
                pygame.display.quit()
                os.environ["SDL_VIDEODRIVER"] = "dummy"
        if screen is None:
            pygame.display.init()
            if args.record is None:
                args.record = ""
                print(
                    "No display: rendering offscreen and recording an MP4.",
                    file=sys.stderr,
                )
            return record(ctrl, args)
        pygame.display.set_caption(WINDOW_TITLE)
        return live(ctrl, args, screen)
    finally:
        ctrl.close()
        pygame.quit()


def _record_path(ctrl, arg: str | None) -> Path:  # noqa: ANN001
    from evgrid_render.recorder import default_path

    return (
        Path(arg) if arg else default_path(ctrl.scenario, ctrl.policy_name, ctrl.seed)
    )


# --- Offscreen recording -------------------------------------------------------------
# [s] the Oracle recording one 48-tick feeder_fault episode on the dev machine
# (issue 34): its language model decides every EV, so it films far slower.
ORACLE_EPISODE_S, ORACLE_FIRST_FRAME_S = 115.0, 6.0


def oracle_heads_up() -> str:
    """One line before the Oracle's recording starts: how long one took."""
    return (
        "heads-up: the Oracle asks its language model at every decision: recording a "
        f"48-tick episode took ~{ORACLE_EPISODE_S / 60:.0f} min on the dev machine "
        f"(first frame after ~{ORACLE_FIRST_FRAME_S:.0f} s)"
    )


def record(ctrl, args: argparse.Namespace) -> int:  # noqa: ANN001
    """Render ``ticks x frames_per_tick`` frames from simulation time into an MP4."""
    import pygame
    from tqdm import tqdm

    from evgrid_render.recorder import Recorder, film, skip_to_tick
    from evgrid_render.view import CityView

    screen = pygame.display.set_mode(args.size)
    ctrl.manual = False
    view = CityView(ctrl, args.size)
    total = ctrl.env.scenario.n_ticks
    first = min(args.start_tick, total - 1)
    n_ticks = total - first if args.ticks is None else min(args.ticks, total - first)
    n_frames = n_ticks * args.frames_per_tick
    if ctrl.policy_name == "oracle":
        print(oracle_heads_up(), file=sys.stderr, flush=True)
    skip_to_tick(ctrl, first)  # decide, unfilmed, up to the start
    offset = first * args.frames_per_tick
    path = _record_path(ctrl, args.record)
    rec = Recorder(path, args.size, fps=args.fps)
    frames = range(offset, offset + n_frames)
    try:
        film(
            ctrl,
            view,
            screen,
            rec,
            tqdm(frames, desc="recording", unit="frame", file=sys.stderr),
            args.frames_per_tick,
            after_frame=pygame.event.pump,
        )
    finally:
        rec.close()
    if args.screenshot:
        pygame.image.save(screen, args.screenshot)
        print(f"screenshot: {args.screenshot}")
    secs = rec.frames / args.fps
    print(
        f"recorded {rec.frames} frames ({n_ticks} ticks, {secs:.1f} s at {args.fps} fps): {path.resolve()}"
    )
    return 0


# --- Live window -------------------------------------------------------------------------
def live(ctrl, args: argparse.Namespace, screen) -> int:  # noqa: ANN001
    import pygame

    from evgrid_render.recorder import Recorder
    from evgrid_render.view import CityView

    view = CityView(ctrl, args.size)
    view.flags.speed = args.speed
    ctrl.set_manual(args.manual)
    rec: Recorder | None = None
    rec_frame = 0
    sub = ctrl.tick_minutes / args.frames_per_tick
    clock = pygame.time.Clock()
    stop_minute = None if args.ticks is None else args.ticks * ctrl.tick_minutes

    def toggle_record() -> None:
        nonlocal rec, rec_frame
        if rec is None:
            rec = Recorder(
                _record_path(ctrl, args.record), screen.get_size(), fps=args.fps
            )
            rec_frame = int(round(ctrl.display_minute / sub))
            ctrl.display_minute = rec_frame * sub
            ctrl.message = f"recording to {rec.path.name}"
        else:
            path = rec.close()
            ctrl.message = f"saved {rec.frames} frames: {path}"
            print(f"recorded {rec.frames} frames: {path.resolve()}")
            rec = None
        view.flags.recording = rec is not None

    if args.record is not None:
        toggle_record()
    running = True
    while running:
        dt = clock.tick(60) / 1000.0  # [s] frame cap: 60 fps
        for event in pygame.event.get():
            if event.type == pygame.QUIT:
                running = False
            elif event.type == pygame.VIDEORESIZE and rec is None:
                size = (max(800, event.w), max(500, event.h))
                screen = pygame.display.set_mode(size, pygame.RESIZABLE)
                selected = view.flags
                view = CityView(ctrl, size)
                view.flags = selected
            elif event.type == pygame.MOUSEBUTTONDOWN and event.button == 1:
                view.click(event.pos)
            elif event.type == pygame.KEYDOWN:
                command = handle_key(event.key, ctrl, view)
                if command == "quit":
                    running = False
                elif command == "record":
                    toggle_record()
                elif command == "screenshot":
                    path = _record_path(ctrl, None).with_suffix(".png")
                    path.parent.mkdir(parents=True, exist_ok=True)
                    pygame.image.save(screen, str(path))
                    ctrl.message = f"screenshot: {path.name}"
                    print(f"screenshot: {path.resolve()}")
        if rec is None:
            ctrl.advance_display(
                dt * view.flags.speed * ctrl.tick_minutes if not ctrl.paused else 0.0
            )
            ctrl.poll()
            view.render(screen)
        else:  # frame-exact: one frame per sub-step once the tick's decisions are made
            ctrl.poll()
            waiting = ctrl.caught_up and not ctrl.done
            view.render(screen)
            if (
                not waiting
                and not ctrl.paused
                and ctrl.display_minute < ctrl.end_minute
            ):
                rec.add(screen)
                rec_frame += 1
                ctrl.display_minute = min(rec_frame * sub, ctrl.end_minute)
        view.flags.fps = clock.get_fps()
        pygame.display.flip()
        if stop_minute is not None and ctrl.display_minute >= min(
            stop_minute, ctrl.end_minute
        ):
            running = False
    if rec is not None:
        toggle_record()
    return 0


def handle_key(key: int, ctrl, view) -> str | None:  # noqa: ANN001
    """Apply one key press; returns "quit", "record" or "screenshot" for the loop."""
    import pygame

    k = pygame
    if key in (k.K_q, k.K_ESCAPE):
        return "quit"
    if key == k.K_r:
        return "record"
    if key == k.K_s:
        return "screenshot"
    if key in (k.K_h, k.K_F1):
        view.flags.help = not view.flags.help
    elif key == k.K_w:
        view.flags.why = not view.flags.why
    elif key == k.K_SPACE:
        ctrl.toggle_pause()
    elif key == k.K_n:
        ctrl.step_once()
    elif key in (k.K_PLUS, k.K_EQUALS, k.K_KP_PLUS):
        view.flags.speed = next((s for s in SPEEDS if s > view.flags.speed), SPEEDS[-1])
    elif key in (k.K_MINUS, k.K_KP_MINUS):
        view.flags.speed = next(
            (s for s in reversed(SPEEDS) if s < view.flags.speed), SPEEDS[0]
        )
    elif key == k.K_p:
        ctrl.cycle_policy()
    elif key == k.K_m:
        ctrl.set_manual(not ctrl.manual)
    elif ctrl.manual:
        manual = {
            k.K_a: "verb",
            k.K_TAB: "ev",
            k.K_DOWN: "station+",
            k.K_UP: "station-",
            k.K_RIGHT: "value+",
            k.K_LEFT: "value-",
            k.K_RIGHTBRACKET: "value2+",
            k.K_LEFTBRACKET: "value2-",
        }
        if key in manual:
            ctrl.manual_key(manual[key])
        elif key in (k.K_RETURN, k.K_KP_ENTER):
            ctrl.manual_submit()
    return None
