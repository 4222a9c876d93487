"""Rollout labels on the states ``distilled`` itself visits (DAgger by look-ahead).

The optimum's labels (``training/labels.py``) describe the optimum's own
episodes, which never queue: a scorer fitted on them has never seen a long
queue, and under ``festival_surge`` it routes EVs into queues they give up in.
These labels cover the states the learner reaches. ``distilled`` plays a
training seed; at each decision its ``top_k`` best-scored candidates are tried
on a copy of the env, each followed by ``distilled``'s own play to the
episode's end (or for ``horizon_ticks``), and the candidate with the best return
is the label (one step of policy improvement; the exogenous world is the same
in every copy, so the comparison is exact for that continuation). The episode
goes on with the model's own answer.

A row keeps what it needs to be re-created (scenario, seed, step, the answer
played) and the label with each tried candidate's return. Files are resumable
like the optimum's: an episode is done when its summary is written.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from evaluation.runner import load_records
from evgrid_core import EVGridEnv, Observation
from evgrid_core.candidates import candidates
from evgrid_core.trees import TreeEnsemble

from .labels import DECISIONS_FILE, EPISODES_FILE, episode_runs, replay_rows


@dataclass(frozen=True)
class LookAhead:
    """How a state visited by the learner is labelled."""

    top_k: int = 3  # candidates tried: the model's best-scored ones
    # [ticks] of the model's own play after each; None: to the episode's end (the
    # committed model's round; a 1 h horizon made festival_surge worse, -10.8 an
    # episode on selection seeds 50-69)
    horizon_ticks: int | None = None
    margin: float = 0.05  # a candidate must beat the model's pick by this much


def _scores(model: TreeEnsemble, obs: Observation) -> tuple[list[str], np.ndarray]:
    c = candidates(obs)
    if not len(c):
        return [], np.zeros(0)
    return c.lines, model.predict(c.features)


def _play(
    env: EVGridEnv, model: TreeEnsemble, line: str, until_tick: int | None
) -> float:
    """Answer ``line``, then let the model answer until ``until_tick`` (None: the
    episode's end); summed reward."""
    total = env.step(line).reward
    while not env.done and (until_tick is None or env.tick < until_tick):
        lines, s = _scores(model, env.observation())
        total += env.step(lines[int(np.argmax(s))] if lines else "NO_STATION").reward
    return total


def rollout_episode(
    scenario: str,
    seed: int,
    model_path: str,
    look: dict[str, Any],
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """One training episode played by the model, every decision labelled. Picklable."""
    from evgrid_core.distilled import load_model

    la = LookAhead(**look)
    model = load_model(Path(model_path))
    env = EVGridEnv()
    env.reset(seed=seed, scenario=scenario)
    rows, ret, changed = [], 0.0, 0
    step = 0
    while not env.done:
        lines, s = _scores(model, env.observation())
        if not lines:
            ret += env.step("NO_STATION").reward
            step += 1
            continue
        order = np.argsort(-s, kind="stable")[: la.top_k]
        played = lines[int(order[0])]
        returns = {}
        if len(lines) > 1:
            until = None if la.horizon_ticks is None else env.tick + la.horizon_ticks
            for i in order:
                returns[lines[int(i)]] = _play(env.clone(), model, lines[int(i)], until)
        best = max(returns, key=returns.__getitem__) if returns else played
        label = (
            best if returns and returns[best] > returns[played] + la.margin else played
        )
        changed += label != played
        rows.append(
            {
                "scenario": scenario,
                "seed": seed,
                "step": step,
                "ev": env.request_id,
                "played": played,
                "action": label,
                "returns": returns,
            }
        )
        ret += env.step(played).reward
        step += 1
    summary = {
        "scenario": scenario,
        "seed": seed,
        "model_return": ret,
        "decisions": len(rows),
        "relabelled": changed,
        "look_ahead": asdict(la),
        "model_sha256": _sha256(Path(model_path)),
    }
    return rows, summary


def rollout_runs(
    scenarios: Iterable[str],
    seeds: Iterable[int],
    out_dir: Path,
    model_path: Path,
    look: LookAhead = LookAhead(),
    *,
    workers: int = 1,
    progress: bool = True,
) -> list[dict[str, Any]]:
    """Label every (scenario, seed) not yet in ``out_dir``; the new summaries."""
    sha = _sha256(model_path)
    for e in load_records(out_dir / EPISODES_FILE):
        if e.get("model_sha256") != sha or e["look_ahead"] != asdict(look):
            raise ValueError(
                f"{out_dir} holds look-ahead labels of another model or look-ahead "
                f"({e['scenario']} seed {e['seed']}); give another folder or delete it"
            )
    return episode_runs(rollout_episode, (str(model_path), asdict(look)), scenarios,
                        seeds, out_dir, workers=workers, progress=progress)  # fmt: skip


def _sha256(path: Path) -> str:
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest()


def load_rollout_labels(out_dir: Path) -> list[dict[str, Any]]:
    """Rows of finished episodes, by (scenario, seed, step)."""
    done = {(e["scenario"], e["seed"]) for e in load_records(out_dir / EPISODES_FILE)}
    rows = [
        r
        for r in load_records(out_dir / DECISIONS_FILE)
        if (r["scenario"], r["seed"]) in done
    ]
    return sorted(rows, key=lambda r: (r["scenario"], r["seed"], r["step"]))


def rollout_states(
    rows: Iterable[dict[str, Any]],
) -> Iterator[tuple[Observation, str]]:
    """(observation, label) per row, replaying the answers the model played."""
    for env, r, _ in replay_rows(rows, gaps=True):
        yield env.observation(), r["action"]
        env.step(r["played"])
