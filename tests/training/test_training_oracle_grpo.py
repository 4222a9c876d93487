"""GRPO on the letter prompt (training.oracle_grpo): the env's reward, a run, resume.

The reward is the environment's: each completion's letter read as its listed line,
played on a copy of the state, minus the generator's own pick; anything else is
played as it reads (the env refuses it). The run uses the tiny random Qwen2 and the
fake labels of ``test_training_oracle_sft``: TRL's ``GRPOTrainer`` trains the
adapter, the held-out figures are measured at the start and every few steps, the
curves are written, and a second call with more steps resumes from the checkpoint.
"""

from __future__ import annotations

import dataclasses
import json

import pytest
from test_training_oracle_sft import SCENARIO  # same folder

from training.config import load_config
from training.oracle_grpo import env_return, letter_kl


def test_the_reward_is_the_letters_line_played_minus_the_generators_pick() -> None:
    calls = []

    def verdict(row: dict, line: str) -> float:
        calls.append(line)
        return {
            "ROUTE E3 S1 FAST": 2.0,
            "DEFER E3 5": -1.0,
            "ROUTE E3 S2 SLOW": 0.5,
        }.get(line, -9.0)

    cols = {
        "letters": [["A", "B", "C"]] * 4,
        "listed": [["ROUTE E3 S1 FAST", "ROUTE E3 S2 SLOW", "DEFER E3 5"]] * 4,
        "expert_action": ["ROUTE E3 S2 SLOW"] * 4,
        "scenario": [SCENARIO] * 4,
        "seed": [1] * 4,
        "step": [7] * 4,
    }
    completions = [[{"role": "assistant", "content": c}] for c in ("A", " C", "Z", "")]
    got = env_return(verdict)(completions, **cols)
    assert got == [2.0 - 0.5, -1.0 - 0.5, -9.0 - 0.5, -9.0 - 0.5]
    assert "Z" in calls and "" in calls  # not a letter: played as it reads


def test_letter_kl() -> None:
    import numpy as np

    p = [np.array([0.5, 0.5]), np.array([1.0, 0.0, 0.0])]
    assert letter_kl(p, p) == pytest.approx(0.0, abs=1e-9)
    q = [np.array([0.9, 0.1]), np.array([0.5, 0.25, 0.25])]
    want = (0.5 * np.log(0.5 / 0.9) + 0.5 * np.log(0.5 / 0.1) + np.log(2)) / 2
    assert letter_kl(p, q) == pytest.approx(want, rel=1e-6)


@pytest.mark.slow
def test_grpo_trains_the_adapter_on_env_rewards_and_resumes(tmp_path) -> None:
    pytest.importorskip("trl", reason="needs the train extra")
    from safetensors.torch import load_file
    from test_training_oracle_rl import fresh_adapter  # same folder

    from training.oracle_grpo import run

    base = load_config("cpu-smoke")  # the tiny random Qwen2
    cfg = dataclasses.replace(
        base,
        output_dir=str(tmp_path / "unused"),
        data=dataclasses.replace(base.data, scenarios=(SCENARIO,), prompt_stations=3),
        rl=dataclasses.replace(
            base.rl, seeds=(0, 1), eval_seeds=(30, 31), states_per_episode=4,
            eval_states_per_episode=3, horizon_ticks=4,
        ),
        grpo=dataclasses.replace(
            base.grpo, steps=2, batch_size=4, grad_accum=1, num_generations=4,
            beta=0.0, learning_rate=5e-2, eval_every=1,
            save_every=1,
        ),
    )  # fmt: skip
    init = fresh_adapter(cfg, tmp_path / "init")
    out = tmp_path / "grpo"
    summary = run(cfg, init, out, log=lambda *_: None)
    assert [e["step"] for e in summary["evals"]] == [0, 1, 2]
    assert summary["evals"][0]["kl_letters"] == pytest.approx(0.0, abs=1e-9)
    assert all(e["states"] > 0 for e in summary["evals"])
    history = (out / "logs" / "grpo.csv").read_text()
    assert "reward" in history.splitlines()[0] and (out / "logs" / "grpo.png").is_file()
    a = load_file(init / "adapter_model.safetensors")
    b = load_file(out / "adapter" / "adapter_model.safetensors")
    assert any(not (a[k] == b[k]).all() for k in a)  # the adapter moved
    # two more steps: resumed from checkpoint-2, not from the start
    cfg3 = dataclasses.replace(cfg, grpo=dataclasses.replace(cfg.grpo, steps=3))
    summary = run(cfg3, init, out, log=lambda *_: None)
    assert [e["step"] for e in summary["evals"]] == [0, 1, 2, 3]
    state = json.loads(
        (out / "grpo-run" / "checkpoint-3" / "trainer_state.json").read_text()
    )
    assert state["global_step"] == 3
    # a stopped run's curves, from its newest checkpoint and the held-out log
    from training.oracle_grpo import main

    (out / "logs" / "grpo.csv").unlink()
    assert main(["--out", str(out), "--curves"]) == 0
    header, *rows = (out / "logs" / "grpo.csv").read_text().splitlines()
    assert {"reward", "gain", "kl_letters"} <= set(header.split(","))
    assert len(rows) == 3 + 4  # three logged steps, four held-out figures
