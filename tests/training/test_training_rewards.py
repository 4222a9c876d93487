"""Reward functions: table-driven, each case says why it scores what it scores."""

from __future__ import annotations

import json

import numpy as np
import pytest

from evgrid_core import EVGridEnv
from evgrid_core.fleet import arrivals_from_records
from training.config import RewardConfig
from training.data import StateCache, restore_env
from training.rewards import (
    EnvRewards,
    advantage_over_heuristic,
    completion_text,
    reference_action,
    rollout,
)

CFG = RewardConfig(horizon_ticks=6, continuation="greedy_eta")


def snapshot(env: EVGridEnv) -> str:
    """The whole state as text (NaN-safe: NaN != NaN in a dict comparison)."""
    return json.dumps(env.state(), sort_keys=True)


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
    bad, bad_parts, bad_valid = advantage_over_heuristic(
        env, "ROUTE E1 S9 ULTRA", CFG, 0
    )
    # ULTRA at S11 sits on F2 with headroom: a longer drive, no overload.
    good, good_parts, good_valid = advantage_over_heuristic(
        env, "ROUTE E1 S11 ULTRA", CFG, 0
    )
    assert bad_valid and good_valid
    assert bad < good
    # The overload is the reason: the S9 branch pays peak (hard-limit) cost, S11 less.
    assert bad_parts["peak"] < good_parts["peak"]
    # And the core's own KPI agrees: more feeder-minutes above 100 % via S9.
    minutes = {}
    for action in ("ROUTE E1 S9 ULTRA", "ROUTE E1 S11 ULTRA"):
        e = env.clone()
        e.step(action)  # the only EV: the episode plays to its end
        minutes[action] = e.kpi_summary()["overload_feeder_min"]
    assert minutes["ROUTE E1 S9 ULTRA"] > minutes["ROUTE E1 S11 ULTRA"]


def test_greedy_scores_exactly_zero_against_itself_in_the_hand_built_state():
    env = overload_env()
    ref = reference_action(env, "greedy_eta", 0)
    score, parts, valid = advantage_over_heuristic(env, ref, CFG, 0)
    assert valid
    assert score == 0.0  # exactly: both branches are the same deterministic rollout
    assert all(v == 0.0 for v in parts.values())


@pytest.mark.parametrize(
    ("scenario", "seed", "step"),
    [("evening_peak", 0, 0), ("evening_peak", 3, 40), ("festival_surge", 1, 100)],
)
def test_greedy_scores_exactly_zero_in_sampled_states(scenario, seed, step):
    rewards = EnvRewards(CFG)
    env = rewards.cache.restore(scenario, seed, step, "greedy_eta")
    ref = reference_action(env, "greedy_eta", seed)
    kw = {
        "scenario": [scenario],
        "seed": [seed],
        "step": [step],
        "generator": ["greedy_eta"],
    }
    assert rewards.consequence_reward([msg(ref)], **kw) == [0.0]


def test_scoring_does_not_touch_the_cached_state():
    cache = StateCache()
    env = cache.restore("evening_peak", 0, 10, "greedy_eta")
    before = snapshot(env)
    advantage_over_heuristic(env, "DEFER E1 5", CFG, 0)
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


# --- Format and validity, table-driven --------------------------------------------------

STATE = ("evening_peak", 0, 30, "greedy_eta")  # request E31, a 3-wheeler: AC only
KEYS = ("scenario", "seed", "step", "generator")


@pytest.mark.parametrize(
    ("text", "fmt", "valid", "why"),
    [
        ("ROUTE E31 S10 SLOW", 1.0, 1.0, "the greedy choice: parses and is valid"),
        (
            "ROUTE E31 S10 SLOW\n",
            1.0,
            1.0,
            "a trailing newline is ignored by the parser",
        ),
        ("ROUTE E31 S10 FAST", 1.0, 0.0, "parses, but the 3-wheeler has no DC inlet"),
        ("ROUTE E1 S10 SLOW", 1.0, 0.0, "parses, but E1 is not the request"),
        ("DEFER E31 5", 1.0, 1.0, "a listed defer option"),
        ("DEFER E31 7", 0.0, 0.0, "7 min is not in the syntax"),
        ("route E31 S10 SLOW", 0.0, 0.0, "lower case is not canonical"),
        ("ROUTE E31 S10 SLOW because it is near", 0.0, 0.0, "extra words"),
        ("", 0.0, 0.0, "empty"),
    ],
)
def test_format_and_validity_rewards(text, fmt, valid, why):
    rewards = EnvRewards(CFG)
    kw = {k: [v] for k, v in zip(KEYS, STATE, strict=True)}
    assert rewards.format_reward([msg(text)], **kw) == [fmt], why
    assert rewards.validity_reward([msg(text)], **kw) == [valid], why


def test_invalid_action_never_pays_better_than_a_valid_poor_one():
    rewards = EnvRewards(CFG)
    kw = {k: [v] * 3 for k, v in zip(KEYS, STATE, strict=True)}
    garbage, far, greedy = rewards.consequence_reward(
        [msg("hello"), msg("DEFER E31 30"), msg("ROUTE E31 S10 SLOW")], **kw
    )
    assert greedy == 0.0
    assert garbage < far  # a long defer is poor but valid; garbage strands the EV
    assert garbage < 0.0


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


def test_reward_functions_carry_names_trl_logs():
    names = [f.__name__ for f in EnvRewards(CFG).functions()]
    assert names == ["format_reward", "validity_reward", "consequence_reward"]


def test_missing_replay_columns_is_a_clear_error():
    with pytest.raises(ValueError, match="replay column"):
        EnvRewards(CFG).validity_reward([msg("DEFER E1 5")])
