#!/usr/bin/env bash
# The gpu-small preset on one lent GPU, a few minutes: SFT -> GRPO -> held-out
# validity and KPIs of the trained HF model vs the heuristics (no GGUF export: the
# lent machine has no llama-cpp-python; the CPU smoke run covers export).
# Figures land in $OUT (default .cache/gpu-smoke): log.txt, summary.json,
# grpo.csv, grpo.png, sft.csv.
# Wheels the machine lacks (trl, datasets, ...) travel in .whl/ (see the README).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-.cache/gpu-smoke}"
mkdir -p "$OUT"
if ls .whl/*.whl >/dev/null 2>&1; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
        --upgrade --target /tmp/site .whl/*.whl || exit 1
    export PYTHONPATH="/tmp/site:$PWD"
fi
export PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | tee "$OUT/log.txt"
python3 -c "import torch, transformers, trl, peft; print('torch', torch.__version__, \
'transformers', transformers.__version__, 'trl', trl.__version__, 'peft', \
peft.__version__)" 2>&1 | tee -a "$OUT/log.txt"
RUN=/tmp/evgrid-gpu-small
python3 -m training --config gpu-small --stages data,sft,grpo,eval \
    --output-dir "$RUN" "$@" 2>&1 | grep -v -i -E "warn|Loading weights|Writing model" \
    | tee -a "$OUT/log.txt"
rc=${PIPESTATUS[0]}
for f in summary.json logs/grpo.csv logs/grpo.png logs/sft.csv; do
    [ -f "$RUN/$f" ] && cp "$RUN/$f" "$OUT/$(basename "$f")"
done
exit "$rc"
