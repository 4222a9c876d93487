"""Command line and layering of the city view."""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from viz.app import display_available, parse_args

ROOT = Path(__file__).resolve().parents[2]


def test_defaults_and_sizes():
    a = parse_args([])
    assert (a.scenario, a.policy, a.seed, a.size, a.record) == (
        "evening_peak",
        "greedy_eta",
        0,
        (1280, 720),
        None,
    )
    assert parse_args(["--record"]).record == ""  # default path under recordings/
    assert parse_args(["--record", "x.mp4", "--size", "1920x1080"]).size == (1920, 1080)


@pytest.mark.parametrize(
    "argv",
    [
        ["--size", "big"],  # not WxH
        ["--size", "640x480"],  # below the 800x500 minimum
        ["--ticks", "0"],  # nothing to show
        ["--frames-per-tick", "0"],
        ["--scenario", "mars"],  # not a core scenario
    ],
)
def test_bad_arguments_exit_2(argv, capsys):
    with pytest.raises(SystemExit) as e:
        parse_args(argv)
    assert e.value.code == 2


def test_display_detection(monkeypatch):
    monkeypatch.setenv("SDL_VIDEODRIVER", "dummy")
    assert not display_available()
    monkeypatch.delenv("SDL_VIDEODRIVER")
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    assert display_available() is (not sys.platform.startswith("linux"))
    monkeypatch.setenv("DISPLAY", ":99")
    assert display_available()


def test_unknown_policy_is_a_clean_error():
    res = subprocess.run(
        [sys.executable, "main.py", "--policy", "nope", "--ticks", "1"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 2
    assert "unknown policy 'nope'" in res.stderr and "Traceback" not in res.stderr


@pytest.mark.parametrize(
    "package, allowed",
    [
        # The desktop window: the shared renderer, pygame, tqdm for --record.
        ("viz", {"evgrid_core", "evgrid_render", "viz", "pygame", "tqdm"}),
        # The shared renderer and episode driver.
        (
            "evgrid_render",
            {"evgrid_core", "evgrid_render", "pygame", "numpy", "imageio_ffmpeg"},
        ),
    ],
)
def test_city_view_packages_import_only_the_core_and_their_libraries(
    package: str, allowed: set[str]
) -> None:
    stdlib = set(sys.stdlib_module_names) | {"__future__"}
    for path in sorted((ROOT / package).glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module]
            for name in names:
                top = name.split(".")[0]
                assert top in allowed | stdlib, f"{path.name} imports {name}"


def test_the_controller_runs_without_pygame():
    code = "import sys, evgrid_render.controller as c; k = c.Controller('evening_peak', 0, 'nearest', threaded=False); k.poll(block=True); assert k.env.steps > 0; assert 'pygame' not in sys.modules"
    res = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 0, res.stderr


# --- Output paths: one-line errors before any work, no folders made -----------------
@pytest.mark.parametrize(
    ("make", "message"),
    [
        # a folder that does not exist is not created (it used to be, as root)
        (lambda d: d / "missing" / "x.mp4", "does not exist"),
        # not an MP4: ffmpeg used to fail at the end with a BrokenPipeError traceback
        (lambda d: d / "out.txt", "must end in .mp4"),
        (lambda d: d / "out", "must end in .mp4"),
        # a path that cannot be written: here a folder of that name
        (lambda d: (d / "x.mp4").mkdir() or d / "x.mp4", "folder, not a file"),
        # the parent is a file
        (lambda d: (d / "f").write_text("x") and d / "f" / "x.mp4", "not a folder"),
    ],
)
def test_bad_record_paths_are_one_line_errors(tmp_path, make, message):
    path = make(tmp_path)
    res = subprocess.run(
        [sys.executable, "main.py", "--record", str(path), "--ticks", "1"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env={**__import__("os").environ, "SDL_VIDEODRIVER": "dummy"},
    )
    assert res.returncode == 2, res.stderr
    assert message in res.stderr and "Traceback" not in res.stderr
    assert res.stderr.strip().splitlines()[-1].startswith("main.py: error: --record")
    assert not (tmp_path / "missing").exists()


def test_the_recorder_makes_no_folder_outside_recordings(tmp_path):
    pygame = pytest.importorskip("pygame")
    from evgrid_render.recorder import Recorder

    with pytest.raises(FileNotFoundError, match="does not exist"):
        Recorder(tmp_path / "a" / "b" / "x.mp4", (64, 64))
    assert not (tmp_path / "a").exists()
    del pygame


def test_a_good_record_path_leaves_nothing_behind_when_parsing(tmp_path):
    out = tmp_path / "ok.mp4"
    assert parse_args(["--record", str(out)]).record == str(out)
    assert not out.exists()  # the write check does not leave an empty file
