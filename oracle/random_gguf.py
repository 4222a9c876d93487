"""Random-weight GGUFs shaped like real Qwen2.5 models, to measure what they cost.

A real Qwen2.5-3B cannot be downloaded here, but its cost per decision depends only
on its shape and quantisation. ``write_random_qwen_gguf`` streams a Qwen2-architecture
f16 GGUF of any ``QWEN25_SHAPES`` entry tensor by tensor (memory: one tensor), with
the real Qwen2.5 tokenizer copied from the tiny model's GGUF; ``quantize_gguf``
then makes the Q4_K_M that a trained Oracle would ship as.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from .gguf_export import CACHE_DIR, converter_dir, quantize_gguf

# Published configs (hidden, layers, heads, kv heads, ffn) of Qwen2.5-Instruct models.
QWEN25_SHAPES: dict[str, dict[str, int]] = {
    "0.5b": {"hidden": 896, "layers": 24, "heads": 14, "kv_heads": 2, "ffn": 4864},
    "1.5b": {"hidden": 1536, "layers": 28, "heads": 12, "kv_heads": 2, "ffn": 8960},
    "3b": {"hidden": 2048, "layers": 36, "heads": 16, "kv_heads": 2, "ffn": 11008},
}
VOCAB = 151_936
POOL = 1 << 24  # random values drawn once per file


def _gguf_module():
    """The gguf-py vendored with llama.cpp's converter (matches its format)."""
    path = str(converter_dir() / "gguf-py")
    if path not in sys.path:
        sys.path.insert(0, path)
    import gguf

    return gguf


def _tensor_plan(shape: dict[str, int]) -> list[tuple[str, tuple[int, ...], type]]:
    h, f = shape["hidden"], shape["ffn"]
    kv = shape["kv_heads"] * (h // shape["heads"])
    plan: list[tuple[str, tuple[int, ...], type]] = [
        ("token_embd.weight", (VOCAB, h), np.float16),
        ("output_norm.weight", (h,), np.float32),
    ]
    for i in range(shape["layers"]):
        b = f"blk.{i}."
        plan += [
            (b + "attn_norm.weight", (h,), np.float32),
            (b + "attn_q.weight", (h, h), np.float16),
            (b + "attn_q.bias", (h,), np.float32),
            (b + "attn_k.weight", (kv, h), np.float16),
            (b + "attn_k.bias", (kv,), np.float32),
            (b + "attn_v.weight", (kv, h), np.float16),
            (b + "attn_v.bias", (kv,), np.float32),
            (b + "attn_output.weight", (h, h), np.float16),
            (b + "ffn_norm.weight", (h,), np.float32),
            (b + "ffn_gate.weight", (f, h), np.float16),
            (b + "ffn_up.weight", (f, h), np.float16),
            (b + "ffn_down.weight", (h, f), np.float16),
        ]
    return plan


def write_random_qwen_gguf(
    out_path: str | Path, tokenizer_gguf: str | Path, size: str = "3b", seed: int = 0
) -> Path:
    """Write an f16 Qwen2.5-``size``-shaped GGUF with random weights.

    ``tokenizer_gguf``: any GGUF with the Qwen2.5 tokenizer (the tiny model's).
    Norm weights are ones, biases zeros, matrices N(0, 0.02) values taken from a
    pool of ``POOL`` draws at a random offset per tensor (cost does not depend on
    the values, and drawing 3 billion normals takes minutes here).
    """
    gguf = _gguf_module()
    shape = QWEN25_SHAPES[size]
    out = Path(out_path)
    tmp = out.with_name(out.name + ".part")
    reader = gguf.GGUFReader(str(tokenizer_gguf))
    writer = gguf.GGUFWriter(str(tmp), "qwen2")
    writer.add_name(f"random Qwen2.5-{size}-shaped")
    writer.add_context_length(32_768)
    writer.add_embedding_length(shape["hidden"])
    writer.add_block_count(shape["layers"])
    writer.add_feed_forward_length(shape["ffn"])
    writer.add_head_count(shape["heads"])
    writer.add_head_count_kv(shape["kv_heads"])
    writer.add_rope_freq_base(1_000_000.0)
    writer.add_layer_norm_rms_eps(1e-6)
    writer.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    for key, field in reader.fields.items():
        if key.startswith("tokenizer."):
            sub = field.types[1] if len(field.types) > 1 else None
            writer.add_key_value(key, field.contents(), field.types[0], sub)
    plan = _tensor_plan(shape)
    for name, dims, dtype in plan:
        nbytes = int(np.prod(dims)) * np.dtype(dtype).itemsize
        writer.add_tensor_info(name, dims, np.dtype(dtype), nbytes)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    rng = np.random.default_rng(seed)
    pool = (rng.standard_normal(POOL, dtype=np.float32) * 0.02).astype(np.float16)
    for name, dims, dtype in plan:
        if name.endswith("norm.weight"):
            data = np.ones(dims, dtype=dtype)
        elif name.endswith(".bias"):
            data = np.zeros(dims, dtype=dtype)
        else:  # a random stretch of the pool, wrapped: drawing billions is slow
            start = int(rng.integers(POOL))
            data = np.resize(np.roll(pool, -start), dims).astype(dtype)
        writer.write_tensor_data(data)
        del data
    writer.close()
    tmp.replace(out)
    return out


def random_qwen_q4km(
    tokenizer_gguf: str | Path, size: str = "3b", cache_dir: Path = CACHE_DIR
) -> Path:
    """A cached random-weight Qwen2.5-``size``-shaped Q4_K_M GGUF (f16 removed after)."""
    q4 = cache_dir / f"random-qwen2.5-{size}-Q4_K_M.gguf"
    if q4.is_file():
        return q4
    f16 = cache_dir / f"random-qwen2.5-{size}-f16.gguf"
    try:
        if not f16.is_file():
            write_random_qwen_gguf(f16, tokenizer_gguf, size)
        return quantize_gguf(f16, q4, "Q4_K_M")
    finally:
        f16.unlink(missing_ok=True)
