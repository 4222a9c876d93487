"""The shipped adapter's GGUF back to PEFT (training.gguf_adapter): a round trip.

A PEFT LoRA over SmolLM2 (llama architecture, whose query and key rows llama.cpp's
converter permutes) with random weights goes to GGUF through the same converter
``sft_ship`` uses, and comes back: every tensor equal (f16 rounding aside).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from training.config import load_config
from training.gguf_adapter import unpermute


def test_unpermute_inverts_llama_cpps_permute() -> None:
    def permute(w: np.ndarray, n_head: int) -> np.ndarray:  # llama.cpp's, as written
        return (w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:])
                .swapaxes(1, 2).reshape(w.shape))  # fmt: skip

    w = np.arange(64 * 3, dtype=np.float32).reshape(64, 3)
    for heads in (1, 2, 4, 8):
        assert np.array_equal(unpermute(permute(w, heads), heads), w)
        assert heads == 1 or not np.array_equal(permute(w, heads), w)


@pytest.mark.slow
def test_peft_to_gguf_and_back_gives_the_same_tensors(tmp_path) -> None:
    pytest.importorskip("peft", reason="needs the train extra")
    import torch
    from peft import get_peft_model, get_peft_model_state_dict
    from safetensors.torch import load_file

    from oracle.gguf_export import convert_lora_to_gguf
    from training.gguf_adapter import gguf_to_peft
    from training.model import base_model_path, load_model, lora_config

    base = load_config("cpu-smollm2")
    cfg = dataclasses.replace(
        base, model=dataclasses.replace(base.model, lora_layers=2)
    )
    model, _, _ = load_model(base_model_path(cfg), cfg, "cpu", train_dtype="float32")
    peft = get_peft_model(model, lora_config(cfg, model.config.num_hidden_layers))
    torch.manual_seed(0)
    with torch.no_grad():
        for name, p in peft.named_parameters():
            if "lora_" in name:
                p.copy_(torch.randn_like(p) * 0.05)
    peft.save_pretrained(str(tmp_path / "peft"))
    gguf = convert_lora_to_gguf(tmp_path / "peft", tmp_path / "a.gguf",
                                base_model_path(cfg), outtype="f32")  # fmt: skip
    back = gguf_to_peft(cfg, gguf, tmp_path / "back")
    want = get_peft_model_state_dict(peft)
    got = load_file(back / "adapter_model.safetensors")
    assert set(got) == set(want)
    for k in want:
        np.testing.assert_allclose(
            got[k].numpy(), want[k].numpy(), atol=1e-6, err_msg=k
        )
