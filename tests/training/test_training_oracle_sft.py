"""SFT on optimum labels (training.oracle_sft): rows from labels, resume, shipping.

The labels here are written by hand in ``evgrid labels``' format from a greedy_eta
episode (a fake optimum: the format and the replay are what is tested, not the
answers), and the model is the tiny offline Qwen2, so a run takes seconds.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from evgrid_core import EVGridEnv, format_action
from evgrid_core.policies import make_policy
from training.config import load_config
from training.sft_rows import label_rows, played_rows

SCENARIO = "quiet_night"


def write_fake_labels(out: Path, seeds: range, strand_step: int = 3) -> None:
    """greedy_eta's decisions as label rows; step ``strand_step`` of each episode is
    marked as a planned STRAND (the trainer must leave it out)."""
    out.mkdir(parents=True, exist_ok=True)
    rows, episodes = [], []
    for seed in seeds:
        env, policy = EVGridEnv(), make_policy("greedy_eta")
        obs = env.reset(seed=seed, scenario=SCENARIO)
        policy.reset(seed)
        step = 0
        while not env.done:
            action = policy.act(obs)
            action = action if isinstance(action, str) else format_action(action)
            ev = obs.request.id
            valid = env.step(action).info["valid"]
            rows.append(
                {
                    "scenario": SCENARIO,
                    "seed": seed,
                    "step": step,
                    "ev": ev,
                    "action": action,
                    "valid": valid,
                    "planned_invalid": step == strand_step,
                }  # fmt: skip
            )
            obs = env.observation()
            step += 1
        episodes.append(
            {
                "scenario": SCENARIO,
                "seed": seed,
                "labelled": True,
                "proven_optimal": True,
            }  # fmt: skip
        )
    (out / "decisions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (out / "episodes.jsonl").write_text("".join(json.dumps(e) + "\n" for e in episodes))


def test_label_rows_replay_each_state_and_skip_planned_strands(tmp_path) -> None:
    write_fake_labels(tmp_path, range(0, 2))
    decisions = [json.loads(x) for x in (tmp_path / "decisions.jsonl").open()]
    rows = label_rows(tmp_path, (0, 2), (SCENARIO,), stations=3)
    assert len(rows) == len(decisions) - 2  # one planned STRAND per episode
    assert all(r["step"] != 3 for r in rows)
    for r in rows:
        assert r["expert_action"] in r["allowed"]
        assert r["prompt"][0]["role"] == "system"
        assert f"E{r['expert_action'].split()[1][1:]} " in r["prompt"][1]["content"]
    # the seed filter is [first, last)
    assert {r["seed"] for r in label_rows(tmp_path, (1, 2), (SCENARIO,), 3)} == {1}


def test_played_rows_are_every_decision_of_the_generators_own_episode() -> None:
    """``data.played_generator``: per_episode 0 keeps each decision state of the
    policy's episode, in order, with its own pick as the answer; a count spreads."""
    env, policy = EVGridEnv(), make_policy("greedy_eta")
    obs = env.reset(seed=1, scenario=SCENARIO)
    policy.reset(1)
    picks, steps = [], []
    while not env.done:
        action = policy.act(obs)
        picks.append(action if isinstance(action, str) else format_action(action))
        steps.append(env.steps)
        env.step(action)
        obs = env.observation()
    rows = played_rows("greedy_eta", (1, 2), (SCENARIO,), 3, 0)
    assert [r["expert_action"] for r in rows] == picks
    assert [r["step"] for r in rows] == steps and {r["seed"] for r in rows} == {1}
    assert all(r["expert_action"] in r["allowed"] for r in rows)
    spread = played_rows("greedy_eta", (1, 2), (SCENARIO,), 3, 4)
    assert [r["step"] for r in spread] == [
        steps[0],
        steps[round((len(steps) - 1) / 3)],
        steps[round(2 * (len(steps) - 1) / 3)],
        steps[-1],
    ]


@pytest.mark.slow
def test_a_resumed_run_equals_an_unbroken_one_and_ships(tmp_path, monkeypatch) -> None:
    pytest.importorskip("peft", reason="needs the train extra")
    from safetensors.torch import load_file

    import oracle.shipped
    from training.logs import read_csv
    from training.oracle_sft import train
    from training.sft_ship import checkpoints, ship

    labels = tmp_path / "labels"
    write_fake_labels(labels, range(0, 3))
    base = load_config("cpu-smoke")  # the tiny random Qwen2: seconds per run
    cfg = dataclasses.replace(
        base,
        data=dataclasses.replace(
            base.data, scenarios=(SCENARIO,), train_seeds=(0, 2),
            label_eval_seeds=(2, 3), heldout_seeds=(900_000, 900_001),
            states_per_episode=2, prompt_stations=3,
        ),
        sft=dataclasses.replace(
            base.sft, steps=4, batch_size=2, learning_rate=1e-3, full_finetune=False,
            checkpoint_every=1, eval_every=2, eval_states=2, final_eval_states=2,
        ),
    )  # fmt: skip
    whole = dataclasses.replace(cfg, output_dir=str(tmp_path / "whole"))
    broken = dataclasses.replace(cfg, output_dir=str(tmp_path / "broken"))
    said: list[str] = []
    s_whole = train(whole, labels, log=said.append)
    steps_said = [x for x in said if x.startswith("step ")]
    assert [x.split()[1] for x in steps_said] == ["1/4", "2/4", "3/4", "4/4"]
    assert all(" left" in x for x in steps_said)
    assert steps_said[-1].split(", about ")[1].startswith("0m00s left")
    assert "held out: agreement" in steps_said[1]
    first = train(broken, labels, until=2, log=lambda *_: None)
    assert first["steps"] == 2 and "heldout_optimum" not in first
    assert not (tmp_path / "broken" / "adapter").exists()
    s_broken = train(broken, labels, log=lambda *_: None)
    assert s_whole["steps"] == s_broken["steps"] == 4
    a = load_file(str(tmp_path / "whole" / "adapter" / "adapter_model.safetensors"))
    b = load_file(str(tmp_path / "broken" / "adapter" / "adapter_model.safetensors"))
    assert a.keys() == b.keys() and len(a) > 0
    assert all(bool((a[k] == b[k]).all()) for k in a)  # bit for bit
    log_a = read_csv(tmp_path / "whole" / "logs" / "sft.csv")
    log_b = read_csv(tmp_path / "broken" / "logs" / "sft.csv")
    assert [r["loss"] for r in log_a] == [r["loss"] for r in log_b]
    assert [r["step"] for r in log_a if "agreement" in r] == [2, 4]
    # only the last two checkpoints are kept
    assert [p.name for p in checkpoints(tmp_path / "whole")] == [
        "step-00003",
        "step-00004",
    ]
    # shipping: the adapter as a GGUF beside its record
    weights = tmp_path / "weights"
    weights.mkdir()
    monkeypatch.setattr(oracle.shipped, "WEIGHTS_DIR", weights)
    monkeypatch.setattr(oracle.shipped, "SHIPPED_ADAPTER", weights / "lora.gguf")
    monkeypatch.setattr(oracle.shipped, "SHIPPED_PROMPT", weights / "oracle.json")
    config_file = tmp_path / "preset.toml"
    config_file.write_text("# the preset\n")
    pytest.importorskip("llama_cpp", reason="the converter ships with llama-cpp-python")
    shipped = ship(whole, labels, config_file)
    assert shipped == weights / "lora.gguf" and shipped.stat().st_size > 0
    record = (weights / "TRAINING.md").read_text()
    assert "# the preset" in record and "sha256" in record
    # the style it is asked in, beside it (the real record untouched)
    assert json.loads((weights / "oracle.json").read_text()) == {"prompt_style": "v1"}
    assert (weights / "oracle-smollm2-sft.png").stat().st_size > 1000
