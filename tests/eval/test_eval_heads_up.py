"""Long waits say so where they start: one line with the time it took on the dev
machine, before the optimum's solve (``evgrid optimum``) and the Oracle's recording
(``main.py``). ``evgrid compare``'s is in test_eval_compare."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from evgrid_cli.cmd_optimum import solve_heads_up
from evgrid_cli.main import main

ROOT = Path(__file__).resolve().parents[2]


def test_optimum_says_how_long_a_solve_took_before_it_starts(capsys):
    argv = ["optimum", "--scenario", "heatwave", "--seed", "0", "--node-limit", "0",
            "--stations-per-kind", "1", "--max-defer", "0", "--baselines", "",
            "--json", "--no-progress"]  # fmt: skip
    assert main(argv) == 0
    std = capsys.readouterr()
    assert std.err.splitlines() == [
        "heads-up: the optimum solves a MILP: ~9 s on heatwave on the dev machine "
        "(timed at node limit 500, this run 0)"
    ]
    assert json.loads(std.out)["scenario"] == "heatwave"  # stdout stays JSON


@pytest.mark.parametrize(
    ("solves", "node_limit", "line"),
    [
        # the solves still to run in each scenario, summed at the times measured
        ({"evening_peak": 20, "heatwave": 0}, 500,
         "heads-up: 20 optimum solves to run (a MILP each); one took ~55 s on "
         "evening_peak on the dev machine: about 18 min in all"),
        # a scenario never timed: said so, and counted at a minute
        ({"festival_surge": 2, "quiet_night": 1}, 500,
         "heads-up: 3 optimum solves to run (a MILP each); one took up to 6 min on "
         "festival_surge on the dev machine; not timed on quiet_night, counted at "
         "60 s: about 12 min in all"),
        ({"quiet_night": 1}, 500,
         "heads-up: the optimum solves a MILP: not timed on quiet_night (~55 s on "
         "evening_peak on the dev machine)"),
    ],
)  # fmt: skip
def test_heads_up_lines(solves, node_limit, line):
    assert solve_heads_up(solves, node_limit) == line


def _record(policy: str, path: Path) -> subprocess.CompletedProcess:
    env = {
        k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")
    }
    cmd = [sys.executable, "main.py", "--policy", policy, "--headless", "--ticks", "1",
           "--frames-per-tick", "1", "--size", "800x500", "--record", str(path)]  # fmt: skip
    return subprocess.run(
        cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )


def test_city_view_says_the_oracle_records_slowly(tmp_path):
    pytest.importorskip("llama_cpp")
    res = _record("oracle", tmp_path / "oracle.mp4")
    assert res.returncode == 0, res.stderr
    assert res.stderr.splitlines()[0] == (
        "heads-up: the Oracle asks its language model at every decision: recording a "
        "48-tick episode took ~2 min on the dev machine (first frame after ~6 s)"
    )
    res = _record("nearest", tmp_path / "nearest.mp4")  # fast: nothing to announce
    assert res.returncode == 0 and "heads-up" not in res.stderr
