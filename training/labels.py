"""Optimum-labelled decision states: every decision of the hindsight optimum's replay.

``label_runs`` solves the hindsight optimum (``evaluation.optimum``) of each
(scenario, seed), replays the reported plan through ``env.step`` and writes one
row per step to ``decisions.jsonl``, then one summary per episode to
``episodes.jsonl``. An episode is done when its summary is written: a restart
skips it, and drops the rows of an episode cut short (killed between its rows and
its summary), so no row is written twice. The core is deterministic, so a row is
re-created exactly by ``reset(seed, scenario)`` and the episode's actions before
``step`` (``label_states``, ``restore_label_env``).

The optimum's plan may strand an EV on purpose (``STRAND``, the action it answers
with is refused by the env): such rows keep the line, with ``valid`` false and
``planned_invalid`` true. Training seeds must lie below ``HELDOUT_FIRST_SEED``.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from evaluation.runner import load_records
from evgrid_core import EVGridEnv, Observation, get_scenario
from evgrid_core.rollout import episode_record

from .config import DataConfig

DECISIONS_FILE = "decisions.jsonl"  # one row per env.step of the optimum's replay
EPISODES_FILE = "episodes.jsonl"  # one summary per solved (scenario, seed)
HELDOUT_FIRST_SEED = DataConfig().heldout_seeds[0]  # seeds from here on: held out
SOLVE_KEYS = ("source", "status", "proven_optimal", "gap", "replay_return")


# --- Arguments -------------------------------------------------------------------------
def parse_seeds(text: str) -> range:
    """``"A:B"`` (seeds A to B-1) or ``"N"`` (one seed); refuses held-out seeds."""
    try:
        parts = [int(p) for p in text.split(":")]
    except ValueError:
        raise ValueError(f"--seeds {text!r}: give FIRST:LAST (e.g. 0:40)") from None
    if len(parts) == 1:
        parts.append(parts[0] + 1)
    if len(parts) != 2 or not 0 <= parts[0] < parts[1]:
        raise ValueError(f"--seeds {text!r}: give FIRST:LAST with 0 <= FIRST < LAST")
    seeds = range(*parts)
    check_training_seeds(seeds)
    return seeds


def check_training_seeds(seeds: range) -> None:
    if seeds.stop > HELDOUT_FIRST_SEED:
        raise ValueError(
            f"seeds {seeds.start}:{seeds.stop} overlap the held-out seeds "
            f"(from {HELDOUT_FIRST_SEED} on); label training seeds only"
        )


def check_scenarios(names: Iterable[str]) -> list[str]:
    out = [n.strip() for n in names if n.strip()]
    if not out:
        raise ValueError("give at least one scenario")
    for name in out:
        get_scenario(name)  # ValueError naming the known ones
    return out


def check_out_dir(out_dir: Path) -> None:
    """Make the folder and prove it writable, or say why not in one line."""
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        probe = out_dir / ".write-test"
        probe.write_text("")
        probe.unlink()
    except OSError as e:
        raise ValueError(
            f"output folder {out_dir} is not writable: {e.strerror}"
        ) from None


# --- One episode (runs in a worker process) -------------------------------------------
def label_episode(
    scenario: str,
    seed: int,
    settings: dict[str, Any] | None = None,
    require_proven: bool = False,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Solve one episode's optimum; (decision rows, summary). Top-level: picklable."""
    from evaluation.optimum import INVALID_ANSWER, replay, solve_episode

    res = solve_episode(scenario, seed, **(settings or {}))
    solve = {k: getattr(res, k) for k in SOLVE_KEYS}
    env = EVGridEnv()
    env.reset(seed=seed, scenario=scenario)
    log: list[tuple[int, str, bool]] = []  # each decision's EV, action, validity
    ret, refused = replay(env, res.plan, lambda action, r: log.append(
        (int(r.info["ev"]), str(action), bool(r.info["valid"]))))  # fmt: skip
    if abs(ret - res.replay_return) > 1e-6 * max(1.0, abs(ret)):
        raise RuntimeError(
            f"{scenario} seed {seed}: the plan replays to {ret}, "
            f"the solve reported {res.replay_return}"
        )
    labelled = res.proven_optimal or not require_proven
    rows = [
        {
            "scenario": scenario,
            "seed": seed,
            "step": i,
            "ev": ev,
            "action": action,
            "valid": valid,
            "planned_invalid": action == INVALID_ANSWER,
            **solve,
        }
        for i, (ev, action, valid) in enumerate(log)
    ]
    summary = {
        "scenario": scenario,
        "seed": seed,
        **solve,
        "labelled": labelled,
        "decisions": len(rows),
        "refused_steps": refused,
        "planned_invalid": sum(r["planned_invalid"] for r in rows),
        "n_evs": res.n_evs,
        "nodes": res.nodes,
        "solve_s": res.solve_s,
        "build_s": res.build_s,
        "settings": settings or {},
        "plan": {str(k): v for k, v in res.plan.items()},
        "record": episode_record(env, "optimum", seed),  # compare's, for this episode
    }
    return (rows if labelled else []), summary


# --- Many episodes, resumable ---------------------------------------------------------
def recover_runs(out_dir: Path) -> set[tuple[str, int]]:
    """The (scenario, seed) episodes already done in ``out_dir``, after rewriting its
    files without torn lines and without rows of an episode whose summary is missing
    (a run killed mid-write). Every resumable labelling runner calls it first
    (``episode_runs`` here, ``training.ray_labels.label_runs_ray``)."""
    ep_path, dec_path = out_dir / EPISODES_FILE, out_dir / DECISIONS_FILE
    episodes = load_records(ep_path)
    done = {(e["scenario"], e["seed"]) for e in episodes}
    rows = load_records(dec_path)
    kept = [r for r in rows if (r["scenario"], r["seed"]) in done]
    for path, keep in ((ep_path, episodes), (dec_path, kept)):
        if not path.exists():
            continue
        text = "".join(json.dumps(r) + "\n" for r in keep)
        if path.read_text() != text:  # a torn line or an episode cut short
            tmp = path.with_suffix(".tmp")
            tmp.write_text(text)
            os.replace(tmp, path)
    return done


def label_runs(
    scenarios: Iterable[str],
    seeds: Iterable[int],
    out_dir: Path,
    *,
    settings: dict[str, Any] | None = None,
    workers: int = 1,
    require_proven: bool = False,
    progress: bool = True,
) -> list[dict[str, Any]]:
    """Label every (scenario, seed) not yet in ``out_dir``; return the new summaries."""
    return episode_runs(label_episode, (settings, require_proven), scenarios, seeds,
                        out_dir, workers=workers, progress=progress, unit="solve")  # fmt: skip


def episode_runs(
    work: Any,
    args: tuple[Any, ...],
    scenarios: Iterable[str],
    seeds: Iterable[int],
    out_dir: Path,
    *,
    workers: int = 1,
    progress: bool = True,
    unit: str = "episode",
) -> list[dict[str, Any]]:
    """``work(scenario, seed, *args) -> (rows, summary)`` for every (scenario, seed)
    not yet in ``out_dir``; the new summaries. Resumable: ``workers`` > 1 runs that
    many processes, and this one writes an episode's rows first, then its summary."""
    from concurrent.futures import ProcessPoolExecutor, as_completed

    from tqdm import tqdm

    check_out_dir(out_dir)
    done = recover_runs(out_dir)
    jobs = [(sc, s) for sc in scenarios for s in seeds if (sc, s) not in done]
    new: list[dict[str, Any]] = []
    bar = tqdm(total=len(jobs), unit=unit, file=sys.stderr, disable=not progress)

    def write(rows: list[dict[str, Any]], summary: dict[str, Any]) -> None:
        with (out_dir / DECISIONS_FILE).open("a") as f:
            f.writelines(json.dumps(r) + "\n" for r in rows)
        with (out_dir / EPISODES_FILE).open("a") as f:
            f.write(json.dumps(summary) + "\n")
        new.append(summary)
        bar.set_description(f"{summary['scenario']} s{summary['seed']}")
        bar.update()

    try:
        if workers <= 1:
            for sc, s in jobs:
                write(*work(sc, s, *args))
        else:
            with ProcessPoolExecutor(max_workers=workers) as pool:
                futures = [pool.submit(work, sc, s, *args) for sc, s in jobs]
                for fut in as_completed(futures):
                    write(*fut.result())
    finally:
        bar.close()
    return new


# --- Reading the labels back ----------------------------------------------------------
def load_labels(out_dir: Path, *, require_proven: bool = False) -> list[dict[str, Any]]:
    """Decision rows of finished episodes, by (scenario, seed, step)."""
    done = {
        (e["scenario"], e["seed"])
        for e in load_records(out_dir / EPISODES_FILE)
        if e["labelled"] and (e["proven_optimal"] or not require_proven)
    }
    rows = [
        r
        for r in load_records(out_dir / DECISIONS_FILE)
        if (r["scenario"], r["seed"]) in done
    ]
    return sorted(rows, key=lambda r: (r["scenario"], r["seed"], r["step"]))


def restore_label_env(actions: list[str], scenario: str, seed: int) -> EVGridEnv:
    """The env after the episode's first ``len(actions)`` actions (a fresh replay)."""
    env = EVGridEnv()
    env.reset(seed=seed, scenario=scenario)
    for i, action in enumerate(actions):
        if env.done:
            raise ValueError(f"{scenario} seed {seed} ends after {i} decisions")
        env.step(action)
    return env


def label_states(
    rows: Iterable[dict[str, Any]],
) -> Iterator[tuple[Observation, str]]:
    """(observation, optimum's action line) per row, replaying each episode once.

    Rows of one episode must come together, from step 0 on (as ``load_labels``
    returns them); a row whose state or validity the replay does not reproduce
    is an error.
    """
    for env, r, where in replay_rows(rows, gaps=False):
        yield env.observation(), r["action"]
        if env.step(r["action"]).info["valid"] != r["valid"]:
            raise ValueError(f"{where}: validity differs")


def replay_rows(
    rows: Iterable[dict[str, Any]], *, gaps: bool
) -> Iterator[tuple[EVGridEnv, dict[str, Any], str]]:
    """(env in the row's state, row, "scenario seed S step N") per row, one replay an
    episode; the consumer applies the row's answer before asking for the next.

    Rows of one episode come together, in step order. ``gaps``: a step without a
    row is a state with no candidate at all, answered ``NO_STATION``; otherwise a
    missing step is an error. A row whose EV is not the env's request is an error.
    """
    env: EVGridEnv | None = None
    key: tuple[str, int] | None = None
    for r in rows:
        if (r["scenario"], r["seed"]) != key:
            key = (r["scenario"], r["seed"])
            env = EVGridEnv()
            env.reset(seed=r["seed"], scenario=r["scenario"])
        assert env is not None
        while gaps and env.steps < r["step"] and not env.done:
            env.step("NO_STATION")
        if r["step"] != env.steps or env.done:
            raise ValueError(f"{key[0]} seed {key[1]}: no row for step {env.steps}")
        where = f"{key[0]} seed {key[1]} step {env.steps}"
        if env.request_id != r["ev"]:
            raise ValueError(f"{where}: another EV decides")
        yield env, r, where
