"""The server benchmarks run: server_step splits a step into its parts, server_hostile
runs its mix and loses nothing (figures not checked)."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

pytest.importorskip("openenv")

from server_helpers import ROOT  # noqa: E402


def test_server_step_bench_prints_every_part() -> None:
    cmd = [sys.executable, "bench/server_step.py", "--sessions", "3", "--steps", "4",
           "--passes", "1"]  # fmt: skip
    out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    parts = dict(re.findall(r"^(\w[\w ]*?)\s+([\d.]+)", out.stdout, flags=re.M))
    for name in ("decode", "core step", "observation", "dump", "json", "sum"):
        assert float(parts[name]) > 0, out.stdout


def test_server_step_bench_refuses_empty_runs() -> None:
    cmd = [sys.executable, "bench/server_step.py", "--sessions", "0"]
    out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and "must be >= 1" in out.stderr


@pytest.mark.slow
def test_server_hostile_bench_runs_the_mix_and_loses_nothing() -> None:
    pytest.importorskip("gradio")
    cmd = [sys.executable, "bench/server_hostile.py", "--sessions", "2", "--seconds",
           "1", "--slow", "1", "--big-ws", "1", "--uploads", "1", "--upload-mb", "1",
           "--churn-per-s", "5", "--leavers-per-s", "5", "--oracle-tabs", "0",
           "--settle-s", "1", "--json"]  # fmt: skip
    out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    figures = json.loads(out.stdout)
    assert figures["sessions_lost"] == 0 and figures["log"]["tracebacks"] == 0
    for phase in ("alone", "hostile"):
        assert figures[phase]["episodes_complete"] >= 2
        assert figures[phase]["transcripts_differ"] == 0
    tally = figures["tally"]
    assert tally["16 MB message: closed 1009"] >= 1, tally
    assert tally["200 kB message: error, session on"] >= 1, tally
    assert tally["left mid-body"] >= 1, tally
