"""Where the shipped Oracle's files live: its LoRA adapter and the record of how it
is asked (``oracle/weights/``, written by ``evgrid train``'s ship stage)."""

from __future__ import annotations

from pathlib import Path

WEIGHTS_DIR = Path(__file__).parent / "weights"
SHIPPED_ADAPTER = WEIGHTS_DIR / "oracle-smollm2-lora.gguf"  # see weights/TRAINING.md
SHIPPED_PROMPT = WEIGHTS_DIR / "oracle.json"  # how the shipped adapter was asked
