"""``evgrid compare --ray``: the comparison's episodes as Ray tasks, and starting Ray.

The same inputs as the single-process path (``runner.run_comparison``) and the same
file out: the jobs are listed in the same order, run as Ray tasks (local Ray by
default, a cluster by ``address``) through the same loop (``runner.run_jobs``), and
their records written in job order as they come back, so ``episodes.jsonl`` is the
single-process run's bytes. (``evgrid labels --ray``: ``training.ray_labels``.) The core is deterministic
and a record depends only on (policy, scenario, seed), so where it ran changes
nothing; only wall-clock fields differ (the optimum's and the labels' solve times).
Interrupted runs resume the same way: the jobs already in the files are skipped.

On a cluster the workers need this checkout importable: install it on every node,
or pass ``runtime_env={"working_dir": ".", "excludes": [".venv", ".cache"]}``.
"""

from __future__ import annotations

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
    """A Ray task: these (policy, scenario, seed) episodes (``runner.run_jobs``)."""
    from .runner import run_jobs

    return list(
        run_jobs(jobs, config=config, optimum=optimum, policy_kwargs=policy_kwargs)
    )


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

    from .runner import append_record, pending

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
                records.append(append_record(path, rec, code))
                bar.update()
        bar.close()
    finally:
        if started:
            ray.shutdown()
    return records
