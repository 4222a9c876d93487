"""``EVGridEnv.step`` judges only text lines and actions; anything else is a bug."""

import copy

import numpy as np
import pytest

from evgrid_core import EVGridEnv, Invalid, Route

NOT_ACTIONS = [
    (None, "nothing"),
    (5, "a number"),
    (2.5, "a float"),
    (True, "a bool is a number, not an action"),
    (b"ROUTE E1 S5 ULTRA", "bytes: the caller forgot to decode"),
    (["ROUTE E1 S5 ULTRA"], "a list of lines"),
    ({"ev": 1}, "a dict"),
    (Route, "the class, not an instance"),
]


def snapshot(env: EVGridEnv) -> tuple:
    w = env.world
    return (env.state(), env.kpi_summary(), copy.deepcopy(env.kpis.parts_total),
            env.steps, list(w.pending), w.status.copy(), env.last_info)  # fmt: skip


@pytest.mark.parametrize(("action", "why"), NOT_ACTIONS)
def test_step_with_a_non_action_raises_type_error_and_changes_nothing(action, why):
    env = EVGridEnv()
    obs = env.reset(seed=0)
    env.step(f"DEFER E{obs.request.id} 5")  # a state with some history
    before = snapshot(env)
    with pytest.raises(TypeError, match=r"str.*Route, Defer or LoadShift") as e:
        env.step(action)
    assert type(action).__name__ in str(e.value), why
    after = snapshot(env)
    assert after[:5] == before[:5] and after[6] == before[6], why
    assert np.array_equal(after[5], before[5]), why
    assert env.step(f"DEFER E{env.observation().request.id} 5").info["valid"]


def test_text_that_does_not_parse_and_the_parsers_invalid_stay_invalid_actions():
    for action in ("please charge", Invalid("please charge", ("unknown action",))):
        env = EVGridEnv()
        obs = env.reset(seed=0)
        res = env.step(action)
        assert not res.info["valid"] and res.info["ev"] == obs.request.id
        assert res.info["action"] == "please charge"
        assert env.kpi_summary()["stranded"] == 1


def test_play_episode_shows_every_decision_to_its_recorder():
    from evgrid_core.policies import make_policy
    from evgrid_core.rollout import play_episode

    seen = []
    env = play_episode(
        make_policy("greedy_eta"),
        "quiet_night",
        3,
        on_step=lambda action, res: seen.append((action, res.info["ev"])),
    )
    plain = play_episode(make_policy("greedy_eta"), "quiet_night", 3)
    assert len(seen) == env.steps > 0  # one call per step, in order
    assert env.kpis.total_return == plain.kpis.total_return  # recording changes nothing


def test_the_step_keeps_the_typed_action_it_applied() -> None:
    from evgrid_core import EVGridEnv, Route, parse_action

    env = EVGridEnv()
    obs = env.reset(seed=0, scenario="evening_peak")
    assert env.last_action is None
    s, k = (int(v[0]) for v in obs.route_mask.nonzero())
    line = f"ROUTE E{obs.request.id} S{s + 1} {['SLOW', 'FAST', 'ULTRA'][k]}"
    assert env.step(line).info["valid"]
    assert env.last_action == parse_action(line) and isinstance(env.last_action, Route)
    assert not env.step("ROUTE E99999 S1 FAST").info["valid"]
    assert env.last_action is None  # refused: nothing applied
    env.reset(seed=1, scenario="evening_peak")
    assert env.last_action is None
