"""Issue 34 item 6: the side-by-side replay (``main.py --policy A --versus B``).

Both halves are the single-policy recordings of that size, frame for frame; the
MP4 decodes; the strip's counters are the core's KPIs; the fault is marked on
the timeline and on its feeder's MW trace, exactly over its window."""

import os
import subprocess
import sys
from pathlib import Path

os.environ.setdefault("SDL_VIDEODRIVER", "dummy")

import imageio_ffmpeg  # noqa: E402
import numpy as np  # noqa: E402
import pygame  # noqa: E402
import pytest  # noqa: E402

from evgrid_render import theme  # noqa: E402
from evgrid_render.controller import Controller  # noqa: E402
from evgrid_render.recorder import film  # noqa: E402
from evgrid_render.versus import Versus, counters  # noqa: E402
from evgrid_render.view import CityView  # noqa: E402
from viz.app import parse_args  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
HALF = (800, 500)
POLICIES = ("distilled", "greedy_eta")


@pytest.fixture(scope="module")
def display():
    pygame.display.init()
    pygame.font.init()
    pygame.display.set_mode((1, 1))
    yield
    pygame.display.quit()


class Frames:
    """A recorder that keeps the frames as arrays (what ``Recorder.add`` sends)."""

    def __init__(self):
        self.frames = []

    def add(self, surface):
        self.frames.append(pygame.surfarray.array3d(surface).swapaxes(0, 1).copy())


def _single(policy, frames, fpt):
    ctrl = Controller("feeder_fault", 3, policy, threaded=False)
    view = CityView(ctrl, HALF)
    rec = Frames()
    film(ctrl, view, pygame.Surface(HALF), rec, frames, fpt)
    ctrl.close()
    return rec.frames


def test_both_halves_are_the_single_policy_recordings_frame_for_frame(display):
    fpt = 2
    frames = range(5 * fpt, 8 * fpt)  # ticks 5-7: the fault starts at tick 6
    a, b = (Controller("feeder_fault", 3, p, threaded=False) for p in POLICIES)
    versus = Versus(a, b, HALF)
    surf = pygame.Surface(versus.size)
    got = []
    for k in frames:
        versus.render(k * a.tick_minutes / fpt, surf)
        got.append(pygame.surfarray.array3d(surf).swapaxes(0, 1).copy())
        # The clocks in step.
        assert a.display_minute == b.display_minute == k * a.tick_minutes / fpt
    w, h = HALF
    for side, policy in enumerate(POLICIES):
        single = _single(policy, frames, fpt)
        assert len(single) == len(got)
        for k, (full, one) in enumerate(zip(got, single, strict=True)):
            half = full[:h, side * w : (side + 1) * w]
            assert np.array_equal(half, one), (policy, k)
    # The two policies decided differently somewhere: the halves are not copies.
    assert any(not np.array_equal(f[:h, :w], f[:h, w : 2 * w]) for f in got)
    a.close()
    b.close()


def test_the_strip_counts_what_the_core_counts_and_marks_the_fault(display):
    a, b = (Controller("feeder_fault", 3, p, threaded=False) for p in POLICIES)
    versus = Versus(a, b, HALF)
    surf = pygame.Surface(versus.size)
    fault = next(e for e in a.events if e.kind == "fault")
    tm = a.tick_minutes
    versus.render(20 * tm, surf)  # 18:40, mid-fault
    for ctrl, text in zip((a, b), versus.counter_text, strict=True):
        k = ctrl.env.kpi_summary()
        lost, over, mwh = counters(ctrl)
        assert lost == k["stranded"] and over == k["overload_feeder_min"]
        assert f"EVs lost {k['stranded']}" in text
        assert f"delivered {k['energy_kwh'] / 1000:.2f} MWh" in text
        assert text.startswith(ctrl.policy_name)
    px = pygame.surfarray.array3d(surf)

    def event_columns(rect):
        cols = np.all(
            px[rect.left : rect.right, rect.top : rect.bottom] == theme.EVENT, -1
        )
        return {rect.left + i for i in np.flatnonzero(cols.any(axis=1))}

    # The timeline: the fault's window and nothing outside the events' windows.
    line = versus.timeline
    marked = event_columns(line)
    x0 = versus.x_of(line, fault.start_tick * tm)
    x1 = versus.x_of(line, fault.end_tick * tm)
    assert marked and min(marked) >= x0 - 1 and max(marked) <= x1 + 1
    assert {round(x0) + 2, round((x0 + x1) / 2), round(x1) - 2} <= marked
    # The MW traces: F3's limit drops in the event colour from the fault's start
    # to now; no other feeder has an event limit.
    f3 = event_columns(versus.feeder_rects[3])
    assert (
        f3 and min(f3) >= versus.x_of(versus.feeder_rects[3], fault.start_tick * tm) - 1
    )
    for fid in (1, 2, 4, 5, 6):
        assert not event_columns(versus.feeder_rects[fid])
    a.close()
    b.close()


def test_versus_options():
    args = parse_args(["--versus", "greedy_eta", "--policy", "distilled"])
    assert args.versus == "greedy_eta"
    assert parse_args([]).versus is None
    with pytest.raises(SystemExit):
        parse_args(["--versus", "greedy_eta", "--manual"])


def _decode(path):
    reader = imageio_ffmpeg.read_frames(str(path))
    meta = next(reader)
    w, h = meta["size"]
    return [np.frombuffer(f, np.uint8).reshape(h, w, 3) for f in reader]


def _main(*argv):
    env = dict(os.environ)
    env.pop("DISPLAY", None)
    env.pop("WAYLAND_DISPLAY", None)
    return subprocess.run(
        [sys.executable, "main.py", *argv],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_one_command_records_the_side_by_side_mp4_and_it_decodes(tmp_path):
    common = ["--scenario", "feeder_fault", "--seed", "3", "--size", "800x500"]
    common += ["--start-tick", "5", "--ticks", "2", "--frames-per-tick", "3"]
    vs = tmp_path / "vs.mp4"
    res = _main(
        *common, "--policy", POLICIES[0], "--versus", POLICIES[1], "--record", str(vs)
    )
    assert res.returncode == 0, res.stderr
    assert "recorded 6 frames (2 ticks" in res.stdout
    frames = _decode(vs)
    assert len(frames) == 6
    w, h = HALF
    assert frames[0].shape[1] == 2 * w and frames[0].shape[0] > h  # + the strip
    for side, policy in enumerate(POLICIES):
        one = tmp_path / f"{policy}.mp4"
        res = _main(*common, "--policy", policy, "--record", str(one))
        assert res.returncode == 0, res.stderr
        single = _decode(one)
        assert len(single) == len(frames)
        for k, (full, s) in enumerate(zip(frames, single, strict=True)):
            half = full[:h, side * w : (side + 1) * w].astype(int)
            # Two H.264 encodes of the same pixels: equal up to the codec's loss,
            # far below the difference between the two policies' frames.
            assert np.abs(half - s.astype(int)).mean() < 2.0, (policy, k)


def test_an_unknown_versus_policy_is_a_one_line_error(tmp_path, capsys):
    from viz.app import main

    out = tmp_path / "x.mp4"
    assert main(["--versus", "nope", "--ticks", "1", "--record", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "unknown policy 'nope'" in err[0]
    assert not out.exists()
