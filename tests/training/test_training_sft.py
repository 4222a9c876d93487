"""SFT's schedule, and that one seed and thread count give the same run bit for bit."""

from __future__ import annotations

import math

import pytest

from training.sft import lr_factor


@pytest.mark.parametrize(
    ("step", "schedule", "expected", "why"),
    [
        (1, "cosine", 0.1, "warm-up starts at 1/warmup_steps, never at 0"),
        (10, "cosine", 1.0, "warm-up ends at the peak"),
        (11, "cosine", 1.0, "the decay starts from the peak"),
        (61, "cosine", 0.5, "half-way through the decay: cos(pi/2)"),
        (110, "cosine", 0.5 * (1 + math.cos(0.99 * math.pi)), "the last step trains"),
        (110, "constant", 1.0, "constant keeps the peak after warm-up"),
    ],
)
def test_lr_factor_warms_up_then_decays(step, schedule, expected, why):
    # 110 steps, 10 of them warm-up: the cosine spans steps 11..110
    assert lr_factor(step, 110, 10, schedule) == pytest.approx(expected, abs=1e-12), why


class _Fixed:
    """A stand-in model whose logits are given: answer_loss reads only ``.logits``."""

    def __init__(self, logits):
        self.logits = logits

    def __call__(self, **kwargs):
        import types

        return types.SimpleNamespace(
            logits=self.logits[:, -(kwargs["logits_to_keep"]) :]
        )


def test_soft_targets_mix_the_teachers_choice_into_the_letters_loss() -> None:
    torch = pytest.importorskip("torch")
    from training.sft import answer_loss

    torch.manual_seed(0)
    rows, width, vocab = 3, 6, 11
    logits = torch.randn(rows, width, vocab)
    ids = torch.randint(0, vocab, (rows, width))
    mask = torch.ones_like(ids)
    amask = torch.ones((rows, 2), dtype=torch.bool)  # a letter, then the end token
    letters = torch.tensor([4, 7, 9])
    probs = torch.tensor([[0.7, 0.2, 0.1], [0.0, 1.0, 0.0], [0.2, 0.3, 0.5]])
    model = _Fixed(logits)
    hard = answer_loss(model, ids, mask, amask, 2)
    same = answer_loss(model, ids, mask, amask, 2, (probs, letters, 0.0))
    assert torch.allclose(hard, same)
    # weight 1: the letter's loss is the cross-entropy with the teacher's choice
    lp = logits[:, -3, :].log_softmax(-1)[:, letters]  # the position before the letter
    soft_ce = -(probs * lp).sum(-1)
    end_ce = torch.nn.functional.cross_entropy(
        logits[:, -2, :], ids[:, -1], reduction="none"
    )
    full = answer_loss(model, ids, mask, amask, 2, (probs, letters, 1.0))
    assert torch.allclose(full, (soft_ce + end_ce).mean() / 2)
    half = answer_loss(model, ids, mask, amask, 2, (probs, letters, 0.5))
    assert torch.allclose(half, (hard + full) / 2)
    with pytest.raises(ValueError, match="one length"):
        ragged = amask.clone()
        ragged[0, 0] = False
        answer_loss(model, ids, mask, ragged, 2, (probs, letters, 0.5))
