"""The city view runs the Oracle without freezing: a real window under Xvfb, the real
tiny GGUF through ``main.py --policy oracle --model PATH``, every model call slowed to
6 s (long enough to look at the screen twice on a busy machine). While a call is in
flight the window still takes a key and redraws.

Needs Xvfb, xdotool and ImageMagick (installed by scripts/setup.d/20-viz.sh).
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from xvfb_helpers import IMPORT, focus_app_window, needs_x11, window_env
from xvfb_helpers import run_x as _x
from xvfb_helpers import wait_for as _wait_for

ROOT = Path(__file__).resolve().parents[2]

pytestmark = needs_x11

# Runs main.py with llama_cpp.Llama.create_completion slowed down; a marker file holds
# the number of the call in flight and exists only while a call is in flight.
WRAPPER = r"""
import atexit, os, runpy, sys, time
import llama_cpp

marker, delay = sys.argv[1], float(sys.argv[2])
original = llama_cpp.Llama.create_completion
calls = 0

def slow(self, *args, **kwargs):
    global calls
    calls += 1
    with open(marker, "w") as f:
        f.write(str(calls))
    time.sleep(delay)
    try:
        return original(self, *args, **kwargs)
    finally:
        os.unlink(marker)

llama_cpp.Llama.create_completion = slow
atexit.register(lambda: print(f"oracle calls: {calls}", flush=True))
sys.argv = ["main.py", *sys.argv[3:]]
runpy.run_path("main.py", run_name="__main__")
"""


def test_window_stays_responsive_while_the_oracle_decides(
    llama_cpp, tiny_gguf, display, tmp_path
) -> None:
    import pygame

    marker = tmp_path / "in_flight"
    env = window_env(display, EVGRID_ORACLE_THREADS="1")
    cmd = [sys.executable, "-c", WRAPPER, str(marker), "6"]
    cmd += ["--policy", "oracle", "--model", str(tiny_gguf), "--speed", "4"]
    app = subprocess.Popen(
        cmd,
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wid = focus_app_window(display, timeout=60)
        # Catch a decision in flight, then press a key and look at the screen.
        assert _wait_for(marker.exists, 30), "the Oracle was never asked"
        call = marker.read_text()
        before = tmp_path / "before.png"
        _x(display, IMPORT, "-window", "root", str(before))
        _x(display, "xdotool", "key", "--window", wid, "h")  # help overlay
        time.sleep(0.6)
        after = tmp_path / "after.png"
        _x(display, IMPORT, "-window", "root", str(after))
        still_pending = marker.exists() and marker.read_text() == call
        a, b = pygame.image.load(str(before)), pygame.image.load(str(after))
        box = pygame.Rect(230, 220, 400, 280)  # the help box, centred on the map
        changed = sum(
            a.get_at((x, y)) != b.get_at((x, y))
            for x in range(box.left, box.right, 8)
            for y in range(box.top, box.bottom, 8)
        )
        assert still_pending, "the decision finished before the screen was checked"
        assert changed > 200, changed  # the key was handled and the frame redrawn
        # Decisions go on arriving: a later call starts.
        assert _wait_for(lambda: marker.exists() and marker.read_text() != call, 20)
        _x(display, "xdotool", "key", "--window", wid, "q")
        out, err = app.communicate(timeout=30)
    finally:
        if app.poll() is None:
            app.kill()
            app.wait(10)
    assert app.returncode == 0, err[-2000:]
    calls = [ln for ln in out.splitlines() if ln.startswith("oracle calls: ")]
    assert calls and int(calls[0].split(": ")[1]) >= 2, out[-500:]
