"""``distilled``: the hindsight optimum's choices, learnt by a tree ensemble.

For each request the policy lists every valid answer (``candidates``), scores
each candidate's feature row with the committed tree ensemble
(``data/distilled.json``, the portable ``evgrid-trees/1`` form) and answers the
highest-scoring one among those that spare the feeders (``Candidates.sparing``:
no ROUTE onto a feeder forecast over its limit, with the EV and the EVs already driving
there, while another answer exists;
``Distilled(spare=False)`` chooses among all, as it did until 2026-12-04). Ties go to
the first candidate (stations by id, then kinds, then DEFERs), so the same
observation always gives the same answer.

The model is trained by ``evgrid distill`` (``training/distill.py``) on the
optimum's decisions over training seeds only; how, on what and with which result
is in the model's ``meta``.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import numpy as np

from .actions import Action
from .candidates import FEATURES, candidates
from .observation import Observation
from .trees import TreeEnsemble, load

MODEL_PATH = Path(__file__).parent / "data" / "distilled.json"


@lru_cache(maxsize=4)
def load_model(path: Path = MODEL_PATH) -> TreeEnsemble:
    """The ensemble at ``path``, checked against today's candidate features."""
    model = load(path)
    if model.features != FEATURES:
        missing = sorted(set(FEATURES) ^ set(model.features))
        raise ValueError(
            f"{path} was trained on other candidate features "
            f"(differing: {', '.join(missing) or 'their order'}); retrain with evgrid distill"
        )
    return model


class Distilled:
    """The optimum's choices learnt by gradient-boosted trees over candidate features."""

    name = "distilled"

    def __init__(
        self, model_path: str | Path | None = None, *, spare: bool = True
    ) -> None:
        self.model = load_model(Path(model_path) if model_path else MODEL_PATH)
        self.spare = spare  # choose among ``Candidates.sparing`` (the feeders' relief)

    def reset(self, seed: int) -> None:  # deterministic: nothing to seed
        pass

    def act(self, obs: Observation) -> Action | str:
        if obs.request is None:
            return "NO_REQUEST"
        c = candidates(obs)
        if not len(c):
            return "NO_STATION"  # no valid answer at all: the env strands the EV
        scores = self.model.predict(c.features)
        if self.spare:
            scores = np.where(c.sparing(), scores, -np.inf)
        return c.actions[int(np.argmax(scores))]
