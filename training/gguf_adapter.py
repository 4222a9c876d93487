"""The shipped LoRA adapter (GGUF) back into a PEFT adapter: where RL starts from.

``oracle/weights/oracle-smollm2-lora.gguf`` is what ``training.sft_ship`` made of a
PEFT adapter with llama.cpp's converter; the PEFT folder itself is not committed.
This reads the GGUF's ``lora_a`` / ``lora_b`` pairs back, undoes the converter's
one change (for the llama architecture it permutes the rows of the query and key
projections for its rotary layout, so their ``lora_b`` rows come back un-permuted)
and writes them into a PEFT LoRA of the preset's shape (``model.lora_r``,
``lora_alpha``, ``lora_layers``) over the HF base.

    python3 -m training.gguf_adapter --config cpu-smollm2 --out runs/shipped-adapter

The round trip is checked in ``tests/training/test_training_gguf_adapter.py``
(PEFT -> GGUF -> PEFT gives the same tensors).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import numpy as np

from .config import TrainConfig

# llama.cpp's tensor names -> the HF module path of one decoder block
MODULES = {
    "attn_q": "self_attn.q_proj",
    "attn_k": "self_attn.k_proj",
    "attn_v": "self_attn.v_proj",
    "attn_output": "self_attn.o_proj",
    "ffn_gate": "mlp.gate_proj",
    "ffn_up": "mlp.up_proj",
    "ffn_down": "mlp.down_proj",
}


def unpermute(rows: np.ndarray, n_head: int) -> np.ndarray:
    """The inverse of llama.cpp's ``LlamaModel.permute`` on a matrix's rows."""
    d = rows.shape[0]
    return (rows.reshape(n_head, d // n_head // 2, 2, *rows.shape[1:])
            .swapaxes(1, 2).reshape(rows.shape))  # fmt: skip


def read_pairs(path: Path) -> tuple[float, str, dict[str, dict[str, np.ndarray]]]:
    """The adapter's alpha, its architecture and its (lora_a, lora_b) per llama.cpp
    tensor name."""
    from gguf import GGUFReader
    from gguf.quants import dequantize

    reader = GGUFReader(str(path))
    if bytes(reader.fields["adapter.type"].parts[-1]).decode() != "lora":
        raise ValueError(f"{path} is not a LoRA adapter GGUF")
    alpha = float(reader.fields["adapter.lora.alpha"].parts[-1][0])
    arch = bytes(reader.fields["general.architecture"].parts[-1]).decode()
    pairs: dict[str, dict[str, np.ndarray]] = {}
    for t in reader.tensors:
        name, _, part = t.name.rpartition(".")
        pairs.setdefault(name, {})[part] = np.asarray(
            dequantize(t.data, t.tensor_type), dtype=np.float32
        )
    return alpha, arch, pairs


def peft_state(
    pairs: dict[str, dict[str, np.ndarray]], config: Any, arch: str
) -> dict[str, Any]:
    """PEFT's saved state-dict keys and tensors for the GGUF's pairs (``arch``: the
    GGUF's architecture; llama.cpp permutes the query and key rows for "llama")."""
    import torch

    heads, kv_heads = config.num_attention_heads, config.num_key_value_heads
    out = {}
    for name, ab in pairs.items():
        blk, i, kind, _ = name.split(".")  # blk.N.attn_q.weight
        if blk != "blk" or kind not in MODULES:
            raise ValueError(f"unexpected adapter tensor {name}")
        b = ab["lora_b"]
        if arch == "llama" and kind in ("attn_q", "attn_k"):
            b = unpermute(b, heads if kind == "attn_q" else kv_heads)
        key = f"base_model.model.model.layers.{i}.{MODULES[kind]}"
        out[f"{key}.lora_A.weight"] = torch.from_numpy(
            np.array(ab["lora_a"], copy=True)
        )
        out[f"{key}.lora_B.weight"] = torch.from_numpy(np.array(b, copy=True))
    return out


def gguf_to_peft(cfg: TrainConfig, gguf_path: Path, out: Path) -> Path:
    """Write the GGUF adapter as a PEFT adapter folder in ``out``; checks that every
    tensor found its module and that alpha and r are the preset's."""
    from peft import (
        get_peft_model,
        get_peft_model_state_dict,
        set_peft_model_state_dict,
    )

    from .model import base_model_path, load_model, lora_config

    alpha, arch, pairs = read_pairs(gguf_path)
    model, _, _ = load_model(base_model_path(cfg), cfg, "cpu", train_dtype="float32")
    peft = get_peft_model(model, lora_config(cfg, model.config.num_hidden_layers))
    r = next(iter(pairs.values()))["lora_a"].shape[0]
    if (r, alpha) != (cfg.model.lora_r, cfg.model.lora_alpha):
        raise ValueError(f"the adapter has r={r}, alpha {alpha:g}; the preset "
                         f"r={cfg.model.lora_r}, alpha {cfg.model.lora_alpha}")  # fmt: skip
    state = peft_state(pairs, model.config, arch)
    want = set(get_peft_model_state_dict(peft))
    if set(state) != want:
        raise ValueError(f"tensors without a module: {sorted(set(state) - want)[:4]}; "
                         f"modules without a tensor: {sorted(want - set(state))[:4]}")  # fmt: skip
    result = set_peft_model_state_dict(peft, state)
    if getattr(result, "unexpected_keys", None):
        raise ValueError(f"not loaded: {result.unexpected_keys[:4]}")
    out.mkdir(parents=True, exist_ok=True)
    peft.save_pretrained(str(out))
    return out


def main(argv: list[str] | None = None) -> int:
    from oracle.shipped import SHIPPED_ADAPTER

    from .config import load_config

    p = argparse.ArgumentParser(
        prog="python3 -m training.gguf_adapter", description=__doc__.splitlines()[0]
    )
    p.add_argument("--config", default="cpu-smollm2", help="the adapter's preset")
    p.add_argument("--adapter", type=Path, default=SHIPPED_ADAPTER, help="LoRA GGUF")
    p.add_argument("--out", type=Path, required=True, help="PEFT adapter folder")
    args = p.parse_args(argv)
    print(gguf_to_peft(load_config(args.config), args.adapter, args.out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
