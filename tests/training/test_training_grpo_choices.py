"""``training.grpo_choices``: the figures GRPO's horizon, group and temperature were
chosen by, on hand-made returns whose answers are known."""

from __future__ import annotations

import math

import numpy as np
import pytest

from training.grpo_choices import rank_corr, summarise, zero_variance_share


def test_rank_correlation_with_ties_and_constants() -> None:
    assert rank_corr(np.array([1.0, 2, 3]), np.array([10.0, 20, 30])) == pytest.approx(
        1
    )
    assert rank_corr(np.array([1.0, 2, 3]), np.array([3.0, 2, 1])) == pytest.approx(-1)
    assert rank_corr(np.array([1.0, 1, 2]), np.array([5.0, 5, 9])) == pytest.approx(1)
    assert math.isnan(rank_corr(np.array([1.0, 1, 1]), np.array([1.0, 2, 3])))


def test_zero_variance_share_is_exact() -> None:
    p = np.array([0.5, 0.5])
    assert zero_variance_share(p, np.array([1.0, 1.0]), 1.0, 8) == 1.0  # all alike
    assert zero_variance_share(p, np.array([1.0, 2.0]), 1.0, 3) == pytest.approx(0.25)
    sure = np.array([0.9, 0.1])  # a higher temperature flattens the draw
    cold = zero_variance_share(sure, np.array([0.0, 1.0]), 1.0, 4)
    hot = zero_variance_share(sure, np.array([0.0, 1.0]), 3.0, 4)
    assert cold == pytest.approx(0.9**4 + 0.1**4) and hot < cold


def test_summarise_scores_each_horizon_against_the_longest() -> None:
    # two states, three letters, horizons 6 and 1000 (rows); the short horizon ranks
    # the first state's letters backwards and ties the second's
    returns = [
        np.array([[3.0, 2, 1], [1.0, 2, 3]]),
        np.array([[0.0, 0, 0], [1.0, 0, 0]]),
    ]
    probs = [np.array([0.2, 0.3, 0.5]), np.array([0.6, 0.2, 0.2])]
    out = summarise(returns, [6, 1000], probs, [1.0], [2])
    short, long = out["horizons"]["6"], out["horizons"]["1000"]
    assert short["signal"] == 0.5 and long["signal"] == 1.0
    assert short["rank_corr_with_longest"] == pytest.approx(
        -1.0
    )  # the tie: NaN, left out
    assert (
        short["best_is_best_at_longest"] == 0.5 and long["best_is_best_at_longest"] == 1
    )
    want = np.mean([0.2**2 + 0.3**2 + 0.5**2, 0.6**2 + 0.4**2])
    assert out["zero_variance_groups"]["h1000_t1_g2"] == pytest.approx(want)
