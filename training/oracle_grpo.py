"""GRPO on the Oracle's letter prompt: TRL's ``GRPOTrainer``, each letter scored by the env.

Starting from an SFT adapter (``training.oracle_sft``), on decision states that
``rl.generator`` (``distilled``) plays on ``rl.seeds`` (``sft_rows.played_rows``: the
decision prompt, its listed options under letters):

1. TRL samples a group of ``grpo.num_generations`` answers per state at
   ``grpo.temperature``: one token, every token but the letters suppressed (the
   Oracle answers under a grammar of letters too; ``grpo.max_completion_length`` is
   not read).
2. Each answer is scored by the environment (``env_return``): its letter's line is
   applied to a copy of the state and ``rl.continuation`` plays ``rl.horizon_ticks``
   more (``oracle_rl.Verdict``, ``rewards.rollout``), minus the same after the
   generator's own pick. Every member of a group plays the same episode from the
   same state: an episode's arrivals and the feeders' noise are drawn from its seed
   at reset, so the letter is the only difference. An answer that is not a listed
   letter is played as it reads, and the env refuses it (the invalid penalty).
3. GRPO takes each answer's advantage within its group and updates the adapter
   (``grpo.beta`` 0: no reference model, the SFT adapter itself is trained).

Every ``grpo.eval_every`` steps, on states of ``rl.eval_seeds`` (never trained on):
the return after the model's greedy letter minus after the generator's pick
(``oracle_rl.policy_gain``), and the KL divergence of the model's choice over the
listed letters from the starting adapter's. Checkpoints every ``grpo.save_every``
steps; a run that stops resumes from its last one. Curves: ``logs/grpo.{csv,png}``.

    python3 -m training.oracle_grpo --config cpu-smollm2 --init ADAPTER --out runs/grpo
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from .config import TrainConfig

COLUMNS = ("letters", "listed", "expert_action", "scenario", "seed", "step")
GRPO_CURVES = (
    ("env reward (letter minus the generator's pick)", ("reward", "reward_std")),
    ("held out: return after the greedy letter minus the generator's", ("gain",)),
    ("held out: KL from the start over the letters [nats]", ("kl_letters",)),
    ("loss", ("loss",)),
)


def env_return(verdict: Callable[[dict[str, Any], str], float]) -> Callable:
    """TRL's reward function: per completion, the env's return after its letter's
    line minus after the generator's own pick (``verdict``: row, line -> return)."""
    from .rewards import completion_text

    def env_return(completions: list[Any], **cols: Any) -> list[float]:
        out = []
        for k, completion in enumerate(completions):
            row = {name: cols[name][k] for name in COLUMNS}
            text = completion_text(completion).strip()
            line = dict(zip(row["letters"], row["listed"], strict=True)).get(text, text)
            out.append(verdict(row, line) - verdict(row, row["expert_action"]))
        return out

    return env_return


def letter_kl(p: list[np.ndarray], q: list[np.ndarray]) -> float:
    """Mean KL(p || q) over states, each a distribution over the listed letters."""
    return float(np.mean([np.sum(a * (np.log(a + 1e-12) - np.log(b + 1e-12)))
                          for a, b in zip(p, q, strict=True)]))  # fmt: skip


def _last_checkpoint(run_dir: Path) -> str | None:
    done = sorted(run_dir.glob("checkpoint-*"), key=lambda p: int(p.name[11:]))
    return str(done[-1]) if done else None


def run(cfg: TrainConfig, init: Path, out: Path, log: Any = print) -> dict[str, Any]:
    """GRPO from the adapter at ``init`` (resumed when ``out`` holds a checkpoint);
    returns the summary (also ``out/summary.json``)."""
    from .model import require_train_stack, torch_settings

    require_train_stack()
    with torch_settings(cfg):
        return _run(cfg, init, out, log)


def _run(cfg: TrainConfig, init: Path, out: Path, log: Any) -> dict[str, Any]:
    from datasets import Dataset
    from peft import PeftModel
    from transformers import TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    from oracle.prompt import LETTERS

    from .model import base_model_path, load_model, trainer_precision
    from .oracle_rl import Verdict, letter_probs, policy_gain
    from .patches import score_completion_tokens_only_on_cpu
    from .sft_rows import cached_rows, played_rows

    rl, d, g = cfg.rl, cfg.data, cfg.grpo
    if g.beta:  # TRL's reference for a PEFT model is the base with the adapter off
        raise ValueError(
            "grpo.beta must be 0 here: with an adapter TRL's KL is taken against the "
            "base model, not the SFT adapter this run starts from (the held-out KL "
            "over the letters measures the drift from it instead)"
        )
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()

    def states(seeds: tuple[int, int], per: int, name: str) -> list[dict[str, Any]]:
        return cached_rows(out / name, lambda: played_rows(
            rl.generator, seeds, d.scenarios, d.prompt_stations, per,
            style=d.prompt_style))  # fmt: skip

    train_rows = [r for r in states(rl.seeds, rl.states_per_episode, "states.jsonl")
                  if len(r["letters"]) > 1]  # one option: nothing to choose  # fmt: skip
    eval_rows = states(rl.eval_seeds, rl.eval_states_per_episode, "eval_states.jsonl")
    log(f"states: {len(train_rows)} to train on, {len(eval_rows)} held out "
        f"({time.perf_counter() - t0:.0f} s)")  # fmt: skip
    score_completion_tokens_only_on_cpu()
    model, tok, _ = load_model(base_model_path(cfg), cfg, "cpu", train_dtype="float32")
    model = PeftModel.from_pretrained(model, str(init), is_trainable=True)
    verdict = Verdict(cfg)
    model.eval()
    evals_path = out / "eval.jsonl"
    start_path = out / "start_probs.json"  # the starting adapter's, for the KL
    if start_path.is_file():
        start_probs = [np.asarray(p) for p in json.loads(start_path.read_text())]
    else:
        start_probs = letter_probs(model, tok, eval_rows, cfg.model.max_seq_length)
        start_path.write_text(json.dumps([p.tolist() for p in start_probs]))

    def held_out(step: int) -> dict[str, Any]:
        was_training = model.training
        model.eval()
        probs = letter_probs(model, tok, eval_rows, cfg.model.max_seq_length)
        r = {"step": step, **policy_gain(model, tok, eval_rows, cfg, verdict, probs),
             "kl_letters": letter_kl(probs, start_probs)}  # fmt: skip
        r["gain"] = r.pop("gain_vs_generator")
        model.train(was_training)
        with evals_path.open("a") as f:
            f.write(json.dumps(r) + "\n")
        log(f"held out at step {step}: gain {r['gain']:+.3f} ± {r['ci95']:.3f}, "
            f"KL over the letters {r['kl_letters']:.4f}")  # fmt: skip
        return r

    evals = [json.loads(x) for x in evals_path.read_text().splitlines()] if evals_path.is_file() else []  # fmt: skip
    if not evals:
        evals.append(held_out(0))

    class HeldOut(TrainerCallback):
        def on_step_end(self, args, state, control, **kw):  # noqa: ANN001, ANN201, ARG002
            step = state.global_step
            due = g.eval_every and (step % g.eval_every == 0 or step == g.steps)
            if due and all(e["step"] != step for e in evals):
                evals.append(held_out(step))

    keep = [{"prompt": r["prompt"], **{k: r[k] for k in COLUMNS}} for r in train_rows]
    # As the Oracle runs (a grammar over letters), an answer is one letter token.
    allowed = {tok.convert_tokens_to_ids(x) for x in LETTERS}
    width = max(len(tok), model.get_output_embeddings().weight.shape[0])
    suppress = [i for i in range(width) if i not in allowed]
    run_dir = out / "grpo-run"
    args = GRPOConfig(
        output_dir=str(run_dir),
        max_steps=g.steps,
        learning_rate=g.learning_rate,
        per_device_train_batch_size=g.batch_size,
        gradient_accumulation_steps=g.grad_accum,
        num_generations=g.num_generations,
        max_completion_length=1,
        temperature=g.temperature,
        generation_kwargs={"suppress_tokens": suppress},
        beta=g.beta,
        logging_steps=g.logging_steps,
        save_strategy="steps" if g.save_every else "no",
        save_steps=g.save_every or 500,
        save_total_limit=2,
        report_to=[],
        seed=cfg.seed,
        data_seed=cfg.seed,
        lr_scheduler_type="constant",
        warmup_steps=0,
        disable_tqdm=False,
        **trainer_precision("cpu"),
    )
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=[env_return(verdict)],
        args=args,
        train_dataset=Dataset.from_list(keep),
        processing_class=tok,
        callbacks=[HeldOut()],
    )
    t_train = time.perf_counter()
    trainer.train(resume_from_checkpoint=_last_checkpoint(run_dir))
    t_train = time.perf_counter() - t_train
    model.save_pretrained(str(out / "adapter"))
    write_curves(out, trainer.state.log_history, f"GRPO {cfg.name}")
    summary = {
        "init": str(init),
        "grpo": {k: getattr(g, k) for k in g.__dataclass_fields__},
        "rl": {k: getattr(rl, k) for k in rl.__dataclass_fields__},
        "states": len(train_rows),
        "eval_states": len(eval_rows),
        "train_s": t_train,
        "evals": evals,
        "adapter": str(out / "adapter"),
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=2, default=str))
    return summary


def write_curves(
    out: Path, log_history: list[dict] | None = None, title: str = "GRPO"
) -> Path:
    """``logs/grpo.{csv,png}`` of a run dir: the trainer's log (``log_history``, or
    the newest checkpoint's: a stopped run's curves) and the held-out figures."""
    from .logs import plot_curves, write_csv

    if log_history is None:
        last = _last_checkpoint(out / "grpo-run")
        if last is None:
            raise FileNotFoundError(f"{out}: no checkpoint under grpo-run/")
        log_history = json.loads((Path(last) / "trainer_state.json").read_text())[
            "log_history"
        ]
    rows = [dict(h) for h in log_history if "reward" in h]
    evals = out / "eval.jsonl"
    for line in evals.read_text().splitlines() if evals.is_file() else []:
        e = json.loads(line)
        rows.append(
            {"step": e["step"], "gain": e["gain"], "kl_letters": e["kl_letters"]}
        )
    rows.sort(key=lambda r: r["step"])
    csv_path = write_csv(rows, out / "logs" / "grpo.csv", keep=("reward", "gain"))
    return plot_curves(csv_path, out / "logs" / "grpo.png", title, GRPO_CURVES)


def main(argv: list[str] | None = None) -> int:
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # see oracle_sft.main
    from .oracle_sft import config_with_overrides

    p = argparse.ArgumentParser(
        prog="python3 -m training.oracle_grpo", description=__doc__.splitlines()[0]
    )
    p.add_argument("--config", default="cpu-smollm2", help="preset name or TOML path")
    p.add_argument("--init", type=Path, help="the SFT adapter (PEFT dir)")
    p.add_argument("--out", required=True, type=Path, help="run dir (resumes there)")
    p.add_argument("--curves", action="store_true",
                   help="only write --out's curves (a stopped run's, from its checkpoint)")  # fmt: skip
    p.add_argument("--set", action="append", metavar="KEY=VALUE",
                   help="override one preset key (section.field=TOML value)")  # fmt: skip
    args = p.parse_args(argv)
    if args.curves:
        print(write_curves(args.out))
        return 0
    if args.init is None or not (args.init / "adapter_config.json").is_file():
        p.error(f"--init {args.init}: no adapter_config.json (a PEFT adapter dir)")
    try:
        cfg = config_with_overrides(args.config, args.set)
    except ValueError as e:
        p.error(str(e))
    if cfg.grpo.steps < 1:
        p.error("grpo.steps is 0: nothing to train (--set grpo.steps=N)")
    summary = run(cfg, args.init, args.out,
                  log=lambda m: print(m, file=sys.stderr, flush=True))  # fmt: skip
    first, last = summary["evals"][0], summary["evals"][-1]
    print(f"held out: gain {first['gain']:+.3f} -> {last['gain']:+.3f} "
          f"(step {last['step']}), KL over the letters {last['kl_letters']:.4f}")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
