"""GRPO with TRL's ``GRPOTrainer`` and the environment's own rewards (``rewards.py``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .config import TrainConfig
from .data import StateCache
from .model import load_model, lora_config, merge_and_save, trainer_precision
from .patches import score_completion_tokens_only_on_cpu
from .rewards import EnvRewards

REPLAY_COLUMNS = ("scenario", "seed", "step", "generator")


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
