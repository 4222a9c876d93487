"""Measure GRPO's choices before training: the horizon, the group and its temperature.

On decision states (``oracle_grpo``'s held-out ``eval_states.jsonl``, or states it
plays itself), every listed letter is applied to a copy of the state and scored by
``oracle_rl.Verdict`` at each horizon of ``--horizons`` (ticks of ``rl.continuation``
after the letter; the largest is taken as the truth, 1000 = to the episode's end):

- **signal**: the share of states where the letters' returns differ at all (a group
  whose members all score the same teaches nothing);
- **agreement with the truth**: per state, the rank correlation of the letters'
  returns at a horizon with those at the longest, and how often the best letter at a
  horizon is a best one at the longest;
- **cost**: seconds per scored letter.

With the starting adapter's letter probabilities (``start_probs.json``, same order)
it adds, per temperature and group size G, the share of groups of G letters drawn at
that temperature that would score all alike (zero advantage: no gradient), computed
exactly from the probabilities and the scored returns (no sampling).

    python3 -m training.grpo_choices --states runs/grpo-smollm2/eval_states.jsonl \\
        --probs runs/grpo-smollm2/start_probs.json --horizons 6,12,24,1000 \\
        --out docs/training/grpo-choices.json
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np


def rank_corr(a: np.ndarray, b: np.ndarray) -> float:
    """Spearman's rank correlation (scipy's: ties share their mean rank); NaN when
    either is constant."""
    from scipy.stats import spearmanr

    if np.ptp(a) == 0 or np.ptp(b) == 0:
        return float("nan")
    return float(spearmanr(a, b).statistic)


def zero_variance_share(
    probs: np.ndarray, returns: np.ndarray, temperature: float, g: int
) -> float:
    """Chance that ``g`` letters drawn from ``probs`` at ``temperature`` all score
    the same return (their letters differ or not): sum over the distinct returns of
    (their letters' probability) ** g."""
    p = probs ** (1.0 / temperature)
    p = p / p.sum()
    return float(sum(p[returns == v].sum() ** g for v in np.unique(returns)))


def score_states(
    rows: list[dict[str, Any]], cfg: Any, horizons: list[int], log: Any = print
) -> tuple[np.ndarray, float]:
    """Per row and horizon, every listed letter's return (a list of arrays per row,
    stacked as object array), and the seconds per scored letter."""
    from tqdm import tqdm

    from .oracle_rl import Verdict

    verdicts = [
        Verdict(
            dataclasses.replace(cfg, rl=dataclasses.replace(cfg.rl, horizon_ticks=h))
        )
        for h in horizons
    ]
    out, n, t0 = [], 0, time.perf_counter()
    for r in tqdm(rows, unit="state", file=sys.stderr):
        out.append(np.array([[v(r, line) for line in r["listed"]] for v in verdicts]))
        n += len(r["listed"]) * len(horizons)
    return out, (time.perf_counter() - t0) / max(n, 1)


def summarise(
    returns: list[np.ndarray],
    horizons: list[int],
    probs: list[np.ndarray] | None,
    temperatures: list[float],
    groups: list[int],
) -> dict[str, Any]:
    """The figures of the module's docstring from ``score_states``' returns."""
    many = [i for i, r in enumerate(returns) if r.shape[1] > 1]
    out: dict[str, Any] = {"states": len(returns), "states_with_a_choice": len(many)}
    truth = len(horizons) - 1
    per_h = {}
    for k, h in enumerate(horizons):
        signal = [bool(np.ptp(returns[i][k]) > 1e-9) for i in many]
        corr = [rank_corr(returns[i][k], returns[i][truth]) for i in many]
        corr = [c for c in corr if c == c]
        best_ok = []
        for i in many:
            r = returns[i]
            if np.ptp(r[truth]) <= 1e-9:
                continue  # every letter is best at the truth's horizon
            pick = int(np.argmax(r[k]))
            best_ok.append(bool(r[truth][pick] >= r[truth].max() - 1e-9))
        spread = [float(np.std(returns[i][k])) for i in many]
        per_h[str(h)] = {
            "signal": float(np.mean(signal)),
            "rank_corr_with_longest": float(np.mean(corr)) if corr else float("nan"),
            "best_is_best_at_longest": float(np.mean(best_ok))
            if best_ok
            else float("nan"),
            "mean_spread": float(np.mean(spread)),
        }
    out["horizons"] = per_h
    if probs is not None:
        zv = {}
        for k, h in enumerate(horizons):
            for t in temperatures:
                for g in groups:
                    s = [
                        zero_variance_share(probs[i], returns[i][k], t, g) for i in many
                    ]
                    zv[f"h{h}_t{t:g}_g{g}"] = float(np.mean(s))
        out["zero_variance_groups"] = zv
    return out


def main(argv: list[str] | None = None) -> int:
    from .oracle_sft import config_with_overrides

    p = argparse.ArgumentParser(
        prog="python3 -m training.grpo_choices", description=__doc__.splitlines()[0]
    )
    p.add_argument("--config", default="cpu-smollm2")
    p.add_argument("--states", type=Path, required=True, help="decision rows (jsonl)")
    p.add_argument("--probs", type=Path, help="the adapter's letter probs (json)")
    p.add_argument("--horizons", default="6,12,24,1000", help="ticks, the longest last")
    p.add_argument("--temperatures", default="1,2,4")
    p.add_argument("--groups", default="4,8,16")
    p.add_argument("--limit", type=int, default=0, help="first N states only")
    p.add_argument("--out", type=Path, help="write the figures (json) here")
    p.add_argument("--set", action="append", metavar="KEY=VALUE")
    args = p.parse_args(argv)
    try:
        horizons = [int(x) for x in args.horizons.split(",")]
        temps = [float(x) for x in args.temperatures.split(",")]
        groups = [int(x) for x in args.groups.split(",")]
    except ValueError as e:
        p.error(f"lists are comma-separated numbers: {e}")
    if sorted(horizons) != horizons or min(horizons) < 1:
        p.error(
            "--horizons: positive ticks in increasing order (the longest is the truth)"
        )
    if not args.states.is_file():
        p.error(f"--states {args.states}: no such file")
    rows = [json.loads(x) for x in args.states.read_text().splitlines() if x.strip()]
    probs = None
    if args.probs:
        probs = [np.asarray(x) for x in json.loads(args.probs.read_text())]
        if len(probs) != len(rows):
            p.error(f"--probs has {len(probs)} rows, --states {len(rows)}")
    if args.limit:
        rows, probs = rows[: args.limit], probs and probs[: args.limit]
    cfg = config_with_overrides(args.config, args.set)
    returns, per_letter = score_states(rows, cfg, horizons)
    figures = summarise(returns, horizons, probs, temps, groups)
    figures["seconds_per_letter"] = per_letter
    figures["continuation"] = cfg.rl.continuation
    figures["states_file"] = str(args.states)
    text = json.dumps(figures, indent=2)
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
