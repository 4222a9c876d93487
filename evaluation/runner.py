"""Paired-seed runs: every policy on the same (scenario, seed) episodes, resumable.

Each finished episode is appended as one JSON line to ``episodes.jsonl`` in the
output folder; a restart skips the (policy, scenario, seed) already there, so an
interrupted comparison loses at most the episode in flight. A record names the
grid model it ran on, and one folder holds one grid model's episodes, and carries
each feeder's load tick by tick (``feeders``; records from before it have none).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from evgrid_core import EVGridEnv, SimConfig
from evgrid_core.grid import GridModel, GridTick
from evgrid_core.rollout import episode_record, play_episode

OPTIMUM = "optimum"  # the hindsight optimum's row in a comparison
EPISODES_FILE = "episodes.jsonl"


# --- Per-feeder series -----------------------------------------------------------------
class FeederLog:
    """The episode's grid model, keeping each tick's ``GridTick`` as it hands it out.

    The world asks its grid model once per tick (``carry``); the last answer for a
    tick is what the feeders carried in it. Everything else is the model's own.
    """

    def __init__(self, model: GridModel) -> None:
        self.model = model
        self.ticks: dict[int, GridTick] = {}

    def carry(self, tick: int, station_kw: np.ndarray) -> GridTick:
        g = self.ticks[tick] = self.model.carry(tick, station_kw)
        return g

    def __getattr__(self, name: str):  # noqa: ANN204 - forecast and the rest
        return getattr(self.model, name)


def watch_feeders(env: EVGridEnv) -> FeederLog:
    """Log the feeders of ``env``'s episode, from just after ``reset``.

    ``reset`` already ran the ticks before the first request; no EV had been
    decided, so no station drew any load: those ticks are asked again of the same
    model with none, as the world asked them.
    """
    w = env.world
    assert w is not None and env.steps == 0, "watch the feeders right after reset()"
    log = FeederLog(w.grid)
    idle = np.zeros(env.city.n_stations)
    for t in range(min(env.tick, w.n_ticks)):
        log.carry(t, idle)
    w.grid = log
    return log


def feeder_series(log: FeederLog, env: EVGridEnv) -> dict[str, Any]:
    """Per feeder, per tick [kW]: capacity, background, EV load carried, EV load shed."""
    ticks = [log.ticks[t] for t in range(env.world.n_ticks)]  # type: ignore[union-attr]

    def series(get: Callable[[GridTick], Any]) -> list[list[float]]:
        rows = np.array([np.asarray(get(g), dtype=float) for g in ticks])  # (T, F)
        return [[round(x, 2) for x in col] for col in rows.T.tolist()]

    return {
        "names": [f.name for f in env.city.feeders],
        "tick_minutes": env.config.tick_minutes,
        "capacity_kw": series(lambda g: g.capacity_kw),
        "background_kw": series(lambda g: g.background_kw),
        "ev_kw": series(lambda g: g.ev_kw),
        "shed_kw": series(lambda g: g.shed_kw),
    }


# --- One episode ----------------------------------------------------------------------
def _record(
    env: EVGridEnv, policy: str, seed: int, log: FeederLog | None
) -> dict[str, Any]:
    rec = episode_record(env, policy, seed)
    if log is not None:
        rec["feeders"] = feeder_series(log, env)
    return rec


def _watched(
    policy: Any, scenario: str, seed: int, config: SimConfig | None
) -> tuple[EVGridEnv, FeederLog]:
    """One episode through the one loop with the feeders watched from the reset."""
    logs: list[FeederLog] = []
    env = play_episode(policy, scenario, seed, config,
                       on_reset=lambda e: logs.append(watch_feeders(e)))  # fmt: skip
    return env, logs[0]


def run_episode(
    policy: str,
    scenario: str,
    seed: int,
    *,
    config: SimConfig | None = None,
    optimum: dict[str, Any] | None = None,
    instance: Any = None,
    solve_progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """One episode of a named policy (or ``optimum``) as a JSON-able record.

    ``instance``: an already built policy to use (e.g. an LLM loaded once).
    The optimum's record carries its solve in ``optimum`` (status, source, gap,
    bound...); a limited or failed solve is recorded with its status, not raised.
    """
    if policy == OPTIMUM:
        from .optimum import PlanPolicy, solve_episode

        res = solve_episode(
            scenario, seed, config=config, progress=solve_progress, **(optimum or {})
        )
        assert res.env is not None
        env, log = _watched(PlanPolicy(res.plan), scenario, seed, config)
        # The plan replayed with the feeders watched; no series when the replay does
        # not give the reported return.
        ok = env.kpis.total_return == res.replay_return
        rec = _record(res.env, policy, seed, log if ok else None)
        rec["optimum"] = res.summary()
        return rec
    from evgrid_core.policies import make_policy

    p = instance if instance is not None else make_policy(policy)
    env, log = _watched(p, scenario, seed, config)
    return _record(env, policy, seed, log)


# --- Many episodes, resumable ---------------------------------------------------------
def record_grid(record: dict[str, Any]) -> str:
    """The grid model a record ran on (records from before ``grid`` was written:
    the feeder sum, then the only model)."""
    return record.get("grid", "feeder_sum")


def load_records(path: Path) -> list[dict[str, Any]]:
    """Records of a JSONL file; a torn last line (interrupted write) is ignored."""
    if not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return out


def pending(
    policies: Iterable[str],
    scenarios: Iterable[str],
    seeds: Iterable[int],
    out_dir: Path,
    config: SimConfig | None = None,
) -> tuple[Path, list[dict[str, Any]], list[tuple[str, str, int]]]:
    """(the folder's episodes file, its records, the (policy, scenario, seed) jobs
    not yet in it, in run order). Refuses a folder of another grid model's episodes;
    ends a torn last line so the next record starts clean."""
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / EPISODES_FILE
    records = load_records(path)
    grid = (config or SimConfig()).grid
    other = sorted({record_grid(r) for r in records} - {grid})
    if other:
        raise ValueError(
            f"{out_dir} holds episodes on grid model {', '.join(other)}, not {grid}: "
            "give this grid model its own --out"
        )
    done = {(r["policy"], r["scenario"], r["seed"]) for r in records}
    seeds, policies = list(seeds), list(policies)
    jobs = [
        (p, sc, s)
        for sc in scenarios
        for s in seeds
        for p in policies
        if (p, sc, s) not in done
    ]
    if path.exists() and path.read_bytes()[-1:] not in (b"", b"\n"):
        with path.open("a") as f:
            f.write("\n")
    return path, records, jobs


def run_jobs(
    jobs: Iterable[tuple[str, str, int]],
    *,
    config: SimConfig | None = None,
    optimum: dict[str, Any] | None = None,
    policy_kwargs: dict[str, dict[str, Any]] | None = None,
    solve_progress: Callable[[str], None] | None = None,
) -> Iterator[dict[str, Any]]:
    """The record of each (policy, scenario, seed) job, in order, each policy built
    once (``make_policy(name, **policy_kwargs[name])``) and reset per episode: the
    loop of ``run_comparison`` and of each of its Ray tasks (``ray_compare``)."""
    from evgrid_core.policies import make_policy

    built: dict[str, Any] = {}
    for policy, scenario, seed in jobs:
        if policy != OPTIMUM and policy not in built:
            built[policy] = make_policy(policy, **(policy_kwargs or {}).get(policy, {}))
        yield run_episode(policy, scenario, seed, config=config, optimum=optimum,
                          instance=built.get(policy), solve_progress=solve_progress)  # fmt: skip


def append_record(path: Path, rec: dict[str, Any], code: str = "") -> dict[str, Any]:
    """Append one record to an ``episodes.jsonl`` (with ``code`` when given)."""
    if code:
        rec["code"] = code
    with path.open("a") as f:
        f.write(json.dumps(rec) + "\n")
    return rec


def run_comparison(
    policies: Iterable[str],
    scenarios: Iterable[str],
    seeds: Iterable[int],
    out_dir: Path,
    *,
    config: SimConfig | None = None,
    optimum: dict[str, Any] | None = None,
    progress: bool = True,
    code: str = "",
    policy_kwargs: dict[str, dict[str, Any]] | None = None,
) -> list[dict[str, Any]]:
    """Run every (scenario, seed, policy) not yet in ``out_dir``; return all records.

    Each policy is built once (``make_policy(name, **policy_kwargs[name])``) and
    reset per episode. ``code`` (see ``code_version``) goes into each new record.
    """
    from tqdm import tqdm

    path, records, jobs = pending(policies, scenarios, seeds, out_dir, config)
    bar = tqdm(total=len(jobs), unit="ep", file=sys.stderr, disable=not progress)
    say = (lambda line: bar.write(line, file=sys.stderr)) if progress else None

    def announced() -> Iterator[tuple[str, str, int]]:
        for job in jobs:  # named on the bar while it runs
            bar.set_description(f"{job[0]} {job[1]} s{job[2]}")
            yield job

    for rec in run_jobs(announced(), config=config, optimum=optimum,
                        policy_kwargs=policy_kwargs, solve_progress=say):  # fmt: skip
        records.append(append_record(path, rec, code))
        bar.update()
    bar.close()
    return records


def code_version() -> str:
    """The commit the code runs from, and the core/evaluation files edited since."""
    root = Path(__file__).resolve().parent.parent

    def git(*a: str) -> str:
        try:
            return subprocess.run(
                ["git", *a], cwd=root, capture_output=True, text=True, timeout=10
            ).stdout
        except (OSError, subprocess.SubprocessError):
            return ""

    commit = git("rev-parse", "--short", "HEAD").strip()
    if not commit:
        return ""
    dirty = git("status", "--porcelain", "--", "evgrid_core", "evaluation")
    edited = sorted({ln[3:] for ln in dirty.splitlines() if ln.strip()})
    return f"{commit}" + (f" + edits to {', '.join(edited)}" if edited else " (clean)")
