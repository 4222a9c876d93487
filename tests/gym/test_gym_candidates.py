"""The candidate interface: fixed rows of the core's candidates, one pick among them."""

import numpy as np
import pytest

pytest.importorskip("gymnasium")

from evgrid_core import EVGridEnv  # noqa: E402
from evgrid_core.candidates import FEATURES, candidates, fixed_view  # noqa: E402
from evgrid_core.policies import make_policy  # noqa: E402
from evgrid_gym.candidate_env import K_DEFAULT, CandidateGymEnv  # noqa: E402


def _a_request(scenario: str = "festival_surge", seed: int = 3, skip: int = 40):  # noqa: ANN202
    env = EVGridEnv()
    env.reset(seed=seed, scenario=scenario)
    greedy = make_policy("greedy_eta")
    for _ in range(skip):
        env.step(greedy.act(env.observation()))
    return candidates(env.observation())


def test_fixed_view_keeps_every_candidate_at_the_default_k() -> None:
    c = _a_request()
    rows, mask, pick = fixed_view(c, K_DEFAULT)
    assert rows.shape == (K_DEFAULT, len(FEATURES)) and rows.dtype == np.float32
    assert mask.sum() == len(c) and mask[: len(c)].all()
    assert sorted(pick[mask].tolist()) == list(range(len(c)))  # each candidate once
    assert (pick[~mask] == -1).all() and not rows[~mask].any()
    x = c.features[pick[0]]
    np.testing.assert_allclose(rows[0], np.sign(x) * np.log1p(np.abs(x)), rtol=1e-6)


def test_fixed_view_orders_routes_by_eta_and_drops_the_latest_first() -> None:
    c = _a_request()
    n_route = len(c.stations)
    assert n_route > 12, "pick a state with many ROUTEs"
    k = 8 + len(c.defers)
    rows, mask, pick = fixed_view(c, k)
    eta = c.column("eta_min")
    kept = pick[:8]
    assert (np.diff(eta[kept]) >= 0).all()  # by expected finish
    assert eta[kept].max() <= np.sort(eta[:n_route])[7]  # the 8 soonest
    assert pick[8:].tolist() == list(range(n_route, len(c)))  # every DEFER stays
    with pytest.raises(ValueError, match="must exceed"):
        fixed_view(c, 7)


def test_playing_rows_is_playing_the_core() -> None:
    """Answering the row of distilled's pick gives distilled's episode, bit for bit
    (forced answers included in the rewards)."""
    gym_env = CandidateGymEnv("feeder_fault")
    obs, _ = gym_env.reset(seed=900003)  # the seed with a request no action serves
    policy, core = make_policy("distilled"), EVGridEnv()
    core.reset(seed=900003, scenario="feeder_fault")
    while not core.done:
        core.step(policy.act(core.observation()))
    policy2 = make_policy("distilled")
    total, done = 0.0, False
    while not done:
        inner = gym_env.core.observation()
        want = policy2.act(inner)
        c = candidates(inner)
        _, _, pick = fixed_view(c, gym_env.k)
        row = int(np.flatnonzero(pick == c.actions.index(want))[0])
        assert obs["action_mask"][row] == 1.0
        obs, reward, done, _, info = gym_env.step(row)
        assert info["action"] == want
        total += reward
    assert total == pytest.approx(core.kpis.total_return, abs=1e-9)
    assert gym_env.core.kpis.invalid == core.kpis.invalid == 1  # the forced one


def test_a_row_that_is_not_a_candidate_is_refused() -> None:
    env = CandidateGymEnv("evening_peak")
    with pytest.raises(RuntimeError, match="reset"):
        env.step(0)
    obs, _ = env.reset(seed=1)
    padding = int(np.flatnonzero(obs["action_mask"] == 0)[0])
    for bad in (padding, -1, K_DEFAULT, 10**6):
        with pytest.raises(ValueError, match="not a candidate row"):
            env.step(bad)
    assert env.observation_space.contains(obs)
