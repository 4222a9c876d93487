"""``evgrid train``: the shipped Oracle's recipe end to end, one stage after another.

    labels -> distill -> sft -> grpo -> ship

1. **labels**: the hindsight optimum solves every (scenario, seed) of ``data.scenarios``
   x ``data.train_seeds`` and ``data.label_eval_seeds`` (``training.labels``,
   ``labels.*`` the solver's settings); solved episodes are kept, so a rerun resumes.
2. **distill**: ``distilled``'s trees fit on those labels (``training.distill``): the
   teacher whose soft choice makes half of SFT's loss. Refit only when the labels
   changed (their hash is in the model file).
3. **sft**: the LoRA adapter on the optimum's letters (``training.oracle_sft``),
   resumable from its checkpoints.
4. **grpo**: TRL's GRPO on the letter prompt from the SFT adapter, each letter scored
   by the environment (``training.oracle_grpo``; skipped when ``grpo.steps`` is 0).
5. **ship**: the adapter to GGUF and its record (``training.sft_ship``) into
   ``ship_to``. GRPO's adapter ships only if its held-out gain over the generator's
   picks grew by more than its 95 % interval; otherwise SFT's, and the record says so.

Everything lands under the preset's ``output_dir`` (``--out``): ``labels/`` (unless
``--labels`` names a folder), ``distilled-teacher.json``, the SFT run, ``grpo/`` and
``ship/``. A stage that finished is skipped on a rerun; a stage cut short resumes.
The GPU presets run the same chain with the model on CUDA.
"""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path
from typing import Any

from .config import TrainConfig

STAGES = ("labels", "distill", "sft", "grpo", "ship")
TEACHER_FILE = "distilled-teacher.json"


@dataclasses.dataclass(frozen=True, slots=True)
class Paths:
    """Where a run's stages read and write."""

    out: Path
    labels: Path
    ship_to: Path

    @property
    def teacher(self) -> Path:
        return self.out / TEACHER_FILE

    @property
    def grpo(self) -> Path:
        return self.out / "grpo"


def paths(
    cfg: TrainConfig, labels: Path | None = None, ship_to: Path | None = None
) -> Paths:
    out = cfg.out
    return Paths(out, labels or out / "labels", ship_to or out / "ship")


def label_seeds(cfg: TrainConfig) -> range:
    """The seeds the optimum labels: the training seeds and the agreement seeds."""
    (lo, hi), (elo, ehi) = cfg.data.train_seeds, cfg.data.label_eval_seeds
    return range(min(lo, elo) if elo < ehi else lo, max(hi, ehi))


def plan(cfg: TrainConfig, stages: tuple[str, ...], where: Paths) -> list[str]:
    """What ``run`` would do, one line per stage (no heavy imports)."""
    d, s, g, rl = cfg.data, cfg.sft, cfg.grpo, cfg.rl
    seeds = label_seeds(cfg)
    lines = {
        "labels": f"labels: the optimum on {', '.join(d.scenarios)} x seeds "
        f"{seeds.start}..{seeds.stop - 1} (node limit {cfg.labels.node_limit}, "
        f"{cfg.labels.workers} worker(s)) -> {where.labels}",
        "distill": f"distill: distilled's trees on every labelled seed -> {where.teacher}",
        "sft": f"sft: {s.steps} steps x batch {s.batch_size} on the optimum's letters, "
        f"lr {s.learning_rate:g}, teacher weight {s.teacher_weight:g}; model "
        f"{cfg.model.source} on {cfg.device} -> {where.out}",
        "grpo": (
            f"grpo: {g.steps} steps, {g.batch_size // g.num_generations} states x "
            f"{g.num_generations} letters at temperature {g.temperature:g}, lr "
            f"{g.learning_rate:g}; each letter played {rl.horizon_ticks} ticks by "
            f"{rl.continuation} -> {where.grpo}"
            if g.steps
            else "grpo: off (grpo.steps = 0)"
        ),
        "ship": f"ship: GGUF adapter + TRAINING.md -> {where.ship_to} (GRPO's adapter "
        "only if it beat SFT's on held-out states)",
    }
    return [lines[k] for k in stages]


def run(
    cfg: TrainConfig,
    stages: tuple[str, ...],
    where: Paths,
    config_path: Path,
    log: Any = print,
) -> dict[str, Any]:
    """Run ``stages`` in order (each skipped when done); the run's record,
    ``chain.json``, written after each stage and merged with an earlier run's (the
    stages not run now keep their entries). With ``ship`` among the stages, the GGUF
    converter is checked first."""
    unknown = [s for s in stages if s not in STAGES]
    if unknown:
        raise ValueError(f"unknown stage(s) {unknown}; stages are {', '.join(STAGES)}")
    if "ship" in stages:  # hours of training must not end on a missing converter
        from oracle.gguf_export import converter_dir

        try:
            converter_dir()
        except FileNotFoundError as e:
            raise ValueError(f"the ship stage cannot run: {e}") from None
    where.out.mkdir(parents=True, exist_ok=True)
    path = where.out / "chain.json"  # each stage's latest run, kept across reruns
    record: dict[str, Any] = {"stages": {}}
    if path.is_file():
        record = json.loads(path.read_text())
    for k, name in enumerate(stages):
        log(f"[{k + 1}/{len(stages)}] {name}")
        t = time.perf_counter()
        record["stages"][name] = _STAGE[name](cfg, where, config_path, log)
        record["stages"][name]["seconds"] = round(time.perf_counter() - t, 1)
        record["stages"] = {
            s: record["stages"][s] for s in STAGES if s in record["stages"]
        }
        path.write_text(json.dumps(record, indent=2, default=str))
    return record


# --- The stages ----------------------------------------------------------------------


def _labels(cfg: TrainConfig, where: Paths, _cfg_path: Path, log: Any) -> dict:
    from .labels import check_scenarios, label_runs

    where.labels.mkdir(parents=True, exist_ok=True)
    new = label_runs(check_scenarios(cfg.data.scenarios), label_seeds(cfg), where.labels,
                     settings=cfg.labels.settings(), workers=cfg.labels.workers)  # fmt: skip
    log(f"labels: {len(new)} episode(s) solved now in {where.labels}")
    return {"solved_now": len(new), "dir": str(where.labels)}


def _distill(cfg: TrainConfig, where: Paths, _cfg_path: Path, log: Any) -> dict:
    from evgrid_core.trees import load, save

    from .distill import DistillConfig, distill, labels_sha256
    from .labels import load_labels

    rows = [r for r in load_labels(where.labels)
            if r["scenario"] in cfg.data.scenarios and r["seed"] in label_seeds(cfg)]  # fmt: skip
    if not rows:
        raise ValueError(f"no finished labelled episode in {where.labels}: run labels")
    sha = labels_sha256(rows)
    if where.teacher.is_file() and load(where.teacher).meta.get("labels_sha256") == sha:
        log(f"distill: {where.teacher} fits these labels already")
        return {"teacher": str(where.teacher), "refit": False}
    model, report = distill(where.labels, DistillConfig(), scenarios=cfg.data.scenarios,
                            seeds=label_seeds(cfg))  # fmt: skip
    save(model, where.teacher)
    log(f"distill: {report['train_decisions']} decisions, agreement with the optimum "
        f"{report['train_agreement']:.1%} (seen seeds) -> {where.teacher}")  # fmt: skip
    return {"teacher": str(where.teacher), "refit": True,
            "train_agreement": report["train_agreement"]}  # fmt: skip


def sft_config(cfg: TrainConfig, where: Paths) -> TrainConfig:
    """``cfg`` with the run's own teacher when its distill stage made one."""
    if cfg.sft.teacher_weight <= 0 or not where.teacher.is_file():
        return cfg
    return dataclasses.replace(
        cfg, sft=dataclasses.replace(cfg.sft, teacher_model=str(where.teacher))
    )


def _sft(cfg: TrainConfig, where: Paths, _cfg_path: Path, log: Any) -> dict:
    from .oracle_sft import train

    done = where.out / "summary.json"
    if (where.out / "adapter" / "adapter_config.json").is_file() and done.is_file():
        summary = json.loads(done.read_text())
        if "heldout_optimum" in summary:
            log(f"sft: finished already ({where.out / 'adapter'})")
            return _sft_figures(summary)
    return _sft_figures(train(sft_config(cfg, where), where.labels, log=log))


def _sft_figures(summary: dict[str, Any]) -> dict[str, Any]:
    return {k: summary.get(k) for k in ("steps", "heldout_optimum", "heldout_played")}


def sft_adapter(where: Paths) -> Path:
    """The SFT stage's adapter (its newest checkpoint's if it was cut short)."""
    from .sft_ship import latest_adapter

    try:
        return latest_adapter(where.out)
    except FileNotFoundError:
        raise ValueError(
            f"no SFT adapter under {where.out}: run the sft stage"
        ) from None


def _grpo(cfg: TrainConfig, where: Paths, _cfg_path: Path, log: Any) -> dict:
    if cfg.grpo.steps < 1:
        log("grpo: off (grpo.steps = 0)")
        return {"off": True}
    from .oracle_grpo import run as run_grpo

    done = where.grpo / "summary.json"
    if done.is_file():
        log(f"grpo: finished already ({where.grpo / 'adapter'})")
        summary = json.loads(done.read_text())
    else:
        summary = run_grpo(cfg, sft_adapter(where), where.grpo, log)
    return {"evals": summary["evals"], "train_s": summary["train_s"]}


def grpo_verdict(evals: list[dict[str, Any]]) -> tuple[bool, str]:
    """Whether GRPO's adapter beat its start on the held-out states: its gain over the
    generator's picks grew by more than the last measurement's 95 % interval."""
    first, last = evals[0], evals[-1]
    grew = last["gain"] - first["gain"]
    won = last["step"] > first["step"] and grew > last["ci95"]
    return won, (
        f"held-out gain over the generator's picks {first['gain']:+.3f} at step "
        f"{first['step']} -> {last['gain']:+.3f} ± {last['ci95']:.3f} at step "
        f"{last['step']} (KL over the letters {last['kl_letters']:.3f}): "
        + ("GRPO's adapter ships" if won else "not better: the SFT adapter ships")
    )


def _ship(cfg: TrainConfig, where: Paths, config_path: Path, log: Any) -> dict:
    from .sft_ship import ship

    adapter, lines = sft_adapter(where), None
    done = where.grpo / "summary.json"
    if cfg.grpo.steps and done.is_file():
        evals = json.loads(done.read_text())["evals"]
        won, why = grpo_verdict(evals)
        lines = [f"GRPO ({cfg.grpo.steps} steps, `{where.grpo}`): {why}."]
        if won:
            adapter = where.grpo / "adapter"
        log(f"ship: {why}")
    gguf = ship(sft_config(cfg, where), where.labels, config_path, adapter,
                to=where.ship_to, grpo=lines)  # fmt: skip
    log(f"ship: {gguf} and {where.ship_to / 'TRAINING.md'}")
    return {"adapter": str(adapter), "gguf": str(gguf)}


_STAGE = {"labels": _labels, "distill": _distill, "sft": _sft, "grpo": _grpo,
          "ship": _ship}  # fmt: skip
