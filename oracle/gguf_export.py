"""Hugging Face model dir -> GGUF (-> quantised GGUF), offline.

Conversion runs llama.cpp's own ``convert_hf_to_gguf.py`` with the ``gguf-py`` it
ships, both vendored in the llama-cpp-python 0.3.36 sdist (the PyPI ``gguf``
package does not match that converter). The sdist is fetched once by the set-up
step (``python3 -m oracle.gguf_export --fetch``, from PyPI) into ``.cache/oracle/``;
nothing is downloaded at test or export time. Quantisation uses the llama.cpp
library inside llama-cpp-python (``llama_model_quantize``).

    python3 -m oracle.gguf_export MODEL_DIR out.gguf --quant Q4_K_M
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from evgrid_core.optional import require

LLAMA_CPP_PYTHON_VERSION = "0.3.36"
# Built from source here: without this flag the wheel uses this CPU's instructions only.
LLAMA_CPP_NOTE = (
    'build it portable: CMAKE_ARGS="-DGGML_NATIVE=OFF" python3 -m pip install '
    f"llama-cpp-python=={LLAMA_CPP_PYTHON_VERSION}"
)
CACHE_DIR = Path(
    os.environ.get(
        "EVGRID_ORACLE_CACHE", Path(__file__).resolve().parents[1] / ".cache" / "oracle"
    )
)
_SDIST_NAME = f"llama_cpp_python-{LLAMA_CPP_PYTHON_VERSION}"
_VENDORED = (
    "convert_hf_to_gguf.py",
    "convert_lora_to_gguf.py",
    "conversion/",
    "gguf-py/",
)
# GGUF file types that llama_model_quantize can write (names as llama.cpp prints them).
QUANT_TYPES = ("Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q4_K_M", "Q5_K_M", "Q6_K")

# --- The vendored converter ----------------------------------------------------------------


def fetch_sdist(cache_dir: Path = CACHE_DIR) -> Path:
    """Download the llama-cpp-python sdist from PyPI into ``cache_dir/sdist`` (set-up only)."""
    dest = cache_dir / "sdist"
    found = sorted(dest.glob(f"{_SDIST_NAME}.tar.gz"))
    if found:
        return found[0]
    dest.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "-q",
            "--no-deps",
            f"llama-cpp-python=={LLAMA_CPP_PYTHON_VERSION}",
            "-d",
            str(dest),
        ],
        check=True,
    )
    return dest / f"{_SDIST_NAME}.tar.gz"


def converter_dir(cache_dir: Path = CACHE_DIR) -> Path:
    """The vendored llama.cpp dir holding ``convert_hf_to_gguf.py`` (extracted once)."""
    target = cache_dir / "llama.cpp-convert"
    scripts = [v for v in _VENDORED if v.endswith(".py")]
    if all((target / v).is_file() for v in scripts):
        return target
    tarball = cache_dir / "sdist" / f"{_SDIST_NAME}.tar.gz"
    if not tarball.is_file():
        raise FileNotFoundError(
            f"{tarball} is missing: run `python3 -m oracle.gguf_export --fetch` "
            "(or bash scripts/setup.sh test) once to fetch llama.cpp's converter"
        )
    prefix = f"{_SDIST_NAME}/vendor/llama.cpp/"
    tmp = Path(tempfile.mkdtemp(dir=cache_dir, prefix="extract-"))
    with tarfile.open(tarball) as tar:
        members = [
            m
            for m in tar.getmembers()
            if m.name.startswith(prefix)
            and m.name[len(prefix) :].startswith(_VENDORED)
            and (m.isfile() or m.isdir())
        ]
        for m in members:
            m.name = m.name[len(prefix) :]
        _extract_plain(tar, members, tmp)
    if target.exists():  # an older extraction lacking a script: replace it
        import shutil

        old = Path(tempfile.mkdtemp(dir=cache_dir, prefix="old-"))
        target.rename(old / target.name)
        shutil.rmtree(old)
    tmp.rename(target)  # atomic: a half-extracted dir is never used
    return target


def _extract_plain(
    tar: tarfile.TarFile, members: list[tarfile.TarInfo], dest: Path
) -> None:
    """Extract regular files and folders with relative, ``..``-free names only.

    ``extractall(filter="data")`` does this check too, but only from Python 3.11.4;
    Debian 12 ships 3.11.2, so the names are checked here and the filter is used
    where it exists.
    """
    for m in members:
        parts = Path(m.name).parts
        if not (m.isfile() or m.isdir()) or m.name.startswith("/") or ".." in parts:
            raise ValueError(f"refusing to extract {m.name!r} from {tar.name}")
    if hasattr(tarfile, "data_filter"):
        tar.extractall(dest, members=members, filter="data")
    else:  # Python < 3.11.4: members were checked above
        tar.extractall(dest, members=members)


def convert_hf_to_gguf(
    model_dir: str | Path,
    out_path: str | Path,
    *,
    outtype: str = "f16",
    cache_dir: Path = CACHE_DIR,
) -> Path:
    """Convert an HF model dir (safetensors + tokenizer) to one GGUF file.

    ``outtype``: f32, f16, bf16 or q8_0 (what the converter writes directly); use
    ``quantize_gguf`` for k-quants. Raises ``RuntimeError`` with the converter's
    output when it fails.
    """
    script = converter_dir(cache_dir) / "convert_hf_to_gguf.py"
    out = Path(out_path)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".part")
    env = {k: v for k, v in os.environ.items() if k != "NO_LOCAL_GGUF"}
    proc = subprocess.run(
        [
            sys.executable,
            str(script),
            str(model_dir),
            "--outfile",
            str(tmp),
            "--outtype",
            outtype,
        ],
        capture_output=True,
        text=True,
        env=env,
    )
    if proc.returncode != 0 or not tmp.is_file():
        tail = (proc.stdout + proc.stderr)[-3000:]
        raise RuntimeError(f"convert_hf_to_gguf failed ({proc.returncode}):\n{tail}")
    tmp.replace(out)
    return out


def convert_lora_to_gguf(
    adapter_dir: str | Path,
    out_path: str | Path,
    base_dir: str | Path,
    *,
    outtype: str = "f16",
    cache_dir: Path = CACHE_DIR,
) -> Path:
    """Convert a PEFT LoRA adapter to a GGUF adapter llama.cpp applies over the base.

    ``base_dir``: the HF dir of the base model (its config is what is read).
    """
    script = converter_dir(cache_dir) / "convert_lora_to_gguf.py"
    out = Path(out_path)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".part")
    env = {k: v for k, v in os.environ.items() if k != "NO_LOCAL_GGUF"}
    cmd = [sys.executable, str(script), str(adapter_dir), "--base", str(base_dir)]
    cmd += ["--outfile", str(tmp), "--outtype", outtype]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if proc.returncode != 0 or not tmp.is_file():
        tail = (proc.stdout + proc.stderr)[-3000:]
        raise RuntimeError(f"convert_lora_to_gguf failed ({proc.returncode}):\n{tail}")
    tmp.replace(out)
    return out


# --- Quantisation --------------------------------------------------------------------------


def _llama_cpp():
    return require("llama_cpp", "quantising GGUF files", "oracle",
                   package="llama-cpp-python", note=LLAMA_CPP_NOTE)  # fmt: skip


def quantize_gguf(
    src: str | Path,
    dst: str | Path,
    quant: str = "Q4_K_M",
    *,
    threads: int = 0,
    allow_requantize: bool = False,
) -> Path:
    """Quantise a GGUF to ``quant`` with llama.cpp's quantiser.

    The source is f32/f16/bf16, or already quantised with ``allow_requantize``
    (each tensor is dequantised first: a second rounding, so only for bases that
    ship quantised, like SmolLM2's Q4_1).
    """
    if quant not in QUANT_TYPES:
        raise ValueError(f"unknown quant {quant!r}; choose one of {QUANT_TYPES}")
    llama_cpp = _llama_cpp()
    import ctypes

    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = getattr(llama_cpp, f"LLAMA_FTYPE_MOSTLY_{quant}")
    params.nthread = threads
    params.allow_requantize = allow_requantize
    out = Path(dst)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".part")
    rc = llama_cpp.llama_model_quantize(
        str(src).encode(), str(tmp).encode(), ctypes.byref(params)
    )
    if rc != 0 or not tmp.is_file():
        raise RuntimeError(f"llama_model_quantize({src} -> {quant}) returned {rc}")
    tmp.replace(out)
    return out


def export_gguf(
    model_dir: str | Path,
    out_path: str | Path,
    *,
    quant: str | None = "Q4_K_M",
    cache_dir: Path = CACHE_DIR,
) -> Path:
    """HF model dir -> GGUF at ``out_path``, quantised to ``quant`` (None: keep f16).

    A merged model -> Q4_K_M for ``evgrid compare --model`` (``python3 -m
    oracle.gguf_export``); the shipped Oracle is a LoRA GGUF (``convert_lora_to_gguf``).
    """
    out = Path(out_path)
    if quant is None:
        return convert_hf_to_gguf(model_dir, out, outtype="f16", cache_dir=cache_dir)
    f16 = out.with_name(out.stem + ".f16.gguf")
    try:
        convert_hf_to_gguf(model_dir, f16, outtype="f16", cache_dir=cache_dir)
        return quantize_gguf(f16, out, quant)
    finally:
        f16.unlink(missing_ok=True)


# --- Command line --------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python3 -m oracle.gguf_export", description=__doc__.splitlines()[0]
    )
    p.add_argument("model_dir", nargs="?", help="HF model dir (safetensors)")
    p.add_argument("out", nargs="?", help="GGUF file to write")
    p.add_argument("--quant", default="Q4_K_M", help="Q4_K_M (default) or 'none'")
    p.add_argument(
        "--fetch",
        action="store_true",
        help="only fetch and extract llama.cpp's converter (from PyPI)",
    )
    args = p.parse_args(argv)
    if args.fetch:
        fetch_sdist()
        print(converter_dir())
        return 0
    if not (args.model_dir and args.out):
        p.error("MODEL_DIR and OUT are required (or --fetch)")
    quant = None if args.quant.lower() == "none" else args.quant
    print(export_gguf(args.model_dir, args.out, quant=quant))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


def merge_lora_gguf(
    base: str | Path, adapter: str | Path, dst: str | Path, quant: str = "Q8_0"
) -> Path:
    """A GGUF with a LoRA adapter GGUF folded into its weights, quantised to ``quant``.

    Each adapted matrix becomes ``W + alpha/r * B @ A`` (``W`` dequantised from the
    base, ``A`` and ``B`` the adapter's ``.lora_a``/``.lora_b``); every other tensor and
    every metadata field is copied. The sum is written as f32 and llama.cpp's own
    quantiser rounds it once. llama.cpp then runs one set of weights instead of the
    base plus the adapter's two extra products per matrix (a faster decision).
    """
    import numpy as np
    from gguf import GGMLQuantizationType, GGUFReader, GGUFValueType, GGUFWriter
    from gguf.quants import dequantize

    lora = GGUFReader(str(adapter))
    if bytes(lora.fields["adapter.type"].parts[-1]).decode() != "lora":
        raise ValueError(f"{adapter} is not a LoRA adapter GGUF")
    alpha = float(lora.fields["adapter.lora.alpha"].parts[-1][0])
    pairs: dict[str, dict[str, np.ndarray]] = {}
    for t in lora.tensors:
        name, _, part = t.name.rpartition(".")
        pairs.setdefault(name, {})[part] = dequantize(t.data, t.tensor_type)
    reader = GGUFReader(str(base))
    arch = bytes(reader.fields["general.architecture"].parts[-1]).decode()
    out = Path(dst)
    out.parent.mkdir(parents=True, exist_ok=True)
    f32 = out.with_name(out.name + ".f32.part")
    writer = GGUFWriter(str(f32), arch)
    for field in reader.fields.values():
        if field.name.startswith("GGUF.") or field.name in (
            "general.architecture",
            "general.file_type",
        ):
            continue
        vtype = GGUFValueType(field.types[0])
        sub = GGUFValueType(field.types[-1]) if vtype == GGUFValueType.ARRAY else None
        writer.add_key_value(field.name, field.contents(), vtype, sub_type=sub)
    done = set()
    for t in reader.tensors:
        w = dequantize(t.data, t.tensor_type).astype(np.float32)
        ab = pairs.get(t.name)
        if ab is not None:
            a, b = ab["lora_a"], ab["lora_b"]  # (r, in), (out, r)
            w = w + (alpha / a.shape[0]) * (b.astype(np.float32) @ a.astype(np.float32))
            done.add(t.name)
        writer.add_tensor(t.name, w, raw_dtype=GGMLQuantizationType.F32)
    if done != set(pairs):
        raise ValueError(
            f"adapter tensors with no base tensor: {sorted(set(pairs) - done)}"
        )
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    try:
        return quantize_gguf(f32, out, quant)
    finally:
        f32.unlink(missing_ok=True)
