"""Recording: exact frame counts, determinism, headless fallback, survives a kill."""

import hashlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import imageio_ffmpeg
import numpy as np

ROOT = Path(__file__).resolve().parents[2]


def _headless_env():
    env = dict(os.environ)
    env.pop("DISPLAY", None)
    env.pop("WAYLAND_DISPLAY", None)
    env.pop("SDL_VIDEODRIVER", None)  # main.py must choose offscreen by itself
    return env


def _record_cmd(path, *extra):
    return [
        sys.executable,
        "main.py",
        "--record",
        str(path),
        "--size",
        "800x500",
        *extra,
    ]


def _record(path, *extra, env=None):
    return subprocess.run(
        _record_cmd(path, *extra),
        cwd=ROOT,
        env=env or _headless_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )


def _frames(path):
    reader = imageio_ffmpeg.read_frames(str(path))
    meta = next(reader)
    w, h = meta["size"]
    return [np.frombuffer(f, np.uint8).reshape(h, w, 3) for f in reader]


def test_mp4_has_exactly_ticks_times_frames_per_tick_and_is_deterministic(tmp_path):
    a, b = tmp_path / "a.mp4", tmp_path / "b.mp4"
    for p in (a, b):
        res = _record(p, "--ticks", "3", "--frames-per-tick", "4", "--seed", "3")
        assert res.returncode == 0, res.stderr
        assert "recorded 12 frames (3 ticks" in res.stdout
    n, secs = imageio_ffmpeg.count_frames_and_secs(str(a))
    assert n == 12 and abs(secs - 12 / 30) < 0.05
    fa, fb = _frames(a), _frames(b)
    assert len(fa) == len(fb) == 12
    assert all(np.array_equal(x, y) for x, y in zip(fa, fb, strict=True))
    assert fa[0].shape == (500, 800, 3)
    assert not np.array_equal(fa[0], fa[-1])  # the clock and EVs moved
    # And byte-identical files (bitexact flags, no timestamps in the container).
    assert (
        hashlib.sha256(a.read_bytes()).digest()
        == hashlib.sha256(b.read_bytes()).digest()
    )


def test_no_display_renders_offscreen_and_says_where_the_file_went(tmp_path):
    out = tmp_path / "rec"
    cmd = [
        sys.executable,
        "main.py",
        "--ticks",
        "2",
        "--frames-per-tick",
        "2",
        "--size",
        "800x500",
        "--screenshot",
        str(tmp_path / "shot.png"),
    ]
    env = _headless_env()
    res = subprocess.run(
        cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert res.returncode == 0, res.stderr
    assert "No display" in res.stderr
    line = [ln for ln in res.stdout.splitlines() if ln.startswith("recorded 4 frames")]
    assert line, res.stdout
    path = Path(line[0].rsplit(": ", 1)[1])
    try:
        assert path.parent == ROOT / "recordings"
        assert (
            path.name.startswith("evening_peak_greedy_eta_seed0_")
            and path.suffix == ".mp4"
        )
        assert imageio_ffmpeg.count_frames_and_secs(str(path))[0] == 4
        assert (tmp_path / "shot.png").exists()
    finally:
        path.unlink(missing_ok=True)
    assert not out.exists()


def test_recording_killed_midway_is_still_playable(tmp_path):
    path = tmp_path / "killed.mp4"
    cmd = _record_cmd(path, "--frames-per-tick", "30")
    # Its own session, so the kill takes ffmpeg down too: nothing finishes the file.
    proc = subprocess.Popen(
        cmd,
        cwd=ROOT,
        env=_headless_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.time() + 60
        while time.time() < deadline and (
            not path.exists() or path.stat().st_size < 60_000
        ):
            time.sleep(0.2)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)
    assert proc.returncode == -signal.SIGKILL
    n, _ = imageio_ffmpeg.count_frames_and_secs(str(path))
    assert 0 < n < 48 * 30


def test_unusable_display_falls_back_to_offscreen_recording(tmp_path):
    env = _headless_env()
    env["DISPLAY"] = ":987"  # set, but no X server there
    out = tmp_path / "fallback.mp4"
    res = _record(out, "--ticks", "1", "--frames-per-tick", "2", env=env)
    assert res.returncode == 0, res.stderr
    assert "No usable display" in res.stderr
    assert "recorded 2 frames (1 ticks" in res.stdout
    assert imageio_ffmpeg.count_frames_and_secs(str(out))[0] == 2
