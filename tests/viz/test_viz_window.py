"""A real window under Xvfb: keys sent with xdotool reach main.py; the screen shows it.

Needs Xvfb, xdotool and ImageMagick (``bash scripts/setup.sh test`` installs them).
"""

import subprocess
import sys
import time
from pathlib import Path

import pygame
from xvfb_helpers import IMPORT, focus_app_window, needs_x11, window_env
from xvfb_helpers import run_x as _x

ROOT = Path(__file__).resolve().parents[2]

pytestmark = needs_x11


def _shot(display, path):
    _x(display, IMPORT, "-window", "root", str(path))
    return pygame.image.load(str(path))


def test_real_window_takes_keys_and_shows_the_city(display, tmp_path):
    env = window_env(display)
    app = subprocess.Popen(
        [sys.executable, "main.py", "--speed", "2"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wid = focus_app_window(display)
        time.sleep(1.5)
        _x(display, "xdotool", "key", "--window", wid, "space")  # pause
        time.sleep(0.5)
        before = _shot(display, tmp_path / "before.png")
        assert before.get_size() == (1280, 720)
        # The panel background and the map background are where the view puts them.
        assert tuple(before.get_at((1274, 600)))[:3] == (28, 33, 44)  # panel
        _x(display, "xdotool", "key", "--window", wid, "h")  # help overlay on
        time.sleep(0.7)
        after = _shot(display, tmp_path / "after.png")
        box = pygame.Rect(230, 220, 400, 280)  # the help box, centred on the map
        changed = sum(
            before.get_at((x, y)) != after.get_at((x, y))
            for x in range(box.left, box.right, 8)
            for y in range(box.top, box.bottom, 8)
        )
        assert changed > 200, changed
        _x(display, "xdotool", "key", "--window", wid, "s")  # the app's own screenshot
        time.sleep(0.7)
        _x(display, "xdotool", "key", "--window", wid, "q")
        out, err = app.communicate(timeout=20)
    finally:
        if app.poll() is None:
            app.kill()
            app.wait(10)
    assert app.returncode == 0, err
    shots = [
        ln.split(": ", 1)[1] for ln in out.splitlines() if ln.startswith("screenshot: ")
    ]
    assert len(shots) == 1, out
    try:
        img = pygame.image.load(shots[0])
        assert img.get_size() == (1280, 720)
    finally:
        Path(shots[0]).unlink(missing_ok=True)


def test_live_window_recording_is_frame_exact(display, tmp_path):
    """R-style recording from a live window: one frame per sub-step, not per wall tick."""
    import imageio_ffmpeg

    env = window_env(display)
    out = tmp_path / "live.mp4"
    cmd = [sys.executable, "main.py", "--record", str(out), "--ticks", "3"]
    cmd += ["--frames-per-tick", "5", "--size", "800x500"]
    res = subprocess.run(
        cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert res.returncode == 0, res.stderr
    assert "No display" not in res.stderr  # it was a real window
    assert imageio_ffmpeg.count_frames_and_secs(str(out))[0] == 15
