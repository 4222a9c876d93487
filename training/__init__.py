"""Training the Oracle: decision-state data, environment-verified rewards, SFT + GRPO
(TRL), LoRA merge and GGUF export. Heavy packages (torch, transformers, trl, peft)
are imported inside the functions that use them; ``pip install -e '.[train]'``."""
