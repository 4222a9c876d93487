"""The answer-only SFT step shared by the Oracle's SFT (``oracle_sft``) and RL stages.

Only the answer's tokens (a letter and ``<|im_end|>``) carry loss: the batch is
left-padded so every answer ends it and the model is asked for the last few
positions' logits only (``logits_to_keep``), far less work than scoring every
prompt position (what a generic SFT trainer does). ``answer_loss`` can mix a
teacher's soft choice over the letters into the first answer token's loss.
"""

from __future__ import annotations

import math
from typing import Any


def tokenize_rows(
    tok: Any, rows: list[dict[str, Any]], max_len: int
) -> list[tuple[list[int], int]]:
    """Per row: prompt+answer token ids and the answer's length (with ``<|im_end|>``)."""
    eos = tok.convert_tokens_to_ids("<|im_end|>")
    out = []
    for r in rows:
        prompt = tok.apply_chat_template(
            r["prompt"], tokenize=False, add_generation_prompt=True
        )
        p_ids = tok(prompt, add_special_tokens=False)["input_ids"]
        answer = r.get("answer") or r["expert_action"]  # a letter, or an action line
        a_ids = tok(answer, add_special_tokens=False)["input_ids"] + [eos]
        keep = max_len - len(a_ids)
        out.append((p_ids[-keep:] + a_ids, len(a_ids)))  # cut the prompt's start
    return out


def collate(
    encoded: list[tuple[list[int], int]], pad: int
) -> tuple[Any, Any, Any, int]:
    """Left-padded ids, attention mask, answer mask and answer length of a batch."""
    import torch

    width = max(len(s) for s, _ in encoded)
    k = max(a for _, a in encoded)
    ids = torch.full((len(encoded), width), pad, dtype=torch.long)
    mask = torch.zeros((len(encoded), width), dtype=torch.long)
    answer_mask = torch.zeros((len(encoded), k), dtype=torch.bool)
    for i, (s, a) in enumerate(encoded):
        ids[i, width - len(s) :] = torch.tensor(s)
        mask[i, width - len(s) :] = 1
        answer_mask[i, k - a :] = True
    return ids, mask, answer_mask, k


def adamw(params: list[Any], s: Any) -> Any:
    """The SFT optimizer of a preset's ``[sft]`` (``s``): AdamW, no weight decay."""
    import torch

    return torch.optim.AdamW(
        params, lr=s.learning_rate, weight_decay=0.0, eps=s.adam_epsilon
    )


def begin_step(opt: Any, s: Any, step: int) -> float:
    """Set optimizer step ``step``'s learning rate (the preset's schedule) and clear
    the gradients; returns the learning rate."""
    lr = s.learning_rate * lr_factor(step, s.steps, s.warmup_steps, s.lr_schedule)
    for group in opt.param_groups:
        group["lr"] = lr
    opt.zero_grad(set_to_none=True)
    return lr


def lr_factor(step: int, steps: int, warmup_steps: int, schedule: str) -> float:
    """Share of the peak learning rate at optimizer step ``step`` (1-based)."""
    if step <= warmup_steps:
        return step / warmup_steps
    if schedule == "cosine":  # from the peak down to (nearly) 0 at the last step
        done = (step - warmup_steps - 1) / max(1, steps - warmup_steps)
        return 0.5 * (1.0 + math.cos(math.pi * done))
    return 1.0


def answer_loss(
    model: Any,
    ids: Any,
    mask: Any,
    answer_mask: Any,
    k: int,
    soft: tuple[Any, Any, float] | None = None,
) -> Any:
    """Mean cross-entropy of the answer tokens; logits for the last k+1 positions only.

    ``soft``: ``(probs, token_ids, weight)``: the first answer token's loss is then
    ``(1 - weight)`` of its cross-entropy with the label plus ``weight`` of its
    cross-entropy with the distribution ``probs`` (rows, len(token_ids)) over
    ``token_ids`` (a teacher's soft choice between the listed letters).
    """
    import torch.nn.functional as F

    position_ids = (mask.cumsum(-1) - 1).clamp(min=0)
    out = model(
        input_ids=ids,
        attention_mask=mask,
        position_ids=position_ids,
        logits_to_keep=k + 1,
    )
    logits = out.logits[:, :-1, :].float()  # position t predicts token t+1
    targets = ids[:, -k:]
    loss = F.cross_entropy(
        logits.reshape(-1, logits.shape[-1]), targets.reshape(-1), reduction="none"
    ).view_as(targets)
    if soft is not None:
        probs, token_ids, weight = soft
        if not bool(answer_mask.all()):
            raise ValueError("soft targets need answers of one length (a letter)")
        first = logits[:, 0, :].log_softmax(-1)[:, token_ids]  # (rows, letters)
        soft_ce = -(probs.to(first.dtype) * first).sum(-1)
        loss = loss.clone()
        loss[:, 0] = (1.0 - weight) * loss[:, 0] + weight * soft_ce
    return (loss * answer_mask).sum() / answer_mask.sum()
