"""Real-window test helpers: a private Xvfb display and X tools run against it.

Needs Xvfb, xdotool and ImageMagick (``bash scripts/setup.sh test`` installs them).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

# ImageMagick's ``import`` from Debian (a stand-in may shadow it elsewhere on PATH).
IMPORT = "/usr/bin/import" if os.path.exists("/usr/bin/import") else "import"
TOOLS = ("Xvfb", "xdotool", IMPORT)
MISSING = [t for t in TOOLS if shutil.which(t) is None]
needs_x11 = pytest.mark.skipif(
    bool(MISSING), reason=f"needs {', '.join(MISSING)} (bash scripts/setup.sh test)"
)


def xvfb_display(tmp_path: Path) -> Iterator[str]:
    """Start Xvfb on a free display (it picks one and says which); yield ':N'."""
    num = tmp_path / "display.num"
    with open(num, "w") as out:
        xvfb = subprocess.Popen(
            [
                "Xvfb",
                "-displayfd",
                "1",
                "-screen",
                "0",
                "1280x720x24",
                "-nolisten",
                "tcp",
            ],
            stdout=out,
            stderr=subprocess.DEVNULL,
        )
    deadline = time.time() + 20
    while time.time() < deadline and not num.read_text().strip():
        time.sleep(0.05)
    assert num.read_text().strip(), "Xvfb did not report a display"
    try:
        yield f":{num.read_text().strip()}"
    finally:
        xvfb.terminate()
        xvfb.wait(10)


def run_x(display: str, *args: str, timeout: float = 20) -> subprocess.CompletedProcess:
    """Run an X tool against ``display`` (raises if it fails)."""
    env = dict(os.environ, DISPLAY=display)
    return subprocess.run(
        args, env=env, capture_output=True, text=True, timeout=timeout, check=True
    )


def wait_for(pred: Callable[[], bool], timeout: float) -> bool:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if pred():
            return True
        time.sleep(0.05)
    return False


WM_CLASS = "ev-grid-oracle"  # main.py's window class (SDL_VIDEO_X11_WMCLASS)


def window_env(display: str, **extra: str) -> dict[str, str]:
    """The environment for main.py in a real window on ``display``."""
    env = dict(os.environ, DISPLAY=display, SDL_VIDEO_X11_WMCLASS=WM_CLASS, **extra)
    env.pop("SDL_VIDEODRIVER", None)  # the tests' default is the offscreen driver
    return env


def focus_app_window(display: str, timeout: float = 20) -> str:
    """Wait for main.py's window, give it the keyboard focus; its window id."""
    wid = run_x(
        display, "xdotool", "search", "--sync", "--classname", WM_CLASS, timeout=timeout
    )
    wid = wid.stdout.split()[0]
    run_x(display, "xdotool", "windowfocus", "--sync", wid)
    return wid
