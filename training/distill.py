"""Train ``distilled``: a gradient-boosted candidate scorer on the optimum's decisions.

Each labelled decision (``training/labels.py``) becomes one group of rows, one
per valid answer (``evgrid_core.candidates``), the optimum's answer marked 1.
LightGBM learns to rank the optimum's answer first (``lambdarank``) and the
booster is written as ``evgrid-trees/1`` JSON (``evgrid_core.trees``), which the
policy evaluates with numpy: no LightGBM, no pickle at run time.

Deterministic: one thread, fixed seeds, LightGBM's deterministic mode, rows in
label order; the same labels give the same model bytes.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections import Counter
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from evgrid_core.candidates import FEATURES, candidates
from evgrid_core.optional import require
from evgrid_core.trees import FORMAT, TreeEnsemble, from_json

from .dagger import load_rollout_labels, rollout_states
from .labels import label_states, load_labels


@dataclass(frozen=True)
class DistillConfig:
    """LightGBM settings.

    Chosen on training seeds 24-29 held out of a fit on seeds 0-23 (4 scenarios):
    150 trees at 0.1 matched 300 at 0.05 (agreement 0.804 vs 0.806; 90-95 % of
    optimal in each scenario) at half the scoring cost; a depth cap of 8 changed
    nothing beyond noise. The held-out seeds (900000 on) played no part.
    """

    objective: str = "lambdarank"
    n_trees: int = 150
    learning_rate: float = 0.1
    num_leaves: int = 31
    min_data_in_leaf: int = 20
    feature_fraction: float = 0.8
    bagging_fraction: float = 0.8
    bagging_freq: int = 1
    lambda_l2: float = 1.0
    seed: int = 0
    extra: dict[str, Any] = field(default_factory=dict)

    def params(self) -> dict[str, Any]:
        p = {
            "objective": self.objective,
            "learning_rate": self.learning_rate,
            "num_leaves": self.num_leaves,
            "min_data_in_leaf": self.min_data_in_leaf,
            "feature_fraction": self.feature_fraction,
            "bagging_fraction": self.bagging_fraction,
            "bagging_freq": self.bagging_freq,
            "lambda_l2": self.lambda_l2,
            "seed": self.seed,
            "deterministic": True,
            "force_row_wise": True,
            "num_threads": 1,
            "verbosity": -1,
        }
        if self.objective == "lambdarank":
            p |= {"lambdarank_truncation_level": 3, "eval_at": [1]}
        return p | self.extra


@dataclass
class Dataset:
    """Candidate rows grouped by decision; ``y`` marks the optimum's answer."""

    X: np.ndarray  # (rows, len(FEATURES))
    y: np.ndarray  # (rows,) 0/1
    groups: np.ndarray  # (decisions,) rows per decision
    keys: list[tuple[str, int, int, bool]]  # (scenario, seed, step, look-ahead) each
    skipped: Counter  # why labelled rows were left out

    def __add__(self, other: Dataset) -> Dataset:
        return Dataset(
            np.concatenate([self.X, other.X]),
            np.concatenate([self.y, other.y]),
            np.concatenate([self.groups, other.groups]),
            self.keys + other.keys,
            self.skipped + other.skipped,
        )

    def split(self, seeds: Iterable[int]) -> tuple[Dataset, Dataset]:
        """(decisions of other seeds, decisions of ``seeds``)."""
        chosen = set(seeds)
        starts = np.concatenate([[0], np.cumsum(self.groups)])
        parts: tuple[list[int], list[int]] = ([], [])
        for i, k in enumerate(self.keys):
            parts[k[1] in chosen].append(i)
        return tuple(self._take(idx, starts) for idx in parts)  # type: ignore[return-value]

    def _take(self, idx: list[int], starts: np.ndarray) -> Dataset:
        rows = (
            np.concatenate([np.arange(starts[i], starts[i + 1]) for i in idx])
            if idx
            else np.zeros(0, dtype=int)
        )
        return Dataset(
            self.X[rows],
            self.y[rows],
            self.groups[idx],
            [self.keys[i] for i in idx],
            Counter(),
        )


def build_dataset(
    rows: list[dict[str, Any]], progress: bool = True, *, look_ahead: bool = False
) -> Dataset:
    """One group of candidate rows per labelled decision (replayed exactly).

    ``look_ahead``: the rows are ``training/dagger.py``'s (the learner's own
    episodes, labelled by look-ahead), replayed by the answers played.
    """
    from tqdm import tqdm

    states = rollout_states(rows) if look_ahead else label_states(rows)
    X, y, groups, keys, skipped = [], [], [], [], Counter()
    bar = tqdm(total=len(rows), unit="state", disable=not progress, file=sys.stderr)
    for r, (obs, line) in zip(rows, states, strict=True):
        bar.update()
        if not look_ahead and (r["planned_invalid"] or not r["valid"]):
            skipped["the optimum strands the EV (no valid answer learnt)"] += 1
            continue
        c = candidates(obs)
        lines = c.lines
        if line not in lines:
            skipped[f"{line.split()[0]} is not a candidate"] += 1
            continue
        if len(lines) == 1:
            skipped["a single candidate (nothing to learn)"] += 1
            continue
        X.append(c.features)
        y.append(np.array([ln == line for ln in lines], dtype=float))
        groups.append(len(lines))
        keys.append((r["scenario"], r["seed"], r["step"], look_ahead))
    bar.close()
    if not groups:
        raise ValueError("no labelled decision with more than one candidate")
    return Dataset(
        np.concatenate(X), np.concatenate(y), np.array(groups), keys, skipped
    )


def fit(train: Dataset, cfg: DistillConfig) -> Any:
    """The LightGBM booster (``lightgbm`` is needed here only)."""
    lgb = _lightgbm()

    ds = lgb.Dataset(
        train.X,
        label=train.y,
        group=train.groups if cfg.objective == "lambdarank" else None,
        feature_name=list(FEATURES),
        free_raw_data=False,
        params={"verbosity": -1},
    )
    return lgb.train(cfg.params(), ds, num_boost_round=cfg.n_trees)


def to_ensemble(booster: Any, meta: dict[str, Any]) -> TreeEnsemble:
    """The booster's trees as ``evgrid-trees/1`` (refuses what the format lacks)."""
    dump = booster.dump_model()
    if dump["feature_names"] != list(FEATURES):
        raise ValueError("the booster's features are not the candidate features")
    feature, threshold, left, right, value, roots = [], [], [], [], [], []

    def add(node: dict[str, Any]) -> int:
        i = len(feature)
        for a in (feature, threshold, left, right, value):
            a.append(0)
        if "leaf_value" in node:
            feature[i], value[i], left[i], right[i] = -1, node["leaf_value"], i, i
            threshold[i] = 0.0
            return i
        if node["decision_type"] != "<=" or node["missing_type"] != "None":
            raise ValueError(
                f"unsupported split ({node['decision_type']}, missing "
                f"{node['missing_type']}): candidate features must be finite numbers"
            )
        feature[i], threshold[i] = node["split_feature"], node["threshold"]
        left[i] = add(node["left_child"])
        right[i] = add(node["right_child"])
        return i

    for tree in dump["tree_info"]:
        roots.append(add(tree["tree_structure"]))
    return from_json(
        {
            "format": FORMAT,
            "features": list(FEATURES),
            "feature": feature,
            "threshold": threshold,
            "left": left,
            "right": right,
            "value": value,
            "roots": roots,
            "meta": meta,
        }
    )


def agreement(model: TreeEnsemble, data: Dataset) -> float:
    """Share of decisions where the top-scored candidate is the optimum's."""
    scores = model.predict(data.X)
    starts = np.concatenate([[0], np.cumsum(data.groups)])
    hits = [
        data.y[a + int(np.argmax(scores[a:b]))] == 1.0
        for a, b in zip(starts[:-1], starts[1:], strict=True)
    ]
    return float(np.mean(hits)) if hits else float("nan")


def labels_sha256(rows: list[dict[str, Any]]) -> str:
    """The labels a model was fitted on: sha256 of their rows as sorted-key JSON lines."""
    h = hashlib.sha256()
    for r in rows:
        h.update(json.dumps(r, sort_keys=True).encode() + b"\n")
    return h.hexdigest()


def distill(
    labels_dir: Path,
    cfg: DistillConfig = DistillConfig(),
    *,
    scenarios: Iterable[str] | None = None,
    seeds: Iterable[int] | None = None,
    validation_seeds: Iterable[int] = (),
    look_ahead_dirs: Iterable[Path] = (),
    look_ahead_seeds: Iterable[int] | None = None,
    progress: bool = True,
) -> tuple[TreeEnsemble, dict[str, Any]]:
    """Fit on the labelled (scenario, seed)s asked for (default: all) but ``validation_seeds``.

    With validation seeds, the model is fitted without them and scored on them
    (agreement with the optimum); the returned model is that one. The look-ahead
    labels in ``look_ahead_dirs`` (``training/dagger.py``: the states earlier fits
    visited, one folder a round) join the optimum's, filtered by
    ``look_ahead_seeds`` (default: ``seeds``; they need no optimum label).
    """
    lgb = _lightgbm()
    keep_s = None if scenarios is None else set(scenarios)
    keep_seed = None if seeds is None else set(seeds)
    keep_la = keep_seed if look_ahead_seeds is None else set(look_ahead_seeds)
    rows = [
        r
        for r in load_labels(labels_dir)
        if (keep_s is None or r["scenario"] in keep_s)
        and (keep_seed is None or r["seed"] in keep_seed)
    ]
    if not rows:
        raise ValueError(f"no finished labelled episode in {labels_dir}")
    data = build_dataset(rows, progress=progress)
    extra: dict[str, Any] = {}
    for i, look_dir in enumerate(look_ahead_dirs):
        la_rows = [
            r
            for r in load_rollout_labels(look_dir)
            if (keep_s is None or r["scenario"] in keep_s)
            and (keep_la is None or r["seed"] in keep_la)
        ]
        if not la_rows:
            raise ValueError(f"no finished look-ahead episode in {look_dir}")
        la = build_dataset(la_rows, progress=progress, look_ahead=True)
        data = data + la
        extra.setdefault("look_ahead", []).append(
            {
                "round": i + 1,
                "sha256": labels_sha256(la_rows),
                "decisions": len(la.groups),
                "relabelled": sum(r["action"] != r["played"] for r in la_rows),
                "episodes": _episodes(la_rows),
            }
        )
    train, valid = data.split(validation_seeds)
    if not len(train.groups):
        raise ValueError("every labelled seed is a validation seed: nothing to fit")
    booster = fit(train, cfg)
    seeds = sorted({k[1] for k in train.keys})
    report: dict[str, Any] = {
        "labels_sha256": labels_sha256(rows),
        "scenarios": sorted({k[0] for k in data.keys}),
        "train_seeds": _ranges(seeds),
        "validation_seeds": _ranges(sorted({k[1] for k in valid.keys})),
        "train_decisions": len(train.groups),
        "train_rows": len(train.y),
        "validation_decisions": len(valid.groups),
        "skipped": dict(data.skipped),
        "config": asdict(cfg),
        "lightgbm": lgb.__version__,
        **extra,
    }
    model = to_ensemble(booster, report)
    raw = booster.predict(train.X[:2000], raw_score=True)
    err = float(np.max(np.abs(raw - model.predict(train.X[:2000]))))
    if err > 1e-9:
        raise ValueError(f"the exported trees differ from LightGBM's by {err:g}")
    report["train_agreement"] = agreement(model, train)
    if len(valid.groups):
        report["validation_agreement"] = agreement(model, valid)
    model.meta.update(report)
    return model, report


def _lightgbm() -> Any:
    return require("lightgbm", "training distilled", "distill")  # or libgomp missing


def _episodes(rows: list[dict[str, Any]]) -> dict[str, list[list[int]]]:
    """{scenario: seed ranges} of the rows."""
    by: dict[str, set[int]] = {}
    for r in rows:
        by.setdefault(r["scenario"], set()).add(r["seed"])
    return {sc: _ranges(sorted(s)) for sc, s in sorted(by.items())}


def _ranges(seeds: list[int]) -> list[list[int]]:
    """[[first, last+1], ...] runs of consecutive seeds."""
    out: list[list[int]] = []
    for s in seeds:
        if out and out[-1][1] == s:
            out[-1][1] = s + 1
        else:
            out.append([s, s + 1])
    return out


def describe(report: dict[str, Any]) -> str:
    return json.dumps(
        {k: v for k, v in report.items() if k != "config"}, indent=None, default=str
    )
