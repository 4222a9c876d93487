"""``evgrid labels --ray``: one Ray task per optimum solve (``labels.label_episode``),
rows and summaries written in job order, as ``label_runs`` with one worker writes
them; only the solve times differ. Ray is started by ``evaluation.ray_compare``."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from evaluation.ray_compare import ray_start

from .labels import (
    DECISIONS_FILE,
    EPISODES_FILE,
    check_out_dir,
    label_episode,
    recover_runs,
)


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
