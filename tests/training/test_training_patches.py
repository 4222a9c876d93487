"""Guards of training's patches of the libraries it drives (``training/patches.py``).

Each patch is compared with the library's own path on a tiny random model.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("trl", reason="needs the train extra (scripts/setup.sh test)")

from transformers import Qwen2Config, Qwen2ForCausalLM  # noqa: E402
from trl.trainer import utils as trl_utils  # noqa: E402

from training.patches import score_completion_tokens_only_on_cpu  # noqa: E402

VOCAB = 97


def _tiny_model() -> Qwen2ForCausalLM:
    torch.manual_seed(0)
    config = Qwen2Config(
        vocab_size=VOCAB,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=64,
    )
    model = Qwen2ForCausalLM(config)
    trl_utils.add_fused_lm_head(model)  # what GRPOTrainer adds
    return model


def _scores(model, ids, labels, rows: list[int]):  # noqa: ANN001, ANN202
    """TRL's fused log-probs and the gradients of its loss; the rows it scored."""
    scorer = trl_utils._ChunkedLogProbFunction

    class Counting:
        @staticmethod
        def apply(hidden, *args):  # noqa: ANN001, ANN205
            rows.append(hidden.shape[0])
            return scorer.apply(hidden, *args)

    trl_utils._ChunkedLogProbFunction = Counting
    try:
        model.zero_grad()
        out = model(input_ids=ids, labels=labels, fused_lm_head=True)
        out.loss.backward()
    finally:
        trl_utils._ChunkedLogProbFunction = scorer
    grads = {
        n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None
    }
    return out.log_probs.detach(), grads


def test_training_cpu_scores_completion_tokens_only_with_the_same_log_probs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # TRL's own rule, restored after: an earlier test in this process (a GRPO run)
    # may have applied the patch already
    own = getattr(trl_utils._use_triton, "_evgrid_original", trl_utils._use_triton)
    monkeypatch.setattr(trl_utils, "_use_triton", own)
    cpu = torch.device("cpu")
    model = _tiny_model()
    ids = torch.randint(0, VOCAB, (2, 12), generator=torch.Generator().manual_seed(1))
    labels = ids.clone()
    labels[:, :8] = -100  # the prompt: not scored
    labels[1, -1] = -100  # padding after the second completion
    plain_rows: list[int] = []
    compact_rows: list[int] = []
    plain = _scores(model, ids, labels, plain_rows)

    assert score_completion_tokens_only_on_cpu()
    patched = trl_utils._use_triton
    assert patched(cpu) and not patched(torch.device("meta"))  # others: TRL's rule
    assert score_completion_tokens_only_on_cpu() and trl_utils._use_triton is patched
    compact = _scores(model, ids, labels, compact_rows)

    # TRL's own path scores all 2 x 11 shifted positions; the patch the 7 labelled.
    assert plain_rows == [22] and compact_rows == [7]
    torch.testing.assert_close(compact[0], plain[0])
    assert compact[1].keys() == plain[1].keys() and plain[1]
    for name, grad in plain[1].items():
        torch.testing.assert_close(compact[1][name], grad, msg=name)
