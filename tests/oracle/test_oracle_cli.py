"""``evgrid eval --policy oracle --model PATH`` runs the Oracle end to end."""

from __future__ import annotations

import json
import os
import subprocess
import sys


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


def test_eval_oracle_without_a_model_is_a_clean_error() -> None:
    res = evgrid("eval", "--policy", "oracle", "--episodes", "1")
    assert res.returncode == 2
    assert "--model PATH" in res.stderr
    assert "Traceback" not in res.stderr
