"""Decision-state rows re-create their exact state; SFT batches supervise the answer only."""

from __future__ import annotations

import pytest

from evgrid_core import format_action
from evgrid_core.policies import make_policy
from oracle.prompt import chat_messages
from training.config import DataConfig
from training.data import decision_rows, heldout_seeds, restore_env, train_seeds

CFG = DataConfig(
    scenarios=("evening_peak", "quiet_night"),
    train_seeds=(0, 2),
    heldout_seeds=(900_000, 900_001),
    states_per_episode=3,
)


def test_rows_replay_to_the_state_they_were_sampled_from():
    rows = decision_rows(CFG, train_seeds(CFG))
    assert len(rows) == 2 * 2 * 3
    for r in rows:
        env = restore_env(r["scenario"], r["seed"], r["step"], r["generator"])
        # the prompt is the one builder's text of exactly this state
        assert r["prompt"] == chat_messages(env.observation())
        expert = make_policy(CFG.expert)
        expert.reset(r["seed"])
        assert r["expert_action"] == format_action(expert.act(env.observation()))
        assert r["completion"] == [{"role": "assistant", "content": r["expert_action"]}]


def test_sampling_is_deterministic_and_steps_differ_within_an_episode():
    a = decision_rows(CFG, train_seeds(CFG), with_prompt=False)
    b = decision_rows(CFG, train_seeds(CFG), with_prompt=False)
    assert a == b
    steps = [r["step"] for r in a if r["scenario"] == "evening_peak" and r["seed"] == 0]
    assert len(set(steps)) == 3


def test_heldout_rows_use_only_heldout_seeds():
    held = decision_rows(CFG, heldout_seeds(CFG), with_prompt=False)
    assert {r["seed"] for r in held} == {900_000}
    assert not {r["seed"] for r in held} & set(train_seeds(CFG))


@pytest.fixture(scope="module")
def tiny_tokenizer():
    pytest.importorskip("transformers", reason="needs the train extra")
    from transformers import AutoTokenizer

    from training.config import load_config
    from training.model import base_model_path

    return AutoTokenizer.from_pretrained(base_model_path(load_config("cpu-smoke")))


def test_sft_batch_supervises_exactly_the_answer_and_its_end_token(tiny_tokenizer):
    from training.sft import encode_batch

    rows = decision_rows(CFG, range(0, 1))[:3]
    rows[1] = {**rows[1], "expert_action": "DEFER E7 15"}  # answers of unequal length
    ids, mask, answer_mask, k = encode_batch(tiny_tokenizer, rows, max_len=2048)
    assert ids.shape == mask.shape and answer_mask.shape == (3, k)
    for i, r in enumerate(rows):
        answer = ids[i, -k:][answer_mask[i]].tolist()
        assert tiny_tokenizer.decode(answer) == r["expert_action"] + "<|im_end|>"
        # left padding: the row's tokens end the batch, padding is masked out
        n = int(mask[i].sum())
        assert mask[i, -n:].all() and not mask[i, : ids.shape[1] - n].any()
