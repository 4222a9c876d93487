"""``evgrid compare --ray`` and ``evgrid labels --ray``: the episodes as Ray tasks.

The same inputs as the single-process paths (``evaluation.runner.run_comparison``,
``training.labels.label_runs``) and the same files out: the jobs are listed in the
same order, run as Ray tasks (local Ray by default, a cluster by ``address``), and
their results written in job order as they come back, so ``episodes.jsonl`` (and
``decisions.jsonl``) are the single-process run's bytes. The core is deterministic
and a record depends only on (policy, scenario, seed), so where it ran changes
nothing; only wall-clock fields differ (the optimum's and the labels' solve times).
Interrupted runs resume the same way: the jobs already in the files are skipped.

On a cluster the workers need this checkout importable: install it on every node,
or pass ``runtime_env={"working_dir": ".", "excludes": [".venv", ".cache"]}``.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from evgrid_core.optional import require

TASKS_PER_CPU = 4  # chunks per CPU: small enough to balance, large enough to amortise


# --- Ray -------------------------------------------------------------------------------
def ray_start(
    address: str | None = None,
    num_cpus: int | None = None,
    runtime_env: dict[str, Any] | None = None,
) -> bool:
    """Start (or join) Ray unless it runs already; True when this call started it.

    ``address`` None: a local Ray on ``num_cpus`` CPUs (all by default); else the
    cluster at that address (``"auto"``, ``"ray://host:10001"``...).
    """
    ray = require("ray", "--ray", "rl")
    if ray.is_initialized():
        return False
    ray.init(
        address=address,
        num_cpus=num_cpus if address is None else None,
        include_dashboard=False,
        log_to_driver=False,
        runtime_env=runtime_env,
    )
    return True


def _cpus() -> int:
    import ray

    return max(1, int(ray.cluster_resources().get("CPU", 1)))


def _chunks(jobs: Sequence[Any], n_tasks: int) -> list[Sequence[Any]]:
    size = max(1, math.ceil(len(jobs) / max(1, n_tasks)))
    return [jobs[i : i + size] for i in range(0, len(jobs), size)]


# --- compare ---------------------------------------------------------------------------
def _episodes(
    jobs: Sequence[tuple[str, str, int]],
    config: Any,
    optimum: dict[str, Any] | None,
    policy_kwargs: dict[str, dict[str, Any]] | None,
) -> list[dict[str, Any]]:
    """A Ray task: these (policy, scenario, seed) episodes, each policy built once."""
    from evaluation.runner import OPTIMUM, run_episode
    from evgrid_core.policies import make_policy

    built: dict[str, Any] = {}
    out = []
    for policy, scenario, seed in jobs:
        if policy != OPTIMUM and policy not in built:
            built[policy] = make_policy(policy, **(policy_kwargs or {}).get(policy, {}))
        out.append(
            run_episode(
                policy,
                scenario,
                seed,
                config=config,
                optimum=optimum,
                instance=built.get(policy),
            )
        )
    return out


def run_comparison_ray(
    policies: Iterable[str],
    scenarios: Iterable[str],
    seeds: Iterable[int],
    out_dir: Path,
    *,
    config: Any = None,
    optimum: dict[str, Any] | None = None,
    progress: bool = True,
    code: str = "",
    policy_kwargs: dict[str, dict[str, Any]] | None = None,
    address: str | None = None,
    num_cpus: int | None = None,
    runtime_env: dict[str, Any] | None = None,
    tasks_per_cpu: int = TASKS_PER_CPU,
) -> list[dict[str, Any]]:
    """``run_comparison`` with the episodes as Ray tasks; the same records, in the
    same order, in the same ``episodes.jsonl``."""
    import ray
    from tqdm import tqdm

    from evaluation.runner import pending

    path, records, jobs = pending(policies, scenarios, seeds, out_dir, config)
    if not jobs:
        return records
    started = ray_start(address, num_cpus, runtime_env)
    try:
        task = ray.remote(num_cpus=1)(_episodes)
        cfg, opt, kw = ray.put(config), ray.put(optimum), ray.put(policy_kwargs)
        futures = [
            task.remote(chunk, cfg, opt, kw)
            for chunk in _chunks(jobs, _cpus() * tasks_per_cpu)
        ]
        bar = tqdm(total=len(jobs), unit="ep", file=sys.stderr, disable=not progress)
        for fut in futures:  # in job order: the file is the single-process run's
            for rec in ray.get(fut):
                if code:
                    rec["code"] = code
                with path.open("a") as f:
                    f.write(json.dumps(rec) + "\n")
                records.append(rec)
                bar.update()
        bar.close()
    finally:
        if started:
            ray.shutdown()
    return records


# --- labels ----------------------------------------------------------------------------
def label_runs_ray(
    scenarios: Iterable[str],
    seeds: Iterable[int],
    out_dir: Path,
    *,
    settings: dict[str, Any] | None = None,
    require_proven: bool = False,
    progress: bool = True,
    address: str | None = None,
    num_cpus: int | None = None,
    runtime_env: dict[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """``label_runs`` with one Ray task per solve; rows and summaries written in job
    order (as ``workers=1`` writes them); returns the new summaries."""
    import ray
    from tqdm import tqdm

    from training.labels import (
        DECISIONS_FILE,
        EPISODES_FILE,
        check_out_dir,
        label_episode,
        recover_runs,
    )

    check_out_dir(out_dir)
    done = recover_runs(out_dir)
    jobs = [(sc, s) for sc in scenarios for s in seeds if (sc, s) not in done]
    new: list[dict[str, Any]] = []
    if not jobs:
        return new
    started = ray_start(address, num_cpus, runtime_env)
    try:
        task = ray.remote(num_cpus=1)(label_episode)
        futures = [task.remote(sc, s, settings, require_proven) for sc, s in jobs]
        bar = tqdm(total=len(jobs), unit="solve", file=sys.stderr, disable=not progress)
        for fut in futures:
            rows, summary = ray.get(fut)
            with (out_dir / DECISIONS_FILE).open("a") as f:
                f.writelines(json.dumps(r) + "\n" for r in rows)
            with (out_dir / EPISODES_FILE).open("a") as f:
                f.write(json.dumps(summary) + "\n")
            new.append(summary)
            bar.update()
        bar.close()
    finally:
        if started:
            ray.shutdown()
    return new
