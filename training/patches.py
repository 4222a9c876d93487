"""Training's speed shortcuts, in one place: patches of the libraries it drives.

Each reaches into a private name of a pinned library, so each is checked against
the library's own path in ``tests/training/test_training_patches.py``, and each
says whether it was applied (a library that renamed its internals leaves the plain
path, never a broken one).

``score_completion_tokens_only_on_cpu()``
    TRL 1.16's fused log-prob path (``trl.trainer.utils``) scores every position
    when Triton is absent (the ~600 prompt tokens too, against Qwen's 151,936-token
    vocabulary), to avoid recompiling on accelerators with static shapes. Eager CPU
    has no such cost, so on CPU the compact path (completion tokens only, torch
    tiles) is taken: ~40x cheaper. Safe: both paths give the same log-probs and
    gradients for the scored tokens (masked positions are 0 either way). Guard:
    ``test_training_cpu_scores_completion_tokens_only_with_the_same_log_probs``.
"""

from __future__ import annotations


def score_completion_tokens_only_on_cpu() -> bool:
    """Make TRL score only completion positions on CPU, as it does on CUDA.

    Replaces ``trl.trainer.utils._use_triton`` (a private name) once; returns
    whether the switch is in place.
    """
    try:
        from trl.trainer import utils as trl_utils
    except ImportError:
        return False
    original = getattr(trl_utils, "_use_triton", None)
    if original is None or getattr(original, "_evgrid_cpu_compact", False):
        return original is not None

    def use_compact(device):  # noqa: ANN001, ANN202
        return device.type == "cpu" or original(device)

    use_compact._evgrid_cpu_compact = True  # type: ignore[attr-defined]
    use_compact._evgrid_original = original  # type: ignore[attr-defined]  # TRL's own
    trl_utils._use_triton = use_compact
    return True
