"""Statistics over paired episodes: means with 95 % CIs, paired differences, % of optimal.

Episodes are paired by (scenario, seed): every policy met the same arrivals, so
differences are taken seed by seed (smaller variance than comparing means).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from evgrid_core import aggregate

from .runner import OPTIMUM

Record = Mapping[str, Any]


def t95(n: int) -> float:
    """Two-sided 95 % Student-t quantile with n - 1 degrees of freedom."""
    from scipy import stats

    return float(stats.t.ppf(0.975, n - 1)) if n > 1 else math.nan


def by_scenario_policy(
    records: Iterable[Record],
) -> dict[str, dict[str, dict[int, Record]]]:
    """scenario -> policy -> seed -> record (the last record wins on duplicates)."""
    out: dict[str, dict[str, dict[int, Record]]] = defaultdict(
        lambda: defaultdict(dict)
    )
    for r in records:
        out[r["scenario"]][r["policy"]][int(r["seed"])] = r
    return out


def value(r: Record, key: str) -> float:
    """A KPI, ``return``, a reward part (``part:<key>``) or ``pct_optimal``."""
    if key == "return":
        return float(r["return"])
    if key.startswith("part:"):
        return float(r["parts"][key[5:]])
    if key in r.get("derived", {}):
        return float(r["derived"][key])
    return float(r["kpis"][key])


def summarise(
    runs: Mapping[int, Record], keys: Iterable[str]
) -> dict[str, dict[str, float]]:
    """Mean, sd, 95 % CI half-width and n of each key over one policy's episodes."""
    rows = [{k: value(r, k) for k in keys} for r in runs.values()]
    return aggregate(rows)


def paired(
    runs: Mapping[int, Record], reference: Mapping[int, Record], key: str
) -> dict[str, float]:
    """Policy minus reference on the seeds both have, with a 95 % CI and two tests.

    ``t_p``: paired t-test; ``wilcoxon_p``: Wilcoxon signed-rank (no normality
    assumption). Both two-sided; 1.0 when every difference is zero.
    """
    from scipy import stats

    seeds = sorted(set(runs) & set(reference))
    d = np.array([value(runs[s], key) - value(reference[s], key) for s in seeds])
    n = len(d)
    out = {"n": float(n), "mean_diff": float(d.mean()) if n else math.nan}
    if n < 2:
        return out | {"ci95": math.nan, "t_p": math.nan, "wilcoxon_p": math.nan}
    sd = float(d.std(ddof=1))
    out["ci95"] = t95(n) * sd / math.sqrt(n)
    if not np.any(d != 0):
        return out | {"t_p": 1.0, "wilcoxon_p": 1.0}
    out["t_p"] = float(stats.ttest_rel(d, np.zeros(n)).pvalue) if sd > 0 else 0.0
    out["wilcoxon_p"] = float(stats.wilcoxon(d).pvalue)
    return out


def pct_of_optimal(policy_return: float, optimum_return: float) -> float:
    """100 x optimum cost / policy cost (returns are costs <= 0): 100 = optimal.

    ``optimum_return`` may be a bound (see ``PCT_LABELS``). Above 100 means the
    policy beat it (possible only because the optimum plans in a restricted class:
    see ``plan_options``).
    """
    if policy_return == 0.0:
        return 100.0 if optimum_return == 0.0 else math.inf
    return 100.0 * optimum_return / policy_return


# What "% of ..." divides by, per seed (``OptimumResult.reference_kind``): the optimum's
# return when the MILP closed and its plan is reported; the MILP's bound when it did
# not close; the reported return when a plan outside the class beats the bound.
PCT_LABELS = {
    "optimal": "% of optimal",
    "bound": "% of bound",
    "best": "% of best known",
}


def optimum_reference(r: Record) -> tuple[float, str]:
    """(return to divide by, its kind) of an optimum record (older records: its return)."""
    opt = r.get("optimum", {})
    if "reference_return" in opt:
        return float(opt["reference_return"]), str(opt["reference_kind"])
    closed = "Optimal" in str(opt.get("status", "Optimal"))
    return float(r["return"]), "optimal" if closed else "best"


def pct_label(kinds: Iterable[str]) -> str:
    """The column label for a set of seeds: '% of optimal', '% of bound', or both."""
    ks = sorted(set(kinds), key=list(PCT_LABELS).index)
    if not ks:
        return PCT_LABELS["optimal"]
    return "% of " + " / ".join(PCT_LABELS[k][5:] for k in ks)


def add_pct_optimal(records: list[dict[str, Any]]) -> None:
    """Set ``derived.pct_optimal`` (and ``pct_of``, its kind) on every record whose
    (scenario, seed) has an optimum: 100 x reference / return, see ``PCT_LABELS``."""
    ref = {
        (r["scenario"], r["seed"]): optimum_reference(r)
        for r in records
        if r["policy"] == OPTIMUM
    }
    for r in records:
        key = (r["scenario"], r["seed"])
        if key in ref:
            r.setdefault("derived", {})["pct_optimal"] = pct_of_optimal(
                r["return"], ref[key][0]
            )
            r["pct_of"] = ref[key][1]
