"""Held-out checks during training: the exported actor played on validation seeds.

Seeds: training draws below 900000; the report (``evgrid compare``) plays
900000-900019; these checks play from ``VALIDATION_FIRST_SEED`` (950000), so
neither the training nor the choice of when to stop ever sees the report's seeds.
Each check plays the numpy policy (``evgrid_rl.policy.PPOPolicy``), exactly what
``evgrid compare`` will play, and greedy_eta once on the same seeds as the line to
beat.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from evgrid_core.policies import make_policy
from evgrid_core.rollout import run_episode

VALIDATION_FIRST_SEED = 950_000


def validation_seeds(n: int) -> list[int]:
    return [VALIDATION_FIRST_SEED + i for i in range(n)]


# What a check records beside the return: EVs lost and the feeders' overload.
KPIS = ("gave_up", "stranded", "overload_feeder_min", "shed_kwh")


def check(
    policy_name: str, scenarios: tuple[str, ...], n_seeds: int, **policy_kwargs: object
) -> dict[str, float]:
    """Means over the first ``n_seeds`` validation seeds: ``val_<scenario>`` (return)
    per scenario, and over all scenarios ``val_return`` and ``val_<kpi>``."""
    out: dict[str, float] = {}
    kpis: dict[str, list[float]] = {k: [] for k in KPIS}
    rets = []
    for sc in scenarios:
        here = []
        for seed in validation_seeds(n_seeds):
            res = run_episode(make_policy(policy_name, **policy_kwargs), sc, seed)
            here.append(res.ret)
            for k in KPIS:
                kpis[k].append(res.kpis[k])
        out[f"val_{sc}"] = float(np.mean(here))
        rets += here
    out["val_return"] = float(np.mean(rets))
    out.update({f"val_{k}": float(np.mean(v)) for k, v in kpis.items()})
    return out


def check_actor(
    weights: Path, scenarios: tuple[str, ...], n_seeds: int
) -> dict[str, float]:
    """The exported actor at ``weights`` (``check`` of the ``ppo`` policy)."""
    return check("ppo", scenarios, n_seeds, weights=weights)
