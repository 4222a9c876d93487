"""The baselines' estimates as kernels give numpy's floats and choices, bit for bit.

``estimates.py`` computes the expected wait, the charging minutes, the ETA and the
argmin as kernels over the observation's arrays. The numpy code they replaced is
kept here as the reference; both are compared on every decision of episodes of
every scenario, played by policies that reach long queues, closures and DC-less
EVs (and under ``NUMBA_DISABLE_JIT=1`` by ``test_core_jit.py``'s run of the core).
"""

from __future__ import annotations

import numpy as np
import pytest

from evgrid_core import EVGridEnv
from evgrid_core.chargers import N_KINDS
from evgrid_core.charging import plug_kw
from evgrid_core.config import DEFAULTS
from evgrid_core.estimates import (
    TYPICAL_SESSION_MIN,
    argmin,
    charge_minutes,
    eta_minutes,
    expected_wait,
)
from evgrid_core.policies import make_policy
from evgrid_core.scenarios import SCENARIOS


# --- The reference: the numpy code the kernels replaced ---------------------------
def ref_charge_minutes(obs) -> np.ndarray:  # noqa: ANN001
    r = obs.request
    kw = np.array([plug_kw(k, r.max_ac_kw, r.max_dc_kw) for k in range(N_KINDS)])
    kw = np.maximum(kw, 1e-6)
    kwh = max(0.0, r.target - r.soc) * r.battery_kwh / DEFAULTS.charge_efficiency
    return np.broadcast_to(kwh / kw * 60.0, obs.plugs.shape)


def ref_expected_wait(obs) -> np.ndarray:  # noqa: ANN001
    free = obs.plugs - obs.busy
    typical = TYPICAL_SESSION_MIN[None, :]
    ahead = np.maximum(0, obs.queue - free + 1)
    return np.where(obs.plugs > 0, ahead * typical / np.maximum(obs.plugs, 1), np.inf)


def ref_eta_minutes(obs) -> np.ndarray:  # noqa: ANN001
    eta = obs.travel_min[:, None] + ref_expected_wait(obs) + ref_charge_minutes(obs)
    return np.where(obs.route_mask, eta, np.inf)


def refargmin(score: np.ndarray) -> tuple[int, int] | None:
    if not np.isfinite(score).any():
        return None
    s, k = np.unravel_index(int(np.argmin(score)), score.shape)
    return int(s), int(k)


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and a.tobytes() == np.asarray(b, dtype=float).tobytes()


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_core_estimates_equal_numpys_on_every_decision(scenario: str) -> None:
    env = EVGridEnv()
    decisions = 0
    for seed, name in ((3, "greedy_eta"), (11, "all_to_one_station")):
        policy = make_policy(name)
        env.reset(seed=seed, scenario=scenario)
        policy.reset(seed)
        while not env.done:
            obs = env.observation()
            assert _same(expected_wait(obs), ref_expected_wait(obs))
            assert _same(charge_minutes(obs), ref_charge_minutes(obs))
            eta = eta_minutes(obs)
            assert _same(eta, ref_eta_minutes(obs))
            assert argmin(eta) == refargmin(eta)
            env.step(policy.act(obs))
            decisions += 1
    assert decisions > 20


def test_core_argmin_equals_numpys_on_edge_cases() -> None:
    inf, nan = np.inf, np.nan
    cases = [
        [[inf, inf], [inf, inf]],  # nothing finite: no choice
        [[3.0, 1.0], [1.0, 2.0]],  # ties: the first
        [[inf, -inf], [5.0, inf]],  # -inf is the smallest once anything is finite
        [[nan, 2.0], [1.0, inf]],  # numpy's argmin answers the first NaN
        [[2.0, 1.0], [nan, nan]],
        [[nan, nan], [inf, inf]],  # NaN and inf only: nothing finite
        [[-0.0, 0.0], [7.0, 7.0]],
    ]
    rng = np.random.default_rng(0)
    for _ in range(200):  # and random grids of inf and ties
        grid = rng.integers(0, 4, size=(25, 3)).astype(float)
        grid[rng.random((25, 3)) < 0.7] = inf
        cases.append(grid.tolist())
    for case in cases:
        a = np.array(case)
        assert argmin(a) == refargmin(a), case


# --- distilled's tree walk ------------------------------------------------------------
def ref_predict(model, X: np.ndarray) -> np.ndarray:  # noqa: ANN001
    """The numpy walk the kernel replaced: every row down every tree, level by level."""
    feature, threshold, first, value = model._walk
    n, t = len(X), len(model.roots)
    node = np.tile(model._walk_roots, n)
    base = np.repeat(np.arange(n) * X.shape[1], t)
    flat = X.ravel()
    live = np.flatnonzero(threshold.take(node) < np.inf)
    for _ in range(model.depth):
        if not len(live):
            break
        at = node.take(live)
        x = flat.take(base.take(live) + feature.take(at))
        nxt = first.take(at) + (x > threshold.take(at))
        node[live] = nxt
        live = live[threshold.take(nxt) < np.inf]
    return value.take(node).reshape(n, t).sum(axis=1)


@pytest.mark.parametrize("scenario", ["evening_peak", "festival_surge", "feeder_fault"])
def test_core_tree_kernel_equals_numpys_walk(scenario: str) -> None:
    from evgrid_core.candidates import candidates
    from evgrid_core.distilled import load_model

    model = load_model()
    env, policy = EVGridEnv(), make_policy("distilled")
    env.reset(seed=5, scenario=scenario)
    rows = 0
    while not env.done:
        obs = env.observation()
        c = candidates(obs)
        if len(c):
            X = c.features
            assert model.predict(X).tobytes() == ref_predict(model, X).tobytes()
            # and rows between the thresholds: every split both ways
            noisy = X * np.random.default_rng(rows).uniform(0.5, 1.5, X.shape)
            assert model.predict(noisy).tobytes() == ref_predict(model, noisy).tobytes()
            rows += len(X)
        env.step(policy.act(obs))
    assert rows > 500
