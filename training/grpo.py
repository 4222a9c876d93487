"""GRPO with TRL's ``GRPOTrainer`` and the environment's own rewards (``rewards.py``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .config import TrainConfig
from .data import StateCache
from .model import load_model, lora_config, merge_and_save, trainer_precision
from .rewards import EnvRewards

REPLAY_COLUMNS = ("scenario", "seed", "step", "generator")


def score_completion_tokens_only_on_cpu() -> bool:
    """Make TRL score only completion positions on CPU, as it does on CUDA.

    TRL 1.16's fused log-prob path scores every position (the ~600 prompt tokens
    too, against Qwen's 151,936-token vocabulary) when Triton is absent, to avoid
    recompiling on accelerators with static shapes. Eager CPU has no such cost, so
    the compact path (completion tokens only, torch tiles) is ~40x cheaper and gives
    the same log-probs. Returns whether the switch was made (private TRL name).
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
    trl_utils._use_triton = use_compact
    return True


def run_grpo(
    cfg: TrainConfig, start_path: str, rows: list[dict[str, Any]], device: str
) -> tuple[Path, list[dict[str, Any]], Any]:
    """Train with GRPO from ``start_path``; returns (merged dir, log history, model)."""
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    g = cfg.grpo
    if device == "cpu":
        score_completion_tokens_only_on_cpu()
    model, tok, has_lora = load_model(start_path, cfg, device)
    data = Dataset.from_list(
        [{"prompt": r["prompt"], **{k: r[k] for k in REPLAY_COLUMNS}} for r in rows]
    )
    rewards = EnvRewards(cfg.reward, StateCache())
    args = GRPOConfig(
        output_dir=str(cfg.out / "grpo-run"),
        max_steps=g.steps,
        learning_rate=g.learning_rate,
        per_device_train_batch_size=g.batch_size,
        gradient_accumulation_steps=g.grad_accum,
        num_generations=g.num_generations,
        max_completion_length=g.max_completion_length,
        temperature=g.temperature,
        beta=g.beta,
        reward_weights=rewards.weights(),
        logging_steps=g.logging_steps,
        save_strategy="no",
        report_to=[],
        seed=cfg.seed,
        lr_scheduler_type="constant",
        warmup_steps=0,
        **trainer_precision(device),
    )
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=rewards.functions(),
        args=args,
        train_dataset=data,
        processing_class=tok,
        peft_config=None
        if has_lora
        else lora_config(cfg, model.config.num_hidden_layers),
    )
    trainer.train()
    merged = merge_and_save(trainer.model, tok, cfg.out / "merged", start_path)
    return merged, list(trainer.state.log_history), trainer.model
