"""Presets load, bad configs are rejected early, the CLI plans without training."""

from __future__ import annotations

import dataclasses

import pytest

from evgrid_cli.main import main as evgrid
from evgrid_core import SCENARIOS
from evgrid_core.policies import policy_names
from training.config import config_from_dict, load_config, preset_names

PRESETS = tuple(preset_names())


def test_the_shipped_recipe_and_the_smokes_are_presets():
    assert {"cpu-smollm2", "cpu-chain-smoke", "cpu-smollm2-smoke"} <= set(PRESETS)


@pytest.mark.parametrize("name", PRESETS)
def test_preset_is_consistent(name):
    cfg = load_config(name)
    assert cfg.name == name
    assert set(cfg.data.scenarios) <= set(SCENARIOS)
    names = set(policy_names())
    assert {cfg.data.generator, cfg.rl.generator, cfg.rl.continuation} <= names
    # held-out seeds never overlap training seeds
    lo, hi = cfg.data.train_seeds
    assert cfg.data.heldout_seeds[0] >= hi
    assert cfg.grpo.steps == 0 or cfg.grpo.beta == 0.0  # what oracle_grpo runs


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
            {"labels": {"node_limit": -1}},
            "node_limit",
            "a negative node budget is a typo",
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
    cfg = load_config("cpu-smollm2")
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.seed = 3  # type: ignore[misc]
    other = dataclasses.replace(cfg, grpo=dataclasses.replace(cfg.grpo, steps=9))
    assert other.grpo.steps == 9 and cfg.grpo.steps != 9


def test_cli_dry_run_prints_the_chain(capsys):
    assert evgrid(["train", "--dry-run"]) == 0  # the shipped recipe by default
    out = capsys.readouterr().out
    stages = [line.split(":")[0].strip() for line in out.splitlines()[1:6]]
    assert stages == ["labels", "distill", "sft", "grpo", "ship"]
    assert "sft: 1200 steps" in out and '"name": "cpu-smollm2"' in out
    assert evgrid(["train", "--stages", "sft,ship", "--set", "grpo.steps=0",
                   "--dry-run"]) == 0  # fmt: skip
    out = capsys.readouterr().out
    assert "labels:" not in out and "sft:" in out and "ship:" in out


def test_cli_rejects_unknown_preset_stage_and_key(capsys):
    assert evgrid(["train", "--config", "no-such-preset", "--dry-run"]) == 2
    assert "no config" in capsys.readouterr().err
    assert evgrid(["train", "--stages", "sft,bake", "--dry-run"]) == 2
    assert "bake" in capsys.readouterr().err
    assert evgrid(["train", "--set", "grpo.stepz=3", "--dry-run"]) == 2
    assert "stepz" in capsys.readouterr().err


def test_python_m_training_is_the_same_command(capsys):
    """``python3 -m training`` runs ``training.cli``, the module ``evgrid train`` names."""
    from training.cli import main

    assert main(["--config", "cpu-chain-smoke", "--dry-run"]) == 0
    assert evgrid(["train", "--config", "cpu-chain-smoke", "--dry-run"]) == 0
    first, second = capsys.readouterr().out.split("evgrid train: preset")[1:]
    assert first == second
    assert main(["--stages", "sft,bake", "--dry-run"]) == 2
    assert "python3 -m training: error: unknown stage(s) ['bake']" in (
        capsys.readouterr().err
    )
