"""A tree ensemble stored as plain JSON numbers and evaluated with numpy.

The learned policy's model (``distilled``) is a sum of regression trees. It is
stored in a portable, non-executable form, ``evgrid-trees/1``: one JSON object
whose node arrays say, for node ``i``, the feature it splits on (-1: a leaf),
the threshold (go left when ``x[feature] <= threshold``), its two children, and
its value (a leaf's contribution to the score). ``roots`` names each tree's first
node. Any language can read and evaluate it; nothing in it runs code.

Each row is walked down each tree by a kernel (``_predict_into``), and a row's
leaves are added as numpy adds a row of an array (pairwise, ``jit.array_sum``): a
request's ~50 candidates through 150 trees in about 0.1 ms.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from .jit import array_sum, kernel

FORMAT = "evgrid-trees/1"
NODE_ARRAYS = ("feature", "threshold", "left", "right", "value")


@dataclass(frozen=True, eq=False)
class TreeEnsemble:
    """Sum of trees over named features; ``meta`` says how it was made."""

    features: tuple[str, ...]
    feature: np.ndarray  # (N,) int: split feature, -1 at a leaf
    threshold: np.ndarray  # (N,) float: go left when x <= threshold
    left: np.ndarray  # (N,) int: child node indices (a leaf points to itself)
    right: np.ndarray  # (N,) int
    value: np.ndarray  # (N,) float: a leaf's contribution
    roots: np.ndarray  # (T,) int
    depth: int  # the longest root-to-leaf path, in splits
    meta: dict[str, Any]

    def predict(self, X: np.ndarray) -> np.ndarray:
        """(n,) the ensemble's score of each row of ``X`` (n, len(features)), finite."""
        X = np.asarray(X, dtype=float)
        if X.ndim != 2 or X.shape[1] != len(self.features):
            raise ValueError(
                f"expected rows of {len(self.features)} features, got shape {X.shape}"
            )
        if not np.isfinite(X).all():
            raise ValueError("features must be finite numbers")
        if not len(X):
            return np.zeros(0)
        feature, threshold, first, value = self._walk
        out = np.empty(len(X))
        _predict_into(X, feature, threshold, first, value, self._walk_roots,
                      np.empty(len(self.roots)), out)  # fmt: skip
        return out

    @cached_property
    def _walk(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The trees laid out for walking: (feature, threshold, first child, value).

        Nodes are renumbered so that every split's children are adjacent (left,
        then right): the next node is ``first[node] + (x > threshold[node])``. A
        leaf has an infinite threshold (and points to itself): the walk ends there.
        """
        order, first = _adjacent_layout(self.left, self.right, self.feature, self.roots)
        new = np.empty(len(order), dtype=np.int64)
        new[order] = np.arange(len(order))
        leaf = self.feature[order] < 0
        feature = np.where(leaf, 0, self.feature[order])
        threshold = np.where(leaf, np.inf, self.threshold[order])
        first = np.where(leaf, np.arange(len(order)), first)
        object.__setattr__(self, "_walk_roots", new[self.roots])
        return feature, threshold, first, self.value[order]

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "features": list(self.features),
            "roots": self.roots.tolist(),
            **{name: getattr(self, name).tolist() for name in NODE_ARRAYS},
            "meta": self.meta,
        }


@kernel
def _predict_into(X, feature, threshold, first, value, roots, leaves, out) -> None:  # noqa: ANN001, PLR0913
    """Each row of ``X`` down each tree of the walking layout (``_walk``: a leaf's
    threshold is inf; the next node is ``first + (x > threshold)``), its leaves'
    values summed in tree order as numpy sums a row (pairwise) into ``out``."""
    for i in range(X.shape[0]):
        for j in range(roots.size):
            node = roots[j]
            while threshold[node] < np.inf:
                node = first[node] + (1 if X[i, feature[node]] > threshold[node] else 0)
            leaves[j] = value[node]
        out[i] = array_sum(leaves, roots.size)


def from_json(data: dict[str, Any]) -> TreeEnsemble:
    """Check and load an ``evgrid-trees/1`` object (a clear error on anything else)."""
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ValueError(f"not an {FORMAT} model (format: {_get(data, 'format')!r})")
    try:
        features = tuple(str(f) for f in data["features"])
        arrays = {
            "feature": np.asarray(data["feature"], dtype=np.int64),
            "threshold": np.asarray(data["threshold"], dtype=float),
            "left": np.asarray(data["left"], dtype=np.int64),
            "right": np.asarray(data["right"], dtype=np.int64),
            "value": np.asarray(data["value"], dtype=float),
        }
        roots = np.asarray(data["roots"], dtype=np.int64)
    except (KeyError, TypeError, ValueError) as e:
        raise ValueError(f"malformed {FORMAT} model: {e}") from None
    n = len(arrays["feature"])
    if any(a.shape != (n,) for a in arrays.values()) or roots.ndim != 1:
        raise ValueError(f"malformed {FORMAT} model: node arrays differ in length")
    for name in ("left", "right"):
        if n and not ((arrays[name] >= 0) & (arrays[name] < n)).all():
            raise ValueError(f"malformed {FORMAT} model: {name} child out of range")
    if len(roots) and not ((roots >= 0) & (roots < n)).all():
        raise ValueError(f"malformed {FORMAT} model: root out of range")
    if (
        n
        and not ((arrays["feature"] >= -1) & (arrays["feature"] < len(features))).all()
    ):
        raise ValueError(f"malformed {FORMAT} model: split on an unknown feature")
    if not (
        np.isfinite(arrays["threshold"]).all() and np.isfinite(arrays["value"]).all()
    ):
        raise ValueError(
            f"malformed {FORMAT} model: a threshold or value is not finite"
        )
    return TreeEnsemble(
        features=features,
        roots=roots,
        depth=_depth(arrays["feature"], arrays["left"], arrays["right"], roots),
        meta=dict(data.get("meta") or {}),
        **arrays,
    )


def load(path: Path) -> TreeEnsemble:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as e:
        raise ValueError(f"cannot read the model {path}: {e.strerror}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"{path} is not JSON: {e}") from None
    return from_json(data)


def save(model: TreeEnsemble, path: Path) -> None:
    """Write compactly (one line); the same model gives the same bytes."""
    Path(path).write_text(
        json.dumps(model.to_json(), separators=(",", ":"), sort_keys=True) + "\n",
        encoding="utf-8",
    )


def _depth(
    feature: np.ndarray, left: np.ndarray, right: np.ndarray, roots: np.ndarray
) -> int:
    """The longest path in splits; refuses cycles (a walk longer than the node count)."""
    level, depth = np.unique(roots), 0
    while True:
        level = level[feature[level] >= 0]
        if not len(level):
            return depth
        depth += 1
        if depth > len(feature):
            raise ValueError(f"malformed {FORMAT} model: the trees have a cycle")
        level = np.unique(np.concatenate([left[level], right[level]]))


def _adjacent_layout(
    left: np.ndarray, right: np.ndarray, feature: np.ndarray, roots: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """A renumbering with each split's children adjacent: (old index per new, first child).

    ``first[i]`` is the new index of new node i's left child (its right child is
    the next one); meaningless for leaves. Nodes no root reaches are dropped.
    """
    order: list[int] = []
    first: list[int] = []
    position: dict[int, int] = {}
    queue = list(dict.fromkeys(roots.tolist()))
    for r in queue:
        position[r] = len(order)
        order.append(r)
    i = 0
    while i < len(order):
        node = order[i]
        if feature[node] >= 0:
            first.append(len(order))
            for child in (int(left[node]), int(right[node])):
                position.setdefault(child, len(order))
                order.append(child)
        else:
            first.append(0)
        i += 1
    return np.array(order, dtype=np.int64), np.array(first, dtype=np.int64)


def _get(data: object, key: str) -> object:
    return data.get(key) if isinstance(data, dict) else type(data).__name__
