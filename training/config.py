"""Training configuration: frozen dataclasses with units, loaded from a TOML preset.

A preset file (``training/configs/<name>.toml``) has one table per section below;
keys it leaves out keep the defaults here. Override in code with
``dataclasses.replace``, never by mutating a loaded config.
"""

from __future__ import annotations

import dataclasses
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evaluation.plan_options import (
    DEFAULT_MAX_DEFER_MIN,
    DEFAULT_NODE_LIMIT,
    DEFAULT_STATIONS_PER_KIND,
    DEFAULT_TIME_LIMIT_S,
)

CONFIG_DIR = Path(__file__).parent / "configs"
REPO_ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True, slots=True)
class ModelConfig:
    # "smollm2" (SmolLM2-135M-Instruct, pretrained, offline: oracle.smollm2),
    # "tiny" (random, built offline by oracle.tiny_model) or an HF id / dir
    source: str = "tiny"
    tiny_hidden: int = 64  # width of the tiny model (source = "tiny" only)
    tiny_layers: int = 2  # layers of the tiny model (source = "tiny" only)
    max_seq_length: int = 1024  # [tokens] prompt + completion
    lora_r: int = 8  # LoRA rank for GRPO (and for SFT unless full_finetune)
    lora_alpha: int = 16
    lora_dropout: float = 0.0
    lora_layers: int = 0  # LoRA on the top N transformer layers only (0: all); the
    # backward pass then stops below them, so a CPU step costs less
    load_in_4bit: bool = False  # QLoRA (CUDA only; via Unsloth or bitsandbytes)
    unsloth: str = "auto"  # auto: use Unsloth on CUDA when it imports | never | require


@dataclass(frozen=True, slots=True)
class DataConfig:
    scenarios: tuple[str, ...] = ("evening_peak", "heatwave", "festival_surge")
    train_seeds: tuple[int, int] = (0, 32)  # [first, last) episode seeds used to train
    heldout_seeds: tuple[int, int] = (900_000, 900_004)  # never used to train
    # Held-out validity: states generator plays on heldout_seeds, this many an episode
    states_per_episode: int = 8
    generator: str = "greedy_eta"  # policy that plays the episode up to each state
    prompt_stations: int = 8  # stations listed in the prompt (training and inference)
    # Optimum labels (training.oracle_sft): rows of train_seeds train, rows of these
    # [first, last) seeds measure agreement with the optimum (never trained on).
    label_eval_seeds: tuple[int, int] = (0, 0)  # empty: none
    # States the learner meets but the optimum never shows (queues that build when
    # a decision is not the optimum's): this policy plays played_seeds [first, last)
    # of every scenario and each of its decision states becomes a training row with
    # its own pick as the answer (training.oracle_sft). "": none.
    played_generator: str = ""
    played_seeds: tuple[int, int] = (0, 0)
    played_per_episode: int = 0  # decision states kept per episode; 0: all
    # How the decision prompt's options read (oracle.prompt.PROMPT_STYLES); the
    # shipped adapter's style is recorded beside it (oracle/weights/oracle.json).
    prompt_style: str = "v1"
    # The style the shipped Oracle is asked in, if not the one it was trained on
    # (written to oracle/weights/oracle.json by --ship): "v1+on_time" serves a v1
    # adapter with the late ROUTEs left out. "": prompt_style.
    serve_prompt_style: str = ""


@dataclass(frozen=True, slots=True)
class SFTConfig:
    steps: int = 60  # [optimizer steps]; 0 skips the warm start
    learning_rate: float = 2e-4
    batch_size: int = 8  # [rows per device step]
    grad_accum: int = 1
    full_finetune: bool = False  # train all weights instead of a LoRA adapter
    warmup_steps: int = 0  # [optimizer steps] linear warm-up from 0 to learning_rate
    lr_schedule: str = "constant"  # after warm-up: constant | cosine (decay to 0)
    adam_epsilon: float = 1e-8  # AdamW eps; see cpu-smoke.toml for why it can matter
    max_grad_norm: float = 1.0  # gradient clipping (global L2 norm)
    checkpoint_every: int = 0  # [optimizer steps] resumable checkpoints (oracle_sft)
    eval_every: int = 0  # [optimizer steps] held-out figures in the log (oracle_sft)
    eval_states: int = 48  # held-out states per figure during training (oracle_sft)
    final_eval_states: int = 400  # held-out optimum states scored at the end
    # training.oracle_sft only: a share of the letter's loss taken against the
    # distilled policy's soft choice over the listed options (softmax of its scores
    # / temperature) instead of the optimum's one letter. 0: the optimum's only.
    teacher_weight: float = 0.0
    teacher_temperature: float = 1.0
    # The teacher's tree file, relative to the repository ("": the committed
    # distilled policy, evgrid_core/data/distilled.json).
    teacher_model: str = ""


@dataclass(frozen=True, slots=True)
class GRPOConfig:
    steps: int = 0  # [optimizer steps]; 0 skips GRPO
    learning_rate: float = 5e-5
    batch_size: int = 8  # [completions per device step]; a multiple of num_generations
    grad_accum: int = 1
    num_generations: int = 4  # completions per prompt (the group)
    temperature: float = 1.0
    beta: float = 0.0  # TRL's KL weight; must be 0 with an adapter (oracle_grpo)
    logging_steps: int = 1
    # training.oracle_grpo only: held-out figures and resumable checkpoints
    eval_every: int = 0  # [optimizer steps]
    save_every: int = 0  # [optimizer steps]


@dataclass(frozen=True, slots=True)
class RLConfig:
    """Expert iteration on the letter prompt (``training/oracle_rl.py``).

    The model's own letters, sampled on states a policy plays, are scored by the
    environment (each applied on a copy of the state, then ``continuation`` plays
    ``horizon_ticks`` more); the best scored letter is the next SFT target.
    """

    generator: str = "distilled"  # plays the episodes the states come from
    seeds: tuple[int, int] = (0, 25)  # [first, last) training seeds of those episodes
    eval_seeds: tuple[int, int] = (30, 35)  # states the gain is measured on
    states_per_episode: int = 24  # decision states per (scenario, seed), spread evenly
    eval_states_per_episode: int = 8
    samples: int = 4  # letters drawn from the model per state (and its greedy one)
    temperature: float = 1.0  # of the draw over the listed letters
    horizon_ticks: int = (
        1000  # [ticks] of the continuation after the letter (to the end)
    )
    continuation: str = "distilled"  # plays after the scored letter
    margin: float = 0.05  # [reward] a drawn letter must beat the greedy one by this
    steps: int = 200  # [optimizer steps] of SFT on the improved targets
    learning_rate: float = 1e-4
    batch_size: int = 8
    optimum_share: float = 0.5  # of each batch from the optimum's rows (no forgetting)


@dataclass(frozen=True, slots=True)
class LabelsConfig:
    """The hindsight optimum's labels, ``evgrid train``'s first stage (``evgrid
    labels``' settings and defaults, ``evaluation.plan_options``)."""

    node_limit: int = DEFAULT_NODE_LIMIT  # HiGHS nodes per solve (0: the MIP start)
    time_limit_s: float = DEFAULT_TIME_LIMIT_S  # [s] safety net per solve
    stations_per_kind: int = DEFAULT_STATIONS_PER_KIND
    max_defer_min: int = DEFAULT_MAX_DEFER_MIN  # [min]
    workers: int = 1  # solver processes

    def settings(self) -> dict[str, Any]:
        """``solve_episode``'s keyword arguments."""
        return {"node_limit": self.node_limit, "time_limit_s": self.time_limit_s,
                "stations_per_kind": self.stations_per_kind,
                "max_defer_min": self.max_defer_min}  # fmt: skip


@dataclass(frozen=True, slots=True)
class TrainConfig:
    name: str = "custom"
    output_dir: str = ".cache/train/custom"  # relative to the repository root
    seed: int = 0  # tiny model's init, data order, torch/numpy/random, TRL
    device: str = "auto"  # auto | cpu | cuda
    torch_threads: int = 0  # CPU threads for torch; 0 keeps torch's default
    deterministic: bool = False  # torch.use_deterministic_algorithms during the run
    model: ModelConfig = field(default_factory=ModelConfig)
    data: DataConfig = field(default_factory=DataConfig)
    sft: SFTConfig = field(default_factory=SFTConfig)
    grpo: GRPOConfig = field(default_factory=GRPOConfig)
    rl: RLConfig = field(default_factory=RLConfig)
    labels: LabelsConfig = field(default_factory=LabelsConfig)

    @property
    def out(self) -> Path:
        p = Path(self.output_dir)
        return p if p.is_absolute() else REPO_ROOT / p


_SECTIONS = {
    "model": ModelConfig,
    "data": DataConfig,
    "sft": SFTConfig,
    "grpo": GRPOConfig,
    "rl": RLConfig,
    "labels": LabelsConfig,
}


def preset_names() -> list[str]:
    return sorted(p.stem for p in CONFIG_DIR.glob("*.toml"))


def resolve_config_path(name_or_path: str | Path) -> Path:
    """A preset name (``cpu-smoke``) or a path to a TOML file."""
    p = Path(name_or_path)
    if p.suffix == ".toml" and p.exists():
        return p
    preset = CONFIG_DIR / f"{name_or_path}.toml"
    if preset.exists():
        return preset
    raise ValueError(
        f"no config {str(name_or_path)!r}: give a TOML file or one of the presets "
        f"{', '.join(preset_names())}"
    )


def _build(cls: type, table: dict[str, Any], where: str) -> Any:
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(table) - set(fields))
    if unknown:
        raise ValueError(f"[{where}] unknown key(s): {', '.join(unknown)}")
    kwargs = {}
    for key, value in table.items():
        kwargs[key] = tuple(value) if isinstance(value, list) else value
    return cls(**kwargs)


def config_from_dict(raw: dict[str, Any]) -> TrainConfig:
    top = {k: v for k, v in raw.items() if k not in _SECTIONS}
    sections = {
        k: _build(cls, raw.get(k, {}), k) for k, cls in _SECTIONS.items() if k in raw
    }
    cfg = _build(TrainConfig, top, "top level")
    cfg = dataclasses.replace(cfg, **sections)
    check_config(cfg)
    return cfg


def load_config(name_or_path: str | Path) -> TrainConfig:
    """Load a preset by name or a TOML file by path; unknown keys are errors."""
    path = resolve_config_path(name_or_path)
    with path.open("rb") as f:
        return config_from_dict(tomllib.load(f))


def check_config(cfg: TrainConfig) -> None:
    """Reject settings TRL would only reject minutes later."""
    _check_grpo(cfg.grpo)
    _check_seed_ranges(cfg)
    _check_prompt_styles(cfg.data)
    _check_choices(cfg)


def _overlap(a: tuple[int, int], b: tuple[int, int]) -> bool:
    """Whether two [first, last) seed ranges share a seed (an empty one shares none)."""
    return a[0] < a[1] and b[0] < b[1] and a[0] < b[1] and b[0] < a[1]


def _check_grpo(g: GRPOConfig) -> None:
    if g.num_generations < 2:
        raise ValueError("grpo.num_generations must be at least 2 (a group)")
    if (g.batch_size * g.grad_accum) % g.num_generations:
        raise ValueError(
            "grpo.batch_size x grpo.grad_accum must be a multiple of "
            f"grpo.num_generations ({g.num_generations})"
        )


def _check_seed_ranges(cfg: TrainConfig) -> None:
    """Every range [first, last); nothing trained on is measured on."""
    d, r = cfg.data, cfg.rl
    train, heldout = d.train_seeds, d.heldout_seeds
    if not (train[0] < train[1] and heldout[0] < heldout[1]):
        raise ValueError("seed ranges are [first, last) with first < last")
    apart = [("heldout_seeds", "train_seeds"), ("label_eval_seeds", "train_seeds")]
    if d.played_generator and not d.played_seeds[0] < d.played_seeds[1]:
        raise ValueError("data.played_seeds is [first, last) with first < last")
    apart += [("played_seeds", "heldout_seeds"), ("played_seeds", "label_eval_seeds")]
    for a, b in apart:
        if _overlap(getattr(d, a), getattr(d, b)):
            raise ValueError(f"data.{a} overlaps data.{b}")
    for name in ("seeds", "eval_seeds"):
        first, last = getattr(r, name)
        if not first < last or last > heldout[0]:
            raise ValueError(
                f"rl.{name} is [first, last) of training seeds (< {heldout[0]})"
            )
    if _overlap(r.seeds, r.eval_seeds):
        raise ValueError("rl.eval_seeds overlaps rl.seeds")


def _check_prompt_styles(d: DataConfig) -> None:
    from oracle.prompt import PROMPT_STYLES, style_parts

    trained, serve = d.prompt_style, d.serve_prompt_style
    if trained not in PROMPT_STYLES:
        raise ValueError(
            f"data.prompt_style is one of {PROMPT_STYLES}, not {trained!r}"
        )
    if serve and serve not in PROMPT_STYLES:
        raise ValueError(
            f"data.serve_prompt_style is one of {PROMPT_STYLES}, not {serve!r}"
        )
    if serve and style_parts(serve)[0] != style_parts(trained)[0]:
        raise ValueError(
            f"data.serve_prompt_style {serve!r} reads options unlike the "
            f"trained {trained!r}: only the listing may differ"
        )


def _check_choices(cfg: TrainConfig) -> None:
    """The named choices and the numbers' ranges."""
    if cfg.device not in ("auto", "cpu", "cuda"):
        raise ValueError("device is auto, cpu or cuda")
    r = cfg.rl
    if r.samples < 1 or r.temperature <= 0 or not 0 <= r.optimum_share < 1:
        raise ValueError("rl: samples >= 1, temperature > 0, 0 <= optimum_share < 1")
    if cfg.sft.lr_schedule not in ("constant", "cosine"):
        raise ValueError("sft.lr_schedule is constant or cosine")
    if cfg.torch_threads < 0:
        raise ValueError("torch_threads is 0 (torch's default) or a thread count")
    if cfg.model.unsloth not in ("auto", "never", "require"):
        raise ValueError("model.unsloth is auto, never or require")
    lab = cfg.labels
    if lab.node_limit < 0 or lab.time_limit_s <= 0 or lab.workers < 1:
        raise ValueError("labels: node_limit >= 0, time_limit_s > 0, workers >= 1")
    if lab.stations_per_kind < 1 or lab.max_defer_min < 0:
        raise ValueError("labels: stations_per_kind >= 1, max_defer_min >= 0")
