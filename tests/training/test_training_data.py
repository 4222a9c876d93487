"""The SFT batch: only the answer and its end token carry loss, rows left-padded."""

from __future__ import annotations

import pytest

from evgrid_core import EVGridEnv
from oracle.prompt import decision_prompt


@pytest.fixture(scope="module")
def tiny_tokenizer():
    pytest.importorskip("transformers", reason="needs the train extra")
    from transformers import AutoTokenizer

    from training.config import load_config
    from training.model import base_model_path

    return AutoTokenizer.from_pretrained(base_model_path(load_config("cpu-smoke")))


def rows() -> list[dict]:
    """Three decision prompts of one episode; answers of unequal length."""
    env, out = EVGridEnv(), []
    env.reset(seed=0, scenario="evening_peak")
    for answer in ("B", "DEFER E7 15", "A"):
        messages = list(decision_prompt(env.observation(), max_stations=3).messages)
        out.append({"prompt": messages, "answer": answer})
        env.step(f"DEFER E{env.observation().request.id} 5")
    return out


def test_sft_batch_supervises_exactly_the_answer_and_its_end_token(tiny_tokenizer):
    from training.sft import collate, tokenize_rows

    batch = rows()
    ids, mask, answer_mask, k = collate(
        tokenize_rows(tiny_tokenizer, batch, 2048), tiny_tokenizer.pad_token_id
    )[:4]
    assert ids.shape == mask.shape and answer_mask.shape == (3, k)
    for i, r in enumerate(batch):
        answer = ids[i, -k:][answer_mask[i]].tolist()
        assert tiny_tokenizer.decode(answer) == r["answer"] + "<|im_end|>"
        # left padding: the row's tokens end the batch, padding is masked out
        n = int(mask[i].sum())
        assert mask[i, -n:].all() and not mask[i, : ids.shape[1] - n].any()
