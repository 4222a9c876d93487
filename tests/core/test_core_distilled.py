"""The learned policy's pieces: candidates, the portable trees, the committed model."""

from __future__ import annotations

import json

import numpy as np
import pytest

from evgrid_core import EVGridEnv, validate_action
from evgrid_core.candidates import FEATURES, NA, candidates
from evgrid_core.distilled import MODEL_PATH, Distilled, load_model
from evgrid_core.policies import describe_policy, make_policy, policy_names
from evgrid_core.rollout import play_episode
from evgrid_core.trees import FORMAT, from_json, load, save

HELDOUT_FIRST_SEED = (
    900_000  # training.labels.HELDOUT_FIRST_SEED (not imported: core test)
)


def _states(scenario: str, seed: int, every: int = 7):
    """Observations along a greedy_eta episode (its own decisions drive it)."""
    env = EVGridEnv()
    obs = env.reset(seed=seed, scenario=scenario)
    policy = make_policy("greedy_eta")
    i = 0
    while not env.done:
        if i % every == 0:
            yield env, obs
        env.step(policy.act(obs))
        obs = env.observation()
        i += 1


@pytest.mark.parametrize("scenario", ["evening_peak", "feeder_fault", "festival_surge"])
def test_candidates_are_exactly_the_valid_routes_and_defers(scenario):
    seen = 0
    for env, obs in _states(scenario, 3):
        c = candidates(obs)
        assert len(c) == int(obs.route_mask.sum()) + len(obs.defer_options)
        assert c.features.shape == (len(c), len(FEATURES))
        assert np.isfinite(c.features).all()
        for a in c.actions:  # each one is valid in this very state
            assert validate_action(env.world, a) == (True, ""), a
        is_defer = c.column("is_defer") == 1
        assert (c.column("travel_min")[is_defer] == NA).all()
        assert (c.column("eta_rank")[~is_defer] >= 0).all()
        seen += 1
    assert seen > 5


def test_no_request_no_candidates():
    env = EVGridEnv()
    env.reset(seed=0, scenario="quiet_night")
    while not env.done:
        env.step(make_policy("nearest").act(env.observation()))
    assert len(candidates(env.observation())) == 0


def _toy() -> dict:
    # tree 0: x0 <= 1 ? (x1 <= 5 ? 1.0 : 2.0) : 3.0 ; tree 1: a single leaf 0.5
    return {
        "format": FORMAT,
        "features": ["a", "b"],
        "feature": [0, 1, -1, -1, -1, -1],
        "threshold": [1.0, 5.0, 0, 0, 0, 0],
        "left": [1, 2, 2, 3, 4, 5],
        "right": [4, 3, 2, 3, 4, 5],
        "value": [0, 0, 1.0, 2.0, 3.0, 0.5],
        "roots": [0, 5],
        "meta": {"note": "toy"},
    }


def test_trees_walk_left_on_less_or_equal():
    m = from_json(_toy())
    X = np.array([[1.0, 5.0], [1.0, 5.1], [1.01, 0.0], [-3, 9]])
    assert m.predict(X).tolist() == [1.5, 2.5, 3.5, 2.5]
    assert m.depth == 2
    with pytest.raises(ValueError, match="2 features"):
        m.predict(np.zeros((3, 3)))


def test_trees_round_trip_byte_for_byte(tmp_path):
    m = from_json(_toy())
    save(m, tmp_path / "a.json")
    save(load(tmp_path / "a.json"), tmp_path / "b.json")
    assert (tmp_path / "a.json").read_bytes() == (tmp_path / "b.json").read_bytes()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"format": "pickle"}, "not an evgrid-trees/1"),
        ({"left": [1, 2, 2, 3, 4, 99]}, "out of range"),
        ({"feature": [0, 7, -1, -1, -1, -1]}, "unknown feature"),
        ({"value": [0, 0, 1.0, float("nan"), 3.0, 0.5]}, "not finite"),
        ({"left": [1, 0, 2, 3, 4, 5]}, "cycle"),
        ({"roots": [0, 6]}, "root out of range"),
        ({"threshold": [1.0]}, "differ in length"),
        ({"value": "abc"}, "malformed"),
    ],
)
def test_malformed_models_are_refused_with_the_reason(change, message):
    with pytest.raises(ValueError, match=message):
        from_json(_toy() | change)


def test_a_file_that_is_not_a_model_says_so(tmp_path):
    (tmp_path / "m.json").write_text("{not json")
    with pytest.raises(ValueError, match="not JSON"):
        load(tmp_path / "m.json")
    with pytest.raises(ValueError, match="cannot read"):
        load(tmp_path / "missing.json")
    (tmp_path / "m.json").write_text(json.dumps(_toy()))
    with pytest.raises(ValueError, match="other candidate features"):
        Distilled(tmp_path / "m.json")


def test_the_committed_model_is_registered_and_trained_on_training_seeds_only():
    assert "distilled" in policy_names() and describe_policy("distilled")
    model = load_model(MODEL_PATH)
    meta = model.meta
    assert model.features == FEATURES
    assert meta["labels_sha256"] and meta["train_decisions"] > 1000
    assert all(0 <= a < b <= HELDOUT_FIRST_SEED for a, b in meta["train_seeds"])
    raw = json.loads(MODEL_PATH.read_text())
    assert raw["format"] == FORMAT  # plain numbers: nothing in it runs code


def test_distilled_plays_a_whole_episode_validly_and_deterministically():
    returns = []
    for _ in range(2):
        env = play_episode(make_policy("distilled"), "evening_peak", HELDOUT_FIRST_SEED)
        assert env.kpis.invalid == 0
        returns.append(env.kpis.total_return)
    assert returns[0] == returns[1]


@pytest.mark.parametrize("scenario", ["festival_surge", "feeder_fault"])
def test_inbound_counts_the_evs_still_driving_to_each_station_and_kind(scenario):
    from evgrid_core.world import TRAVELING

    env = EVGridEnv()
    obs = env.reset(seed=11, scenario=scenario)
    policy, peak, gave_up_driving = make_policy("nearest"), 0, 0
    while not env.done:
        w = env.world
        expect = np.zeros_like(obs.inbound)
        for ev in np.flatnonzero(w.status == TRAVELING):
            expect[w.station[ev], w.kind[ev]] += 1
        assert (obs.inbound == expect).all()
        peak = max(peak, int(expect.sum()))
        driving = set(np.flatnonzero(w.status == TRAVELING))
        res = env.step(policy.act(obs))
        gave_up_driving += len(driving & set(res.info["gave_up"]))
        obs = env.observation()
    assert peak > 3  # the episode had EVs on the road to count
