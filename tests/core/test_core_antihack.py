"""Anti-hack: no degenerate policy beats greedy; an invalid action never pays."""

import numpy as np
import pytest

from evgrid_core import SCENARIOS, Defer, EVGridEnv, LoadShift, Route
from evgrid_core.actions import SHIFT_CAP_PCT, SHIFT_MINUTES, ChargerKind
from evgrid_core.policies import ADVERSARIAL, make_policy
from evgrid_core.rollout import run_episode

SEEDS = range(10)


def mean_return(policy: str, scenario: str) -> float:
    p = make_policy(policy)
    return float(np.mean([run_episode(p, scenario, s).ret for s in SEEDS]))


@pytest.mark.parametrize(
    "scenario", [s for s in SCENARIOS if s != "full_day"] + ["full_day"]
)
def test_every_adversarial_policy_scores_below_greedy(scenario: str) -> None:
    seeds = (
        SEEDS if scenario != "full_day" else range(3)
    )  # 288 ticks: fewer seeds keep CI short
    greedy_p = make_policy("greedy_eta")
    greedy = np.mean([run_episode(greedy_p, scenario, s).ret for s in seeds])
    for cls in ADVERSARIAL:
        p = make_policy(cls.name)
        adversarial = np.mean([run_episode(p, scenario, s).ret for s in seeds])
        assert adversarial < greedy, (
            f"{cls.name} ({adversarial:.1f}) >= greedy ({greedy:.1f}) on {scenario}"
        )


def all_valid_actions(env: EVGridEnv) -> list:
    obs = env.observation()
    r = obs.request
    acts: list = [
        Route(r.id, s + 1, ChargerKind(k))
        for s, k in zip(*np.nonzero(obs.route_mask), strict=True)
    ]
    acts += [Defer(r.id, m) for m in obs.defer_options]
    if obs.load_shifts_left:
        for s in np.flatnonzero(~obs.shifted):
            acts += [
                LoadShift(int(s) + 1, c, m)
                for c in SHIFT_CAP_PCT
                for m in SHIFT_MINUTES
            ]
    return acts


INVALID_ANSWERS = [
    "",
    "ROUTE E1 S99 FAST",
    "DEFER E1 7",
    "please charge",
    "ROUTE E9999 S1 SLOW",
]


@pytest.mark.parametrize(
    "scenario", ["evening_peak", "feeder_fault", "quiet_night", "festival_surge"]
)
def test_invalid_never_scores_better_than_the_worst_valid_action(scenario: str) -> None:
    env = EVGridEnv()
    obs = env.reset(seed=5, scenario=scenario)
    greedy = make_policy("greedy_eta")
    checked = 0
    step = 0
    stride = max(1, len(env.world.arrivals) // 12)
    while not env.done:
        if step % stride == 0:  # a spread of states, including ones that close a tick
            valid = [env.clone().step(a) for a in all_valid_actions(env)]
            assert valid and all(v.info["valid"] for v in valid)
            worst = min(v.reward for v in valid)
            for text in INVALID_ANSWERS:
                res = env.clone().step(text)
                assert not res.info["valid"]
                assert res.reward < worst, (text, res.reward, worst)
            checked += 1
        env.step(greedy.act(obs))
        obs = env.observation()
        step += 1
    assert checked >= 5


def test_load_shift_spam_is_capped_per_tick() -> None:
    env = EVGridEnv()
    env.reset(seed=0)
    tick = env.observation().tick
    assert env.step("LOAD_SHIFT S1 50 15").info["valid"]
    assert env.step("LOAD_SHIFT S2 50 15").info["valid"]
    res = env.step("LOAD_SHIFT S3 50 15")
    assert (
        not res.info["valid"] and "at most 2 LOAD_SHIFTs per tick" in res.info["reason"]
    )
    assert env.observation().tick >= tick


def test_defers_are_capped_per_ev() -> None:
    env = EVGridEnv()
    obs = env.reset(seed=0, scenario="quiet_night")
    ev = obs.request.id
    for _ in range(3):
        while env.observation().request.id != ev:
            env.step(make_policy("greedy_eta").act(env.observation()))
        assert env.step(f"DEFER E{ev} 5").info["valid"]
    while env.observation().request.id != ev:
        env.step(make_policy("greedy_eta").act(env.observation()))
    res = env.step(f"DEFER E{ev} 5")
    assert not res.info["valid"] and "already deferred 3 times" in res.info["reason"]


@pytest.mark.parametrize(
    "policy", ["always_defer", "load_shift_spam", "always_invalid", "random_valid"]
)
def test_episodes_end_within_a_bounded_number_of_steps(policy: str) -> None:
    env = EVGridEnv()
    for seed in range(3):
        obs = env.reset(seed=seed)
        n_evs = len(env.world.arrivals)
        bound = (
            n_evs * (env.config.max_defers + 1)
            + env.config.max_load_shifts_per_tick * 48
        )
        p = make_policy(policy)
        p.reset(seed)
        while not env.done:
            env.step(p.act(obs))
            obs = env.observation()
        assert env.steps <= bound
