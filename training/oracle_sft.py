"""SFT of the SmolLM2 Oracle on the hindsight optimum's decisions: a LoRA adapter.

Rows come from optimum labels (``training.labels``: every decision of the
optimum's replay, ``evgrid labels``): the prompt is ``oracle.prompt.decision_prompt``
of the exact state, the answer the letter under which it lists the optimum's action
(one token: all the loss is on the decision). Rows whose plan strands the EV on
purpose (``planned_invalid``) are skipped, and so are, for training only, the few
whose optimum action the prompt does not list (a fourth station, a long DEFER). Held out: the label rows of
``data.label_eval_seeds`` (optimum states training never sees: agreement) and
states of ``data.heldout_seeds`` played by ``data.generator`` (validity).

The loop is ``training.sft``'s answer-only one, made resumable: every
``sft.checkpoint_every`` steps the adapter, the optimizer and the history are
saved; batch ``k`` is drawn from a generator seeded with ``(seed, k)``, so a resumed
run takes the same batches as an unbroken one. Progress goes to stderr; the loss
and held-out figures to ``logs/sft.csv`` and ``logs/sft.png``.

    python3 -m training.oracle_sft --config cpu-smollm2 --labels /work/runs/labels

The GPU presets (``gpu-smollm2``, ``gpu-tiny-letters``, ``colab-t4-qwen1.5b``) run the
same loop on CUDA (``device``): the batch goes to the model's device, nothing else
changes. ``--set section.field=VALUE`` overrides a preset key (``gpu_smoke.sh
--cpu-tiny`` shrinks ``gpu-tiny-letters`` that way); ``--dry-run`` prints the plan.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from .config import TrainConfig, load_config
from .sft_figures import answer_rates, gguf_agreement, held_out
from .sft_rows import dataset, eval_subset
from .sft_ship import checkpoints, ship

SFT_CURVES = (
    ("answer loss [nats/token]", ("loss",)),
    ("held out, no grammar", ("agreement", "valid_rate", "listed_rate")),
    ("learning rate", ("learning_rate",)),
)

# --- Training ----------------------------------------------------------------------------


def train(
    cfg: TrainConfig, labels_dir: Path, *, until: int | None = None, log: Any = print
) -> dict[str, Any]:
    """Train (or resume) the LoRA adapter; returns the summary (also in summary.json).

    ``until``: stop after that step with a checkpoint (a later call resumes there);
    the summary is then the progress so far, without the final evaluation.
    """
    from .model import require_train_stack, torch_settings

    require_train_stack()
    with torch_settings(cfg):
        return _train(cfg, labels_dir, until, log)


def _train(
    cfg: TrainConfig, labels_dir: Path, until: int | None, log: Any
) -> dict[str, Any]:
    import torch
    from peft import PeftModel, get_peft_model

    from .logs import plot_curves, write_csv
    from .model import base_model_path, load_model, lora_config, resolve_device
    from .sft import adamw, answer_loss, begin_step, collate, tokenize_rows

    s, out = cfg.sft, cfg.out
    t0 = time.perf_counter()
    data = dataset(cfg, labels_dir)
    log(
        f"rows: train {len(data['train'])}, held-out optimum "
        f"{len(data['heldout_optimum'])}, held-out played {len(data['heldout_played'])}"
        f" ({time.perf_counter() - t0:.0f} s)"
    )
    base = base_model_path(cfg)
    device = resolve_device(cfg)  # the CPU presets say "cpu": their run is unchanged
    model, tok, _ = load_model(base, cfg, device, train_dtype="float32")
    done = checkpoints(out)
    if done:
        model = PeftModel.from_pretrained(
            model, str(done[-1] / "adapter"), is_trainable=True
        )
        state = json.loads((done[-1] / "state.json").read_text())
        log(f"resuming from {done[-1].name}")
    else:
        layers = model.config.num_hidden_layers
        model = get_peft_model(model, lora_config(cfg, layers))
        state = {"step": 0, "history": [], "train_s": 0.0}
    params = [p for p in model.parameters() if p.requires_grad]
    opt = adamw(params, s)
    if done:
        opt.load_state_dict(torch.load(done[-1] / "optimizer.pt"))
    listed = [r for r in data["train"] if r["answer"]]  # the rest cannot be answered
    encoded = tokenize_rows(tok, listed, cfg.model.max_seq_length)
    soft_targets = None  # rows cached by an older run have no teacher scores
    if s.teacher_weight > 0:
        soft_targets = teacher_targets(tok, listed, s.teacher_temperature)
    held_opt = eval_subset(data["heldout_optimum"], s.eval_states, cfg.seed)
    held_play = eval_subset(data["heldout_played"], s.eval_states, cfg.seed)
    history: list[dict[str, Any]] = state["history"]
    model.train()
    step = state["step"]
    stop = min(s.steps, until) if until else s.steps
    while step < stop:
        step += 1
        t = time.perf_counter()
        lr = begin_step(opt, s, step)
        total = 0.0
        for micro in range(s.grad_accum):
            rng = np.random.default_rng([cfg.seed, step, micro])
            pick = rng.choice(
                len(encoded), size=min(s.batch_size, len(encoded)), replace=False
            )
            ids, mask, amask, k = collate([encoded[i] for i in pick], tok.pad_token_id)
            if device != "cpu":
                ids, mask, amask = ids.to(device), mask.to(device), amask.to(device)
            soft = None
            if soft_targets is not None:
                letter_ids, teacher = soft_targets
                soft = (teacher[pick], letter_ids, s.teacher_weight)
                if device != "cpu":
                    soft = (soft[0].to(device), letter_ids.to(device), soft[2])
            loss = answer_loss(model, ids, mask, amask, k, soft) / s.grad_accum
            loss.backward()
            total += float(loss.detach())
        if s.max_grad_norm > 0:
            torch.nn.utils.clip_grad_norm_(params, s.max_grad_norm)
        opt.step()
        state["train_s"] += time.perf_counter() - t
        row: dict[str, Any] = {"step": step, "loss": total, "learning_rate": lr,
                               "step_s": time.perf_counter() - t}  # fmt: skip
        if s.eval_every and (step % s.eval_every == 0 or step == s.steps):
            row.update(held_out(model, tok, held_opt, held_play))
        history.append(row)
        recent = [r["step_s"] for r in history[-20:]]
        log(_progress(row, s.steps, sum(recent) / len(recent) * (s.steps - step)))
        if step == stop or (s.checkpoint_every and step % s.checkpoint_every == 0):
            _save_checkpoint(model, opt, out, step, state | {"step": step})
            csv_path = write_csv(history, out / "logs" / "sft.csv")
            plot_curves(
                csv_path, out / "logs" / "sft.png", f"SFT {cfg.name}", SFT_CURVES
            )
    if step < s.steps:
        return {"steps": step, "train_s": state["train_s"], "history": history}
    model.eval()
    adapter = out / "adapter"
    model.save_pretrained(str(adapter))
    summary = {
        "config": dataclasses.asdict(cfg),
        "labels_dir": str(labels_dir),
        "base_model": base,
        "device": device,
        "rows": {k: len(v) for k, v in data.items()},
        "steps": step,
        "train_s": state["train_s"],
        "adapter": str(adapter),
        "heldout_optimum": answer_rates(
            model,
            tok,
            eval_subset(data["heldout_optimum"], s.final_eval_states, cfg.seed),
        ),
        "heldout_played": answer_rates(model, tok, data["heldout_played"]),
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=2, default=str))
    return summary


def teacher_targets(
    tok: Any, rows: list[dict[str, Any]], temperature: float
) -> tuple[Any, Any]:
    """The letters' token ids, and per row the teacher's choice over them: the
    softmax of the distilled scores / ``temperature`` (0 on unlisted letters)."""
    import torch

    from oracle.prompt import LETTERS

    letter_ids = torch.tensor([tok.convert_tokens_to_ids(x) for x in LETTERS])
    probs = torch.zeros((len(rows), len(LETTERS)))
    for i, r in enumerate(rows):
        z = np.asarray(r["teacher"], dtype=np.float64) / max(temperature, 1e-6)
        e = np.exp(z - z.max())
        probs[i, : len(z)] = torch.from_numpy(e / e.sum())
    return letter_ids, probs


def _progress(row: dict[str, Any], steps: int, left_s: float) -> str:
    """A step's line: its loss, rate and time, the time left at the last 20 steps'
    pace, and the held-out figures when measured."""
    text = (
        f"step {row['step']}/{steps} loss {row['loss']:.4f} "
        f"lr {row['learning_rate']:.2e} {row['step_s']:.1f} s, "
        f"about {_clock(left_s)} left"
    )
    if "agreement" in row:
        text += (
            f" | held out: agreement {row['agreement']:.1%}, valid "
            f"{row['valid_rate']:.1%}, listed {row['listed_rate']:.1%}"
        )
    return text


def _clock(seconds: float) -> str:
    """e.g. '1h05m', '4m10s'."""
    m, sec = divmod(int(round(seconds)), 60)
    return f"{m // 60}h{m % 60:02d}m" if m >= 60 else f"{m}m{sec:02d}s"


def _save_checkpoint(model: Any, opt: Any, out: Path, step: int, state: dict) -> None:
    """Write step-N atomically, then keep the last two."""
    import torch

    final = out / "checkpoints" / f"step-{step:05d}"
    tmp = final.with_name(final.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    model.save_pretrained(str(tmp / "adapter"))
    torch.save(opt.state_dict(), tmp / "optimizer.pt")
    (tmp / "state.json").write_text(json.dumps(state, default=str))
    tmp.rename(final)
    for old in checkpoints(out)[:-2]:
        shutil.rmtree(old)


# --- Command line -----------------------------------------------------------------------

RL_NOTE = (
    "rl: not in this command: evgrid train's grpo stage (training.oracle_grpo) runs "
    "GRPO on the letters from this adapter, on the CPU (docs/guide.md#training-the-oracle)"
)


def config_with_overrides(name_or_path: str, sets: list[str] | None) -> TrainConfig:
    """The preset (a name or a TOML path) with ``--set KEY=VALUE`` overrides: KEY is
    ``field`` or ``section.field``, VALUE a TOML value (a bare word is a string).
    The result is checked like a preset; without overrides it is ``load_config``."""
    import tomllib

    from .config import config_from_dict, resolve_config_path

    if not sets:
        return load_config(name_or_path)
    raw = tomllib.loads(resolve_config_path(name_or_path).read_text())
    for item in sets:
        key, sep, text = item.partition("=")
        parts = key.strip().split(".")
        if not sep or not all(parts) or len(parts) > 2:
            raise ValueError(
                f"--set {item!r}: give KEY=VALUE with KEY field or section.field"
            )
        try:
            value = tomllib.loads(f"v = {text}")["v"]
        except tomllib.TOMLDecodeError:
            value = text.strip()
        table = raw.setdefault(parts[0], {}) if len(parts) == 2 else raw
        if not isinstance(table, dict):
            raise ValueError(f"--set {item!r}: {parts[0]} is not a section")
        table[parts[-1]] = value
    return config_from_dict(raw)


def plan(cfg: TrainConfig, labels: Path) -> list[str]:
    """What a run of ``cfg`` does, one line per part (no heavy imports)."""
    m, d, s = cfg.model, cfg.data, cfg.sft
    base = m.source + (
        f" (random, width {m.tiny_hidden}, {m.tiny_layers} layers)"
        if m.source == "tiny"
        else ""
    )
    layers = f"the top {m.lora_layers} blocks" if m.lora_layers else "every block"
    teacher = (
        f"{s.teacher_weight:g} of the letter's loss against distilled's soft choice "
        f"(temperature {s.teacher_temperature:g})"
        if s.teacher_weight > 0
        else "the optimum's letter only"
    )
    return [
        f"base: {base} on {cfg.device}, LoRA r={m.lora_r} alpha {m.lora_alpha} on "
        f"{layers}",
        f"rows: optimum labels in {labels}: {', '.join(d.scenarios)}; train seeds "
        f"{d.train_seeds[0]}..{d.train_seeds[1] - 1}, agreement on "
        f"{d.label_eval_seeds[0]}..{d.label_eval_seeds[1] - 1}; validity on states "
        f"{d.generator} plays on seeds {d.heldout_seeds[0]}..{d.heldout_seeds[1] - 1}",
        f"prompt: oracle.prompt.decision_prompt ({d.prompt_stations} stations, options "
        f"under letters), at most {m.max_seq_length} tokens; answer: a letter",
        f"sft: {s.steps} steps x batch {s.batch_size} x {s.grad_accum}, lr "
        f"{s.learning_rate:g} ({s.warmup_steps} warm-up, {s.lr_schedule}); {teacher}; "
        f"held out every {s.eval_every or '-'} steps",
        RL_NOTE,
        f"out: {cfg.out}",
    ]


def main(argv: list[str] | None = None) -> int:
    # torch's OpenMP threads spin while they wait for each other; on a CPU shared
    # with other work that cost 5-10x. Must be set before torch loads.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    p = argparse.ArgumentParser(
        prog="python3 -m training.oracle_sft", description=__doc__.splitlines()[0]
    )
    p.add_argument("--config", default="cpu-smollm2", help="preset name or TOML path")
    p.add_argument(
        "--labels", required=True, type=Path, help="`evgrid labels` output dir"
    )
    p.add_argument("--out", help="output dir (overrides the preset's output_dir)")
    p.add_argument(
        "--steps", type=int, help="total optimizer steps (overrides sft.steps)"
    )
    p.add_argument(
        "--until", type=int, help="stop after this step (a later run resumes there)"
    )
    p.add_argument(
        "--eval-gguf",
        type=int,
        metavar="N",
        help="only measure the shipped Oracle (llama.cpp, grammar) on N held-out "
        "optimum states",
    )
    p.add_argument(
        "--ship",
        action="store_true",
        help="only convert the latest adapter to oracle/weights/ and write TRAINING.md",
    )
    p.add_argument(
        "--set",
        action="append",
        metavar="KEY=VALUE",
        help="override one preset key (section.field=TOML value, e.g. sft.steps=4 or "
        'device="cpu"); repeatable; not with --ship (its record is the TOML file)',
    )
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="print the plan and the resolved config, train nothing",
    )
    args = p.parse_args(argv)
    if args.set and args.ship:
        p.error("--ship records the preset's TOML as it is: no --set with --ship")
    try:
        cfg = config_with_overrides(args.config, args.set)
    except ValueError as e:
        p.error(str(e))
    if args.out:
        cfg = dataclasses.replace(cfg, output_dir=args.out)
    if args.steps:
        cfg = dataclasses.replace(
            cfg, sft=dataclasses.replace(cfg.sft, steps=args.steps)
        )
    if args.dry_run:
        print(f"training.oracle_sft: preset {cfg.name}")
        for line in plan(cfg, args.labels):
            print("  " + line)
        print(json.dumps(dataclasses.asdict(cfg), indent=2))
        return 0
    if args.eval_gguf:
        d = cfg.data
        r = gguf_agreement(args.labels, d.label_eval_seeds, d.scenarios, args.eval_gguf)
        r["threads"] = int(os.environ.get("EVGRID_ORACLE_THREADS", 0)) or os.cpu_count()
        cfg.out.mkdir(parents=True, exist_ok=True)
        (cfg.out / "gguf_eval.json").write_text(json.dumps(r, indent=2))
        lat = r["latency"]
        print(f"shipped Oracle on {r['n']} held-out optimum states: agreement "
              f"{r['agreement']:.1%}, valid {r['valid_rate']:.1%}; latency mean "
              f"{lat['mean_ms']:.0f} ms, p50 {lat['p50_ms']:.0f}, p95 {lat['p95_ms']:.0f}")  # fmt: skip
        return 0
    if args.ship:
        from .config import resolve_config_path

        print(ship(cfg, args.labels, resolve_config_path(args.config)))
        return 0
    summary = train(
        cfg,
        args.labels,
        until=args.until,
        log=lambda m: print(m, file=sys.stderr, flush=True),
    )
    if "heldout_optimum" not in summary:
        print(f"stopped after step {summary['steps']}; run again to resume")
        return 0
    for key in ("heldout_optimum", "heldout_played"):
        r = summary[key]
        print(f"{key}: agreement {r['agreement']:.1%}, valid {r['valid_rate']:.1%}, "
              f"listed {r['listed_rate']:.1%} (n={r['n']})")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
