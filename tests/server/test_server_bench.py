"""bench/server_step.py runs and splits a step into its parts (figures not checked)."""

from __future__ import annotations

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
