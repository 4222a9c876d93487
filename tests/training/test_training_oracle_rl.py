"""The Oracle's RL stage (training.oracle_rl): draws, the env's verdict, the update.

The tiny random Qwen2 stands in for SmolLM2 (seconds per run); the labels are the
fake ones of ``test_training_oracle_sft`` (greedy_eta's answers in the labels'
format). What is tested: each drawn letter's return is the env played on from
that state, the best one becomes the target, a cut scoring resumes, the update
moves the adapter, and the figures before and after are measured.
"""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
from test_training_oracle_sft import SCENARIO, write_fake_labels  # same folder

from training.config import load_config
from training.oracle_rl import draw


def fresh_adapter(cfg, path):  # noqa: ANN001, ANN201
    """A new LoRA adapter of ``cfg``'s shape over its base, saved in ``path``: where
    the RL stages under test start from."""
    from peft import get_peft_model

    from training.model import base_model_path, load_model, lora_config

    model, _, _ = load_model(base_model_path(cfg), cfg, "cpu", train_dtype="float32")
    get_peft_model(
        model, lora_config(cfg, model.config.num_hidden_layers)
    ).save_pretrained(str(path))
    return path


def test_draw_puts_the_greedy_letter_first_and_is_seeded() -> None:
    p = np.array([0.1, 0.6, 0.3])
    a = draw(p, 8, 1.0, [0, 5])
    assert a[0] == 1 and len(set(a)) == len(a) and set(a) <= {0, 1, 2}
    assert a == draw(p, 8, 1.0, [0, 5])
    # a cold draw stays on the greedy letter
    assert draw(np.array([0.05, 0.9, 0.05]), 4, 0.05, [1]) == [1]


@pytest.mark.slow
def test_expert_iteration_scores_by_the_env_and_moves_the_adapter(tmp_path) -> None:
    pytest.importorskip("peft", reason="needs the train extra")
    from safetensors.torch import load_file

    from training.data import restore_env
    from training.model import base_model_path, load_model
    from training.oracle_rl import run, score_rows
    from training.rewards import rollout

    labels = tmp_path / "labels"
    write_fake_labels(labels, range(0, 3))
    base = load_config("cpu-smoke")  # the tiny random Qwen2
    cfg = dataclasses.replace(
        base,
        output_dir=str(tmp_path / "sft"),
        data=dataclasses.replace(
            base.data, scenarios=(SCENARIO,), train_seeds=(0, 2),
            label_eval_seeds=(2, 3), heldout_seeds=(900_000, 900_001),
            states_per_episode=2, prompt_stations=3,
        ),
        sft=dataclasses.replace(base.sft, final_eval_states=2),
        rl=dataclasses.replace(
            base.rl, seeds=(0, 2), eval_seeds=(30, 31), states_per_episode=3,
            eval_states_per_episode=2, samples=3, horizon_ticks=4, steps=3,
            batch_size=2, learning_rate=1e-2,
        ),
    )  # fmt: skip
    init = fresh_adapter(cfg, tmp_path / "init")
    out = tmp_path / "rl"
    summary = run(cfg, labels, init, out, log=lambda *_: None)
    assert summary["states"] == 6 and {"before", "after"} <= summary.keys()
    for when in ("before", "after"):
        assert summary[when]["policy"]["states"] > 0
        assert 0.0 <= summary[when]["optimum"]["agreement"] <= 1.0
    # every scored letter's return is the env played on from the row's state
    rows = [json.loads(x) for x in (out / "states.jsonl").read_text().splitlines()]
    scored = [json.loads(x) for x in (out / "scored.jsonl").read_text().splitlines()]
    assert sorted(s["i"] for s in scored) == list(range(len(rows)))
    for s in scored:
        r = rows[s["i"]]
        assert s["greedy"] in s["returns"] and s["target"] in s["returns"]
        best = max(s["returns"].values())
        if s["target"] != s["greedy"]:
            assert s["returns"][s["target"]] == best
        for letter, value in s["returns"].items():
            env = restore_env(r["scenario"], r["seed"], r["step"], cfg.rl.generator)
            line = r["listed"][r["letters"].index(letter)]
            got = rollout(
                env, line, horizon_ticks=4, continuation="distilled", seed=r["seed"]
            )
            assert got.total == pytest.approx(value, abs=1e-9)
    # the update moved the adapter
    a = load_file(str(init / "adapter_model.safetensors"))
    b = load_file(str(out / "adapter" / "adapter_model.safetensors"))
    assert any(not bool((a[k] == b[k]).all()) for k in a)
    # a second scoring reads the cache: nothing is scored again
    before = (out / "scored.jsonl").read_text()
    from peft import PeftModel

    model, tok, _ = load_model(base_model_path(cfg), cfg, "cpu", train_dtype="float32")
    model = PeftModel.from_pretrained(model, str(init))
    from training.oracle_rl import Verdict

    again = score_rows(model, tok, rows, cfg, Verdict(cfg), out / "scored.jsonl",
                       log=lambda *_: None)  # fmt: skip
    assert (out / "scored.jsonl").read_text() == before and len(again) == len(rows)


@pytest.mark.slow
def test_the_update_can_take_its_targets_from_the_learners_own_states(tmp_path):
    """``--targets``: an ``oracle_gap`` folder's look-ahead labels are what it trains
    on; nothing is drawn or scored here."""
    pytest.importorskip("peft", reason="needs the train extra")
    from safetensors.torch import load_file

    from training.oracle_gap import gap_rows
    from training.oracle_gap import main as gap_main
    from training.oracle_rl import main

    labels = tmp_path / "labels"
    write_fake_labels(labels, range(0, 3))
    gap = tmp_path / "gap"
    assert gap_main(["--learner", "greedy_eta", "--scenarios", SCENARIO,
                     "--seeds", "0:2", "--out", str(gap)]) == 0  # fmt: skip
    base = load_config("cpu-smoke")
    init = fresh_adapter(base, tmp_path / "init")
    out = tmp_path / "rl"
    sets = [
        f"output_dir={json.dumps(str(tmp_path / 'sft'))}",
        f'data.scenarios=["{SCENARIO}"]', "data.train_seeds=[0,2]",
        "data.label_eval_seeds=[2,3]", "data.heldout_seeds=[900000,900001]",
        "data.states_per_episode=2", "data.prompt_stations=3",
        "sft.final_eval_states=2", "rl.eval_seeds=[30,31]",
        "rl.eval_states_per_episode=2", "rl.horizon_ticks=4", "rl.steps=3",
        "rl.batch_size=2", "rl.learning_rate=1e-2",
    ]  # fmt: skip
    args = ["--config", "cpu-smoke", "--labels", str(labels), "--init", str(init),
            "--out", str(out), "--targets", str(gap)]  # fmt: skip
    assert main([x for s in sets for x in ("--set", s)] + args) == 0
    summary = json.loads((out / "summary.json").read_text())
    style = base.data.serve_prompt_style or base.data.prompt_style
    rows = [r for r in gap_rows(gap, 3, style) if r["answer"]]
    assert summary["targets"] == str(gap)
    assert summary["states"] == len(rows) > 0
    assert summary["improved"] == sum(r["improved"] for r in rows)
    assert not (out / "scored.jsonl").exists() and not (out / "states.jsonl").exists()
    a = load_file(str(init / "adapter_model.safetensors"))
    b = load_file(str(out / "adapter" / "adapter_model.safetensors"))
    assert any(not bool((a[k] == b[k]).all()) for k in a)
    # a folder without oracle_gap's episodes: one line, exit 2
    with pytest.raises(SystemExit) as e:
        main([*args[:-1], str(tmp_path / "nowhere")])
    assert e.value.code == 2
