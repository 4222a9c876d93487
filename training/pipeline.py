"""The whole chain from one config: data -> SFT -> GRPO -> merge -> GGUF -> evaluate.

Every stage writes under ``cfg.out`` and the run ends with ``summary.json`` (the
figures) beside ``logs/`` (CSV + PNG curves). ``python3 -m training --config
cpu-smoke`` and ``evgrid train --config cpu-smoke`` both call ``run``.
"""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path
from typing import Any

from .config import TrainConfig
from .data import decision_rows, heldout_seeds, train_seeds

STAGES = ("data", "sft", "grpo", "export", "eval")


def plan(cfg: TrainConfig, stages: tuple[str, ...] = STAGES) -> list[str]:
    """What ``run`` would do, one line per stage (no heavy imports)."""
    d, s, g = cfg.data, cfg.sft, cfg.grpo
    lines = {
        "data": f"data: {len(d.scenarios)} scenarios x seeds {d.train_seeds} x "
        f"{d.states_per_episode} states (held out: {d.heldout_seeds})",
        "sft": f"sft: {s.steps} steps on {d.expert}'s decisions, lr {s.learning_rate}"
        + (" (full)" if s.full_finetune else f" (LoRA r={cfg.model.lora_r})"),
        "grpo": f"grpo: {g.steps} steps, {g.num_generations} completions/prompt, "
        f"beta {g.beta}, horizon {cfg.reward.horizon_ticks} ticks vs "
        f"{cfg.reward.continuation}",
        "export": f"export: merge LoRA -> GGUF {cfg.export.quant or 'F16'}"
        if cfg.export.gguf
        else "export: off",
        "eval": f"eval: validity on {cfg.eval.validity_prompts} held-out prompts; "
        f"GGUF episode {cfg.eval.gguf_scenario}; KPIs on {cfg.eval.kpi_scenarios}",
    }
    return [f"model: {cfg.model.source} -> {cfg.out}"] + [lines[k] for k in stages]


def run(
    cfg: TrainConfig, stages: tuple[str, ...] = STAGES, log=print
) -> dict[str, Any]:  # noqa: ANN001
    """Run ``stages`` in order; returns (and writes) the summary."""
    from .model import require_train_stack, torch_settings

    unknown = set(stages) - set(STAGES)
    if unknown:
        raise ValueError(f"unknown stage(s) {sorted(unknown)}; stages are {STAGES}")
    require_train_stack()
    with torch_settings(cfg):
        return _run(cfg, stages, log)


def _run(cfg: TrainConfig, stages: tuple[str, ...], log) -> dict[str, Any]:  # noqa: ANN001
    from .logs import write_csv
    from .model import base_model_path, resolve_device

    out = cfg.out
    out.mkdir(parents=True, exist_ok=True)
    device = resolve_device(cfg)
    summary: dict[str, Any] = {
        "config": dataclasses.asdict(cfg),
        "device": device,
        "timings_s": {},
    }
    t_all = time.perf_counter()

    def stage(name: str) -> float:
        log(f"--- {name}")
        return time.perf_counter()

    # --- Data ---------------------------------------------------------------------
    t = stage("data")
    train = decision_rows(cfg.data, train_seeds(cfg.data))
    held = decision_rows(cfg.data, heldout_seeds(cfg.data))[: cfg.eval.validity_prompts]
    _write_jsonl(out / "data" / "train.jsonl", train)
    _write_jsonl(out / "data" / "heldout.jsonl", held)
    summary["data"] = {"train_rows": len(train), "heldout_rows": len(held)}
    summary["timings_s"]["data"] = time.perf_counter() - t
    log(f"{len(train)} training states, {len(held)} held-out states")

    base = base_model_path(cfg)
    summary["base_model"] = base
    current = base
    if "eval" in stages:
        summary["validity_base"] = _validity(current, held, device, cfg)
        log(f"validity before training: {_fmt(summary['validity_base'])}")

    # --- SFT warm start ------------------------------------------------------------
    if "sft" in stages and cfg.sft.steps > 0:
        from .sft import run_sft

        t = stage("sft")
        sft_dir, hist = run_sft(cfg, current, train, device)
        write_csv(hist, out / "logs" / "sft.csv")
        summary["timings_s"]["sft"] = time.perf_counter() - t
        summary["sft_param_change"] = param_change(current, sft_dir)
        current = str(sft_dir)
        if "eval" in stages:
            summary["validity_sft"] = _validity(current, held, device, cfg)
            log(f"validity after SFT: {_fmt(summary['validity_sft'])}")

    # --- GRPO ----------------------------------------------------------------------
    if "grpo" in stages and cfg.grpo.steps > 0:
        from .grpo import run_grpo
        from .logs import plot_curves

        t = stage("grpo")
        before = current
        merged, hist, _ = run_grpo(cfg, current, train, device)
        csv_path = write_csv(hist, out / "logs" / "grpo.csv")
        plot_curves(csv_path, out / "logs" / "grpo.png", f"GRPO {cfg.name}")
        summary["timings_s"]["grpo"] = time.perf_counter() - t
        summary["grpo_param_change"] = param_change(before, merged)
        summary["grpo_log_tail"] = hist[-3:]
        current = str(merged)
        if "eval" in stages:
            summary["validity_grpo"] = _validity(current, held, device, cfg)
            log(f"validity after GRPO: {_fmt(summary['validity_grpo'])}")
    summary["final_model"] = current

    # --- Export ----------------------------------------------------------------------
    gguf = None
    if "export" in stages and cfg.export.gguf:
        from oracle.gguf_export import export_gguf

        t = stage("export")
        quant = cfg.export.quant or None
        gguf = export_gguf(
            current, out / f"oracle-{(quant or 'f16').lower()}.gguf", quant=quant
        )
        summary["gguf"] = str(gguf)
        summary["gguf_mb"] = gguf.stat().st_size / 1e6
        summary["timings_s"]["export"] = time.perf_counter() - t
        log(f"GGUF: {gguf} ({summary['gguf_mb']:.1f} MB)")

    # --- Evaluate the GGUF -----------------------------------------------------------
    if "eval" in stages and gguf is not None:
        from .evaluate import gguf_episode, heldout_kpis

        t = stage("eval")
        e = cfg.eval
        stations = cfg.data.prompt_stations
        summary["gguf_episode"] = gguf_episode(
            gguf,
            e.gguf_scenario,
            e.gguf_seed,
            stations,
            cfg.data.prompt,
            cfg.data.prompt_style,
        )
        log(
            f"GGUF episode ({e.gguf_scenario}): "
            f"{summary['gguf_episode']['steps']} decisions, invalid "
            f"{summary['gguf_episode']['invalid_action_pct']:.1f}%"
        )
        if e.kpi_scenarios:
            summary["heldout_kpis"] = heldout_kpis(
                gguf,
                e.kpi_scenarios,
                list(range(*e.kpi_seeds)),
                e.baselines,
                max_stations=stations,
                prompt=cfg.data.prompt,
                prompt_style=cfg.data.prompt_style,
            )
            for name, row in summary["heldout_kpis"].items():
                log(f"held-out mean return {name}: {row['mean_return']:.2f}")
        summary["timings_s"]["eval"] = time.perf_counter() - t

    # --- Held-out KPIs of the HF model (no GGUF exported: e.g. a GPU run) ----------
    if "eval" in stages and gguf is None and cfg.eval.kpi_scenarios:
        from .evaluate import HFPolicy, heldout_kpis, load_for_eval

        t = stage("eval (HF model, no grammar)")
        e = cfg.eval
        model, tok = load_for_eval(current, device)
        hf = HFPolicy(
            model,
            tok,
            cfg.grpo.max_completion_length,
            cfg.data.prompt_stations,
            cfg.data.prompt,
            cfg.data.prompt_style,
        )
        summary["heldout_kpis"] = heldout_kpis(
            None, e.kpi_scenarios, list(range(*e.kpi_seeds)), e.baselines, hf
        )
        for name, row in summary["heldout_kpis"].items():
            log(f"held-out mean return {name}: {row['mean_return']:.2f}")
        summary["timings_s"]["eval"] = time.perf_counter() - t

    summary["timings_s"]["total"] = time.perf_counter() - t_all
    (out / "summary.json").write_text(json.dumps(summary, indent=2, default=str))
    log(f"summary: {out / 'summary.json'}")
    return summary


# --- Helpers ---------------------------------------------------------------------------


def _validity(path: str, rows: list[dict[str, Any]], device: str, cfg: TrainConfig):  # noqa: ANN202
    from .evaluate import load_for_eval, validity

    model, tok = load_for_eval(path, device)
    return validity(model, tok, rows, max_new_tokens=cfg.grpo.max_completion_length)


def _fmt(v: dict[str, Any]) -> str:
    return (
        f"format {v['format_rate']:.0%}, valid {v['valid_rate']:.0%}, "
        f"expert match {v['expert_match_rate']:.0%} (n={v['n']}); e.g. {v['examples'][:2]}"
    )


def param_change(dir_a: str | Path, dir_b: str | Path) -> dict[str, float]:
    """How far two checkpoints' weights differ: max |a-b| and share of tensors changed."""
    from safetensors.torch import load_file

    def weights(d: str | Path) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in sorted(Path(d).glob("*.safetensors")):
            out.update(load_file(str(f)))
        return out

    a, b = weights(dir_a), weights(dir_b)
    common = sorted(set(a) & set(b))
    diffs = [float((a[k].float() - b[k].float()).abs().max()) for k in common]
    changed = sum(d > 0 for d in diffs)
    return {
        "tensors": len(common),
        "tensors_changed": changed,
        "max_abs_diff": max(diffs, default=0.0),
    }


def _write_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
