"""Reward functions: table-driven, each case says why it scores what it scores."""

from __future__ import annotations

import json

import numpy as np
import pytest

from evgrid_core import EVGridEnv
from evgrid_core.fleet import arrivals_from_records
from training.data import StateCache, restore_env
from training.rewards import completion_text, rollout

HORIZON = 6  # [ticks] of greedy_eta after the scored action


def snapshot(env: EVGridEnv) -> str:
    """The whole state as text (NaN-safe: NaN != NaN in a dict comparison)."""
    return json.dumps(env.state(), sort_keys=True)


def score(env: EVGridEnv, action: str):  # noqa: ANN201
    return rollout(
        env.clone(), action, horizon_ticks=HORIZON, continuation="greedy_eta", seed=0
    )


def msg(text: str) -> list[dict[str, str]]:
    return [{"role": "assistant", "content": text}]


# --- A hand-built state: one car, feeder F3 at 97 % -----------------------------------


def overload_env() -> EVGridEnv:
    """One fast-charging car at HSR Layout; its local feeder F3 (S9 HSR Layout) runs
    at ~97 % while F2 (S11 Marathahalli) has headroom: 150 kW more overloads F3."""
    env = EVGridEnv()
    env.reset(seed=0)  # builds the city tables
    city_nodes = env.city.nodes
    arrivals = arrivals_from_records(
        [
            {
                "tick": 0,
                "klass": "car",
                "node": "HSR Layout",
                "soc": 0.1,
                "battery_kwh": 60.0,
                "max_dc_kw": 150.0,
                "target": 0.9,
            }
        ],
        city_nodes,
    )
    noise = np.array([0.8, 0.8, 1.18, 0.8, 0.8, 0.8])  # F3 near its limit
    env.reset(
        seed=0, scenario="evening_peak", arrivals=arrivals, background_noise=noise
    )
    return env


def test_hand_built_state_is_what_the_test_claims():
    env = overload_env()
    st = env.state()
    assert st["request"] == 1
    assert (
        st["stations"][8]["name"] == "HSR Layout" and st["stations"][8]["feeder"] == 3
    )
    assert (
        st["stations"][10]["name"] == "Marathahalli"
        and st["stations"][10]["feeder"] == 2
    )
    assert 0.95 < st["feeders"][2]["utilisation"] < 1.0  # F3 just under its limit
    assert st["feeders"][1]["utilisation"] < 0.8  # F2 has headroom


def test_overloading_action_scores_below_the_one_that_does_not():
    env = overload_env()
    # ULTRA at S9 (150 kW onto F3 at 97 %) overloads F3: the peak part is charged.
    bad = score(env, "ROUTE E1 S9 ULTRA")
    # ULTRA at S11 sits on F2 with headroom: a longer drive, no overload.
    good = score(env, "ROUTE E1 S11 ULTRA")
    assert bad.valid and good.valid
    assert bad.total < good.total
    # The overload is the reason: the S9 branch pays peak (hard-limit) cost, S11 less.
    assert bad.parts["peak"] < good.parts["peak"]
    # And the core's own KPI agrees: more feeder-minutes above 100 % via S9.
    minutes = {}
    for action in ("ROUTE E1 S9 ULTRA", "ROUTE E1 S11 ULTRA"):
        e = env.clone()
        e.step(action)  # the only EV: the episode plays to its end
        minutes[action] = e.kpi_summary()["overload_feeder_min"]
    assert minutes["ROUTE E1 S9 ULTRA"] > minutes["ROUTE E1 S11 ULTRA"]


def test_the_same_action_scores_the_same_twice():
    env = overload_env()
    a, b = score(env, "ROUTE E1 S9 FAST"), score(env, "ROUTE E1 S9 FAST")
    assert a.total == b.total and a.parts == b.parts  # exactly: deterministic


def test_scoring_does_not_touch_the_cached_state():
    cache = StateCache()
    env = cache.restore("evening_peak", 0, 10, "greedy_eta")
    before = snapshot(env)
    score(env, "DEFER E1 5")
    assert snapshot(env) == before
    assert snapshot(cache.restore("evening_peak", 0, 10, "greedy_eta")) == before


def test_replay_recreates_the_exact_state():
    a = restore_env("heatwave", 2, 17, "greedy_eta")
    b = StateCache().restore("heatwave", 2, 17, "greedy_eta")
    assert snapshot(a) == snapshot(b)
    assert a.render_text() == b.render_text()


def test_replay_past_the_end_is_an_error():
    with pytest.raises(ValueError, match="ends after"):
        restore_env("quiet_night", 0, 10_000, "greedy_eta")


def test_an_invalid_answer_never_pays_better_than_a_valid_poor_one():
    env = restore_env("evening_peak", 0, 30, "greedy_eta")  # E31, a 3-wheeler: AC only
    garbage, far = score(env, "hello"), score(env, "DEFER E31 30")
    assert not garbage.valid and far.valid
    assert garbage.total < far.total  # a long defer is poor but valid; garbage strands


def test_completion_text_accepts_trl_shapes():
    assert completion_text("DEFER E1 5") == "DEFER E1 5"
    assert completion_text(msg("DEFER E1 5")) == "DEFER E1 5"
    assert completion_text([]) == ""


def test_rollout_stops_at_the_horizon():
    env = restore_env("evening_peak", 0, 30, "greedy_eta")
    t0 = env.tick
    r = rollout(
        env, "ROUTE E31 S10 SLOW", horizon_ticks=3, continuation="greedy_eta", seed=0
    )
    assert env.tick >= t0 + 3 or env.done
    assert r.valid and r.steps >= 1
    assert r.total == pytest.approx(sum(r.parts.values()))
