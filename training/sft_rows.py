"""The SFT rows of the Oracle: a decision prompt and the letter of the answer.

Rows come from the hindsight optimum's labels (``training.labels``: every decision
of the optimum's replay, ``evgrid labels``), or from the states a policy plays
(``played_rows``: its own pick the answer). Each holds the prompt
(``oracle.prompt.decision_prompt`` of the exact state), the action, its letter (None
when the prompt does not list it), the listed lines, the actions valid in the state
and the distilled teacher's score of each listed line. ``dataset`` builds a run's
rows once and caches them in its ``data/`` folder.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from .config import TrainConfig


def decision_row(
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
        out.append(decision_row(obs, action, stations, teacher, style, **key))
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
                    decision_row(
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


def cached_rows(path: Path, build: Any) -> list[dict[str, Any]]:
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
        played = cached_rows(
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
        "train": cached_rows(
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
        "heldout_optimum": cached_rows(
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
        "heldout_played": cached_rows(
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


def eval_subset(rows: list[dict[str, Any]], n: int, seed: int) -> list[dict[str, Any]]:
    """``n`` rows spread over the list (a fixed pick: the same at every evaluation)."""
    if n >= len(rows):
        return rows
    rng = np.random.default_rng([seed, 0xE7A1])
    return [rows[i] for i in sorted(rng.choice(len(rows), size=n, replace=False))]
