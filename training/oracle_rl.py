"""The Oracle's RL stage on a CPU: expert iteration with the environment's verdict.

GRPO on this CPU costs minutes a step; this stage costs one forward pass and a few
rollouts a state. Starting from an SFT adapter (``training.oracle_sft``):

1. States: ``rl.generator`` (``distilled``) plays training seeds; states are taken
   spread over each episode (``sft_rows.played_rows``: the decision prompt, its
   listed options). These are states the learner's own teacher reaches, queues
   and all, which the optimum's labels never show.
2. Samples: the model's distribution over the listed letters (one forward pass),
   ``rl.samples`` letters drawn from it plus its greedy letter.
3. Verdict: each distinct letter is applied to a copy of the state and
   ``rl.continuation`` plays on for ``rl.horizon_ticks`` (``rewards.rollout``); the
   best return is the target, unless it beats the greedy letter by less than
   ``rl.margin`` (then the greedy letter stays the target).
4. Update: ``rl.steps`` of the letter's cross-entropy from the adapter, each batch
   ``rl.optimum_share`` optimum rows (so what SFT taught is kept) and the rest
   improved targets.

With ``--targets DIR`` steps 1-3 are replaced by a ``training.oracle_gap`` folder:
the states are the learner's own (the Oracle as served playing), and where
``distilled`` would have picked otherwise the look-ahead's better line is the target
(``oracle_gap.gap_rows``).

Measured before and after on states of ``rl.eval_seeds`` (never trained on): the
return after the model's greedy letter against after ``distilled``'s pick, and
agreement with the optimum on the label seeds held out of SFT. Scores are cached
per state (``scored.jsonl``), so a cut run resumes.

    python3 -m training.oracle_rl --config cpu-smollm2 --labels runs/labels \\
        --init .cache/train/cpu-smollm2/adapter --out .cache/train/oracle-rl
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from .config import TrainConfig

# --- The model's letters ------------------------------------------------------------


def letter_probs(
    model: Any, tok: Any, rows: list[dict[str, Any]], max_len: int, batch: int = 8
) -> list[np.ndarray]:
    """Per row, the model's next-token distribution renormalised over its listed
    letters (what the grammar leaves it)."""
    import torch

    from oracle.prompt import LETTERS

    ids_of = [tok.convert_tokens_to_ids(x) for x in LETTERS]
    out: list[np.ndarray] = []
    for i in range(0, len(rows), batch):
        chunk = rows[i : i + batch]
        seqs = []
        for r in chunk:
            text = tok.apply_chat_template(
                r["prompt"], tokenize=False, add_generation_prompt=True
            )
            seqs.append(tok(text, add_special_tokens=False)["input_ids"][-max_len:])
        width = max(len(s) for s in seqs)
        ids = torch.full((len(seqs), width), tok.pad_token_id, dtype=torch.long)
        mask = torch.zeros((len(seqs), width), dtype=torch.long)
        for j, s in enumerate(seqs):
            ids[j, width - len(s) :] = torch.tensor(s)
            mask[j, width - len(s) :] = 1
        with torch.no_grad():
            logits = model(
                input_ids=ids,
                attention_mask=mask,
                position_ids=(mask.cumsum(-1) - 1).clamp(min=0),
                logits_to_keep=1,
            ).logits[:, -1, :]
        for j, r in enumerate(chunk):
            z = logits[j, ids_of[: len(r["letters"])]].double().numpy()
            e = np.exp(z - z.max())
            out.append(e / e.sum())
    return out


def draw(probs: np.ndarray, n: int, temperature: float, key: list[int]) -> list[int]:
    """The greedy index first, then ``n`` draws at ``temperature`` (distinct, in order)."""
    p = probs ** (1.0 / temperature)
    p = p / p.sum()
    rng = np.random.default_rng(key)
    picks = [int(np.argmax(probs))] + rng.choice(len(p), size=n, p=p).tolist()
    return list(dict.fromkeys(int(i) for i in picks))


# --- The environment's verdict ------------------------------------------------------


class Verdict:
    """Return after a line in a row's state, ``continuation`` playing on (cached)."""

    def __init__(self, cfg: TrainConfig) -> None:
        from .data import StateCache

        self.rl = cfg.rl
        self.cache = StateCache(capacity=64)
        self.memo: dict[tuple[str, int, int, str], float] = {}

    def __call__(self, row: dict[str, Any], line: str) -> float:
        from .rewards import rollout

        key = (row["scenario"], row["seed"], row["step"], line)
        if key not in self.memo:
            env = self.cache.restore(
                row["scenario"], row["seed"], row["step"], self.rl.generator
            )
            self.memo[key] = rollout(
                env,
                line,
                horizon_ticks=self.rl.horizon_ticks,
                continuation=self.rl.continuation,
                seed=row["seed"],
            ).total
        return self.memo[key]


def score_rows(
    model: Any,
    tok: Any,
    rows: list[dict[str, Any]],
    cfg: TrainConfig,
    verdict: Verdict,
    path: Path,
    *,
    log: Any = print,
) -> list[dict[str, Any]]:
    """Draw letters and score them on every row; resumes from ``path`` (jsonl)."""
    from tqdm import tqdm

    done = {}
    if path.is_file():
        for line in path.read_text().splitlines():
            try:
                d = json.loads(line)
            except json.JSONDecodeError:
                break  # a torn last line: scored again
            done[d["i"]] = d
    todo = [i for i in range(len(rows)) if i not in done]
    log(f"scoring {len(todo)} states ({len(done)} cached in {path.name})")
    bar = tqdm(total=len(todo), unit="state", file=sys.stderr)
    with path.open("a") as f:
        for start in range(0, len(todo), 32):
            idx = todo[start : start + 32]
            probs = letter_probs(model, tok, [rows[i] for i in idx],
                                 cfg.model.max_seq_length)  # fmt: skip
            for i, p in zip(idx, probs, strict=True):
                r = rows[i]
                picks = draw(p, cfg.rl.samples, cfg.rl.temperature, [cfg.seed, i])
                returns = {r["letters"][k]: verdict(r, r["listed"][k]) for k in picks}
                greedy = r["letters"][picks[0]]
                best = max(returns, key=returns.__getitem__)
                if returns[best] <= returns[greedy] + cfg.rl.margin:
                    best = greedy
                d = {"i": i, "greedy": greedy, "target": best, "returns": returns,
                     "probs": [round(float(x), 4) for x in p]}  # fmt: skip
                f.write(json.dumps(d) + "\n")
                done[i] = d
                bar.update()
            f.flush()
    bar.close()
    return [done[i] for i in range(len(rows))]


def policy_gain(
    model: Any,
    tok: Any,
    rows: list[dict[str, Any]],
    cfg: TrainConfig,
    verdict: Verdict,
    probs: list[np.ndarray] | None = None,
) -> dict[str, float]:
    """On ``rows``: mean return after the model's greedy letter minus after the
    generator's own pick (where it is listed), and how often the greedy letter is
    the best of the two. ``probs``: the model's ``letter_probs`` on them, if known."""
    if probs is None:
        probs = letter_probs(model, tok, rows, cfg.model.max_seq_length)
    diffs = []
    for r, p in zip(rows, probs, strict=True):
        if r["expert_action"] not in r["listed"]:
            continue
        mine = verdict(r, r["listed"][int(np.argmax(p))])
        diffs.append(mine - verdict(r, r["expert_action"]))
    d = np.asarray(diffs)
    return {
        "states": len(d),
        "gain_vs_generator": float(d.mean()) if len(d) else float("nan"),
        "ci95": float(1.96 * d.std(ddof=1) / np.sqrt(len(d))) if len(d) > 1 else 0.0,
        "better": float((d > 1e-9).mean()) if len(d) else float("nan"),
        "worse": float((d < -1e-9).mean()) if len(d) else float("nan"),
    }


# --- The run ------------------------------------------------------------------------


def run(
    cfg: TrainConfig,
    labels_dir: Path,
    init: Path,
    out: Path,
    log: Any = print,
    targets: Path | None = None,
) -> dict[str, Any]:
    """One round of expert iteration from the adapter at ``init``; summary.json in
    ``out``. ``targets``: a ``training.oracle_gap`` folder whose rows (the learner's
    own states, each disagreement with the teacher labelled by the look-ahead) are
    the targets, instead of letters drawn and scored here."""
    from .model import require_train_stack, torch_settings

    require_train_stack()
    with torch_settings(cfg):
        return _run(cfg, labels_dir, init, out, log, targets)


def _run(
    cfg: TrainConfig, labels_dir: Path, init: Path, out: Path, log: Any,
    targets: Path | None,
) -> dict[str, Any]:  # fmt: skip
    import torch
    from peft import PeftModel

    from .logs import plot_curves, write_csv
    from .model import base_model_path, load_model
    from .sft import adamw, answer_loss, begin_step, collate, tokenize_rows
    from .sft_figures import answer_rates
    from .sft_rows import cached_rows, dataset, eval_subset, played_rows

    rl, d = cfg.rl, cfg.data
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()

    def states(seeds: tuple[int, int], per: int, name: str) -> list[dict[str, Any]]:
        return cached_rows(
            out / name,
            lambda: played_rows(
                rl.generator,
                seeds,
                d.scenarios,
                d.prompt_stations,
                per,
                style=d.prompt_style,
            ),
        )

    train_rows = (
        [] if targets else states(rl.seeds, rl.states_per_episode, "states.jsonl")
    )
    eval_rows = states(rl.eval_seeds, rl.eval_states_per_episode, "eval_states.jsonl")
    sft_data = dataset(cfg, labels_dir)  # the optimum's rows, as SFT made them
    optimum_rows = [r for r in sft_data["train"] if r["answer"]]
    held_opt = eval_subset(
        sft_data["heldout_optimum"], cfg.sft.final_eval_states, cfg.seed
    )
    where = f"the learner's own in {targets}" if targets else f"{len(train_rows)}"
    log(f"states: {where} to improve on, {len(eval_rows)} to measure on "
        f"({time.perf_counter() - t0:.0f} s)")  # fmt: skip

    model, tok, _ = load_model(base_model_path(cfg), cfg, "cpu", train_dtype="float32")
    model = PeftModel.from_pretrained(model, str(init), is_trainable=True)
    model.eval()
    verdict = Verdict(cfg)
    before = {
        "policy": policy_gain(model, tok, eval_rows, cfg, verdict),
        "optimum": answer_rates(model, tok, held_opt),
    }
    log(f"before: {json.dumps(before['policy'])}, agreement with the optimum "
        f"{before['optimum']['agreement']:.1%}")  # fmt: skip
    t_score = time.perf_counter()
    if targets:
        improved, kept = _gap_targets(cfg, targets)
        train_rows = improved + kept
    else:
        scored = score_rows(
            model, tok, train_rows, cfg, verdict, out / "scored.jsonl", log=log
        )
        improved = [
            r | {"answer": s["target"]}
            for r, s in zip(train_rows, scored, strict=True)
            if s["target"] != s["greedy"]
        ]
        kept = [
            r | {"answer": s["target"]}
            for r, s in zip(train_rows, scored, strict=True)
            if s["target"] == s["greedy"]
        ]
    t_score = time.perf_counter() - t_score
    log(f"targets: {len(improved)} improved, {len(kept)} kept as the model answers")

    rl_enc = tokenize_rows(tok, improved + kept, cfg.model.max_seq_length)
    opt_enc = tokenize_rows(tok, optimum_rows, cfg.model.max_seq_length)
    params = [p for p in model.parameters() if p.requires_grad]
    s = _Schedule(rl)
    opt = adamw(params, s)
    model.train()
    history, t_train = [], time.perf_counter()
    n_opt = round(rl.batch_size * rl.optimum_share)
    for step in range(1, rl.steps + 1):
        t = time.perf_counter()
        lr = begin_step(opt, s, step)
        rng = np.random.default_rng([cfg.seed, 0x51, step])
        batch = [rl_enc[i] for i in rng.choice(len(rl_enc), rl.batch_size - n_opt)]
        batch += [opt_enc[i] for i in rng.choice(len(opt_enc), n_opt)] if n_opt else []
        ids, mask, amask, k = collate(batch, tok.pad_token_id)
        loss = answer_loss(model, ids, mask, amask, k)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        history.append({"step": step, "loss": float(loss.detach()), "learning_rate": lr,
                        "step_s": time.perf_counter() - t})  # fmt: skip
        if step % 25 == 0 or step == rl.steps:
            log(f"rl step {step}/{rl.steps} loss {history[-1]['loss']:.4f}")
    t_train = time.perf_counter() - t_train
    model.eval()
    model.save_pretrained(str(out / "adapter"))
    after = {
        "policy": policy_gain(model, tok, eval_rows, cfg, verdict),
        "optimum": answer_rates(model, tok, held_opt),
    }
    log(f"after: {json.dumps(after['policy'])}, agreement with the optimum "
        f"{after['optimum']['agreement']:.1%}")  # fmt: skip
    csv_path = write_csv(history, out / "logs" / "rl.csv")
    plot_curves(csv_path, out / "logs" / "rl.png", f"expert iteration {cfg.name}",
                (("answer loss [nats/token]", ("loss",)),))  # fmt: skip
    summary = {
        "init": str(init),
        "targets": str(targets) if targets else None,
        "rl": {k: getattr(rl, k) for k in rl.__dataclass_fields__},
        "states": len(train_rows),
        "improved": len(improved),
        "score_s": t_score,
        "train_s": t_train,
        "before": before,
        "after": after,
        "adapter": str(out / "adapter"),
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=2, default=str))
    return summary


def _gap_targets(
    cfg: TrainConfig, targets: Path
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(improved, kept) rows of an ``oracle_gap`` folder, asked as the Oracle is
    served (``data.serve_prompt_style``, else ``prompt_style``): the states are the
    served Oracle's. Rows whose answer the prompt does not list are left out."""
    from .oracle_gap import gap_rows
    from .sft_rows import teacher_path

    d = cfg.data
    rows = gap_rows(targets, d.prompt_stations, d.serve_prompt_style or d.prompt_style,
                    teacher_path(cfg), cfg.rl.margin)  # fmt: skip
    rows = [r for r in rows if r["answer"]]
    return [r for r in rows if r["improved"]], [r for r in rows if not r["improved"]]


class _Schedule:
    """The ``[rl]`` update as ``sft.adamw``/``begin_step`` read a schedule: constant."""

    def __init__(self, rl: Any) -> None:
        self.learning_rate, self.steps = rl.learning_rate, rl.steps
        self.warmup_steps, self.lr_schedule, self.adam_epsilon = 0, "constant", 1e-8


def main(argv: list[str] | None = None) -> int:
    from .oracle_sft import config_with_overrides

    p = argparse.ArgumentParser(prog="python3 -m training.oracle_rl", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    p.add_argument("--config", default="cpu-smollm2", help="preset name or TOML path")
    p.add_argument("--labels", type=Path, required=True, help="optimum labels folder")
    p.add_argument("--init", type=Path, required=True,
                   help="the SFT adapter to start from (a PEFT folder)")  # fmt: skip
    p.add_argument("--out", type=Path, required=True, help="output folder (resumable)")
    p.add_argument("--set", action="append", metavar="KEY=VALUE",
                   help="override a preset key, e.g. rl.steps=50")  # fmt: skip
    p.add_argument("--targets", type=Path,
                   help="an oracle_gap folder: its look-ahead labels on the learner's "
                        "own states are the targets (no letters drawn)")  # fmt: skip
    args = p.parse_args(argv)
    try:
        cfg = config_with_overrides(args.config, args.set)
    except ValueError as e:
        p.error(str(e))
    if not (args.init / "adapter_config.json").is_file():
        p.error(f"--init {args.init}: no PEFT adapter there (adapter_config.json)")
    if not (args.labels / "episodes.jsonl").is_file():
        p.error(f"--labels {args.labels}: no optimum labels there (episodes.jsonl)")
    if args.targets and not (args.targets / "episodes.jsonl").is_file():
        p.error(f"--targets {args.targets}: no oracle_gap episodes there")
    summary = run(cfg, args.labels, args.init, args.out,
                  log=lambda m: print(m, flush=True), targets=args.targets)  # fmt: skip
    print(json.dumps({k: summary[k] for k in ("states", "improved", "before", "after")},
                     default=str))  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
