"""Presets load, bad configs are rejected early, the CLI plans without training."""

from __future__ import annotations

import dataclasses

import pytest

from evgrid_cli.main import main as evgrid
from evgrid_core import SCENARIOS
from evgrid_core.policies import policy_names
from training.config import config_from_dict, load_config, preset_names

PRESETS = ("colab-t4-qwen3b", "cpu-smoke", "gpu-small")


def test_the_three_presets_exist():
    assert set(PRESETS) <= set(preset_names())


@pytest.mark.parametrize("name", PRESETS)
def test_preset_is_consistent(name):
    cfg = load_config(name)
    assert cfg.name == name
    assert set(cfg.data.scenarios) <= set(SCENARIOS)
    assert set(cfg.eval.kpi_scenarios) <= set(SCENARIOS)
    assert cfg.eval.gguf_scenario in SCENARIOS
    names = set(policy_names())
    assert {cfg.data.generator, cfg.data.expert, cfg.reward.continuation} <= names
    assert set(cfg.eval.baselines) <= names
    # held-out seeds never overlap training seeds
    lo, hi = cfg.data.train_seeds
    assert cfg.data.heldout_seeds[0] >= hi and cfg.eval.kpi_seeds[0] >= hi


def test_colab_preset_is_qwen3b_qlora():
    cfg = load_config("colab-t4-qwen3b")
    assert cfg.model.source == "Qwen/Qwen2.5-3B-Instruct"
    assert cfg.model.load_in_4bit and not cfg.sft.full_finetune
    assert cfg.export.quant == "Q4_K_M"


@pytest.mark.parametrize(
    ("raw", "message", "why"),
    [
        ({"sft": {"stepz": 3}}, "unknown key", "a typo must not be silently ignored"),
        ({"grpo": {"num_generations": 1}}, "at least 2", "GRPO needs a group"),
        (
            {"grpo": {"batch_size": 6, "num_generations": 4}},
            "multiple of",
            "TRL needs the batch to split into whole groups",
        ),
        (
            {"data": {"train_seeds": [0, 10], "heldout_seeds": [5, 20]}},
            "overlaps",
            "held-out seeds must never be trained on",
        ),
        (
            {"data": {"train_seeds": [0, 10]}, "eval": {"kpi_seeds": [9, 12]}},
            "overlaps",
            "KPI seeds must be held out too",
        ),
        (
            {
                "data": {
                    "played_generator": "distilled",
                    "played_seeds": [900001, 900003],
                }
            },
            "played_seeds overlaps data.heldout_seeds",
            "a policy's own episodes on held-out seeds must not become training rows",
        ),
        (
            {
                "data": {
                    "train_seeds": [0, 25],
                    "label_eval_seeds": [25, 30],
                    "played_generator": "distilled",
                    "played_seeds": [20, 26],
                }
            },
            "played_seeds overlaps data.label_eval_seeds",
            "the agreement seeds stay unseen",
        ),
        (
            {"data": {"played_generator": "distilled", "played_seeds": [5, 5]}},
            "played_seeds",
            "a generator with no seeds is a mistake, not a no-op",
        ),
        ({"device": "tpu"}, "device", "only cpu/cuda/auto"),
    ],
)
def test_bad_config_is_rejected(raw, message, why):
    with pytest.raises(ValueError, match=message):
        config_from_dict(raw)


def test_config_is_frozen_and_replaceable():
    cfg = load_config("cpu-smoke")
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.seed = 3  # type: ignore[misc]
    other = dataclasses.replace(cfg, grpo=dataclasses.replace(cfg.grpo, steps=9))
    assert other.grpo.steps == 9 and cfg.grpo.steps != 9


def test_cli_dry_run_prints_the_plan(capsys):
    assert evgrid(["train", "--config", "cpu-smoke", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "sft: 240 steps" in out and "grpo:" in out and '"name": "cpu-smoke"' in out


def test_cli_rejects_unknown_preset_and_stage(capsys):
    assert evgrid(["train", "--config", "no-such-preset", "--dry-run"]) == 2
    assert "no config" in capsys.readouterr().err
    assert evgrid(["train", "--stages", "sft,bake", "--dry-run"]) == 2
    assert "bake" in capsys.readouterr().err


def test_python_m_training_is_the_same_command(capsys):
    """``python3 -m training`` runs ``training.cli``, the module ``evgrid train`` names."""
    from training.cli import main

    assert main(["--config", "cpu-smoke", "--dry-run"]) == 0
    assert evgrid(["train", "--config", "cpu-smoke", "--dry-run"]) == 0
    first, second = capsys.readouterr().out.split("evgrid train: preset")[1:]
    assert first == second
    assert main(["--stages", "sft,bake", "--dry-run"]) == 2
    assert "python3 -m training: error: unknown stage(s) ['bake']" in (
        capsys.readouterr().err
    )
