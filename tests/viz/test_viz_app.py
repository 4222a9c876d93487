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


def test_viz_imports_only_the_core_and_its_own_libraries():
    allowed = {
        "evgrid_core",
        "oracle",
        "viz",
        "pygame",
        "numpy",
        "imageio_ffmpeg",
        "tqdm",
    }
    stdlib = set(sys.stdlib_module_names) | {"__future__"}
    for path in sorted((ROOT / "viz").glob("*.py")):
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
    code = "import sys, viz.controller as c; k = c.Controller('evening_peak', 0, 'nearest', threaded=False); k.poll(block=True); assert k.env.steps > 0; assert 'pygame' not in sys.modules"
    res = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 0, res.stderr
