"""``evgrid eval --policy oracle [--model PATH]`` runs the Oracle end to end."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest


def evgrid(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "evgrid_cli", *args],
        env={**os.environ, "EVGRID_ORACLE_THREADS": "1"},
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_eval_runs_the_oracle_on_a_gguf(llama_cpp, tiny_gguf) -> None:
    res = evgrid(
        "eval", "--policy", "oracle", "--model", str(tiny_gguf),
        "--scenario", "quiet_night", "--episodes", "1", "--json", "--no-progress",
    )  # fmt: skip
    assert res.returncode == 0, res.stderr[-2000:]
    out = json.loads(res.stdout)
    assert out["policy"] == "oracle"
    assert out["kpis"]["invalid_action_pct"]["mean"] == 0.0  # the grammar at work
    assert out["kpis"]["evs_served"]["mean"] > 0


def test_eval_oracle_with_a_missing_model_is_a_clean_error(tmp_path) -> None:
    missing = tmp_path / "missing.gguf"
    res = evgrid(
        "eval", "--policy", "oracle", "--model", str(missing), "--episodes", "1"
    )
    assert res.returncode == 2
    assert f"no GGUF model at {missing}" in res.stderr
    assert "Traceback" not in res.stderr


@pytest.mark.slow
def test_eval_runs_the_shipped_oracle_without_a_model(llama_cpp, smol_gguf) -> None:
    from oracle.policy import SHIPPED_ADAPTER

    if not SHIPPED_ADAPTER.is_file():
        pytest.skip(f"{SHIPPED_ADAPTER} is not there")
    res = evgrid(
        "eval", "--policy", "oracle", "--scenario", "quiet_night", "--seed", "900000",
        "--episodes", "1", "--json", "--no-progress",
    )  # fmt: skip
    assert res.returncode == 0, res.stderr[-2000:]
    out = json.loads(res.stdout)
    assert out["kpis"]["invalid_action_pct"]["mean"] == 0.0
    assert out["kpis"]["evs_served"]["mean"] > 0
