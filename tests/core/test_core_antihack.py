"""Anti-hack: no degenerate policy beats greedy; an invalid action never pays."""

from pathlib import Path

import numpy as np
import pytest

from evgrid_core import SCENARIOS, Defer, EVGridEnv, LoadShift, Route
from evgrid_core.actions import SHIFT_CAP_PCT, SHIFT_MINUTES, ChargerKind
from evgrid_core.policies import ADVERSARIAL, make_policy
from evgrid_core.rollout import run_episode
from evgrid_core.world import GAVE_UP

README = Path(__file__).resolve().parents[2] / "README.md"

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
        # Every LOAD_SHIFT of one station: a LOAD_SHIFT decides no request, so its
        # step never runs the clock and costs the same whichever station it caps.
        for s in np.flatnonzero(~obs.shifted)[:1]:
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


@pytest.mark.parametrize("scenario", [s for s in SCENARIOS if s != "full_day"])
def test_invalid_never_scores_better_than_the_worst_valid_action(scenario: str) -> None:
    """Per step, in the same state (README, Reward): the step's reward only.

    The one exception: a valid action that itself loses the EV within the step (it
    gives up on the way, its patience spent) pays the EV's wait on top of the
    stranded cost, and that can cost more than the invalid answer's penalty.
    """
    env = EVGridEnv()
    obs = env.reset(seed=5, scenario=scenario)
    greedy = make_policy("greedy_eta")
    checked = 0
    step = 0
    stride = max(1, len(env.world.arrivals) // 12)
    while not env.done:
        if step % stride == 0:  # a spread of states, including ones that close a tick
            ev = obs.request.id - 1
            valid = []
            for action in all_valid_actions(env):
                clone = env.clone()
                res = clone.step(action)
                assert res.info["valid"], action
                if clone.world.status[ev] != GAVE_UP:  # (the exception)
                    valid.append(res.reward)
            worst = min(valid)
            for text in INVALID_ANSWERS:
                res = env.clone().step(text)
                assert not res.info["valid"]
                assert res.reward < worst, (text, res.reward, worst)
            checked += 1
        env.step(greedy.act(obs))
        obs = env.observation()
        step += 1
    assert checked >= 5


def test_a_valid_action_that_loses_the_ev_can_score_below_an_invalid_one() -> None:
    """The exception, exactly: what the README's per-step claim leaves out."""
    from evgrid_core import load_city
    from evgrid_core.fleet import arrivals_from_records

    city = load_city()
    rec = dict(tick=0, klass="car", node="Koramangala", soc=0.5, battery_kwh=40.5,
               patience_min=45)  # fmt: skip

    def step(action: str) -> float:
        env = EVGridEnv()
        env.reset(seed=0, scenario="quiet_night", arrivals=arrivals_from_records([rec], city.nodes),
                  background_noise=[1.0] * len(city.feeders))  # fmt: skip
        return env.step(action).reward

    w = EVGridEnv().config.weights
    # Peenya is 58.6 min away: a 12-tick drive, its 60 minutes of wait charged at
    # departure; the car gives up at the end of tick 9 (minute 50 > 45), in the step.
    assert step("ROUTE E1 S21 FAST") == pytest.approx(-w.wait * 60 - w.stranded)
    assert step("please charge") == -w.invalid - w.stranded
    assert step("ROUTE E1 S21 FAST") < step("please charge")


def test_readme_states_the_invalid_action_claim_per_step() -> None:
    core = README.read_text().split("<!-- section: core -->")[1]
    reward = core.split("**Reward.**")[1].split("\n\n")[0]
    reward = " ".join(reward.split())
    assert "always scores below the worst valid action in the same state" not in reward
    assert "for that step" in reward and "rest of the episode" in reward
    assert "loses the EV within the step" in reward  # the exception, named


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
