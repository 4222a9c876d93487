"""The Oracle's held-out figures: how often its answer is the optimum's, valid, listed.

``answer_rates``: the Hugging Face model's greedy letters without a grammar (what the
training loop logs); ``gguf_agreement``: the Oracle as users run it (llama.cpp, the
grammar over the listed letters) on held-out optimum states, with its latency.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .sft_rows import eval_subset

ANSWER_TOKENS = 2  # SmolLM2 tokens: a letter, then <|im_end|>


def generate_actions(
    model: Any, tok: Any, prompts: list[list[dict[str, str]]], *, max_new_tokens: int
) -> list[str]:
    """Greedy completions (text) of chat prompts, batched with left padding."""
    import torch

    texts = [
        tok.apply_chat_template(p, tokenize=False, add_generation_prompt=True)
        for p in prompts
    ]
    side = tok.padding_side
    tok.padding_side = "left"
    try:
        enc = tok(texts, return_tensors="pt", padding=True, add_special_tokens=False)
    finally:
        tok.padding_side = side
    enc = {k: v.to(model.device) for k, v in enc.items()}
    was_training = model.training
    model.eval()
    with torch.no_grad():
        out = model.generate(
            **enc,
            max_new_tokens=max_new_tokens,
            do_sample=False,
            pad_token_id=tok.pad_token_id,
            eos_token_id=tok.eos_token_id,
        )
    if was_training:
        model.train()
    new = out[:, enc["input_ids"].shape[1] :]
    return [t.strip() for t in tok.batch_decode(new, skip_special_tokens=True)]


def answer_rates(
    model: Any, tok: Any, rows: list[dict[str, Any]], batch_size: int = 16
) -> dict[str, Any]:
    """Greedy answers without a grammar, read as the action their letter names:
    share equal to the row's action (agreement), valid in the state, and naming one
    of the listed options."""
    answers: list[str] = []
    for i in range(0, len(rows), batch_size):
        chunk = rows[i : i + batch_size]
        answers += generate_actions(
            model, tok, [r["prompt"] for r in chunk], max_new_tokens=ANSWER_TOKENS
        )
    n = max(1, len(rows))
    answers = [
        dict(zip(r["letters"], r["listed"], strict=True)).get(a.strip(), a)
        for a, r in zip(answers, rows, strict=True)
    ]
    pairs = list(zip(answers, rows, strict=True))
    return {
        "n": len(rows),
        "agreement": sum(a == r["expert_action"] for a, r in pairs) / n,
        "valid_rate": sum(a in r["allowed"] for a, r in pairs) / n,
        "listed_rate": sum(a in r["listed"] for a, r in pairs) / n,
        "examples": answers[:4],
    }


def gguf_agreement(
    labels_dir: Path,
    seeds: tuple[int, int],
    scenarios: tuple[str, ...],
    n: int,
    seed: int = 0,
    policy: Any = None,
) -> dict[str, Any]:
    """The Oracle as users run it (llama.cpp, grammar; the shipped one unless
    ``policy`` is given) on ``n`` held-out optimum states: share of answers equal to
    the optimum's action and valid in the state, and the latency."""
    from oracle.grammar import allowed_actions

    from .labels import label_states, load_labels

    if policy is None:
        from oracle.policy import GGUFPolicy

        policy = GGUFPolicy(fallback=None)
    lo, hi = seeds
    rows = [
        r
        for r in load_labels(labels_dir)
        if lo <= r["seed"] < hi and r["scenario"] in scenarios
    ]
    usable = [i for i, r in enumerate(rows) if not r["planned_invalid"]]
    keep = {usable[i] for i in eval_subset(list(range(len(usable))), n, seed)}
    agree = valid = 0
    policy.latencies_ms.clear()
    for i, (obs, action) in enumerate(label_states(rows)):
        if i in keep:
            answer = policy.act(obs)
            agree += answer == action
            valid += answer in allowed_actions(obs)
    k = max(1, len(keep))
    return {
        "n": len(keep),
        "agreement": agree / k,
        "valid_rate": valid / k,
        "latency": policy.latency_summary(),
    }


def held_out(model: Any, tok: Any, opt_rows: list, play_rows: list) -> dict[str, float]:
    a = answer_rates(model, tok, opt_rows)
    b = answer_rates(model, tok, play_rows)
    return {
        "agreement": a["agreement"],
        "listed_rate": a["listed_rate"],
        "valid_rate": b["valid_rate"],
        "valid_rate_optimum_states": a["valid_rate"],
    }
