"""SFT warm start: teach the model the answer format on expert decisions.

GRPO on a model that never writes a valid action gets the same reward for every
completion of a group: zero advantage, zero gradient. A short supervised pass on
the expert heuristic's decisions (prompt -> one action line) fixes that.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .config import TrainConfig
from .model import load_model, lora_config, merge_and_save, trainer_precision


def run_sft(
    cfg: TrainConfig, base_path: str, rows: list[dict[str, Any]], device: str
) -> tuple[Path, list[dict[str, Any]]]:
    """Train on ``rows`` (prompt/completion messages); returns the merged model dir."""
    from datasets import Dataset
    from trl import SFTConfig, SFTTrainer

    out = cfg.out / "sft"
    s = cfg.sft
    model, tok, has_lora = load_model(base_path, cfg, device)
    data = Dataset.from_list(
        [{"prompt": r["prompt"], "completion": r["completion"]} for r in rows]
    )
    args = SFTConfig(
        output_dir=str(cfg.out / "sft-run"),
        max_steps=s.steps,
        learning_rate=s.learning_rate,
        per_device_train_batch_size=s.batch_size,
        gradient_accumulation_steps=s.grad_accum,
        max_length=cfg.model.max_seq_length,
        logging_steps=max(1, s.steps // 20),
        save_strategy="no",
        report_to=[],
        seed=cfg.seed,
        lr_scheduler_type="constant",
        warmup_steps=0,
        **trainer_precision(device),
    )
    peft = None if (s.full_finetune or has_lora) else lora_config(cfg)
    trainer = SFTTrainer(
        model=model,
        args=args,
        train_dataset=data,
        processing_class=tok,
        peft_config=peft,
    )
    trainer.train()
    merge_and_save(trainer.model, tok, out)
    return out, list(trainer.state.log_history)
