"""Scenarios stay ones dispatch can influence: backgrounds below capacity, EVs not."""

import numpy as np
import pytest

from evgrid_core import SCENARIOS, EVGridEnv, get_scenario
from evgrid_core.policies import make_policy
from evgrid_core.rollout import run_episode


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_background_alone_never_exceeds_capacity(scenario: str) -> None:
    # With its per-episode noise, on 50 seeds: otherwise the feeder's protection would
    # shed every EV there whatever the dispatcher did.
    env, worst = EVGridEnv(), 0.0
    for seed in range(50):
        env.reset(seed=seed, scenario=scenario)
        w = env.world
        worst = max(worst, float((w.background / w.tables.capacity_kw).max()))
    assert worst <= 1.0, f"{scenario}: background at {worst:.1%} of capacity"


@pytest.mark.parametrize("scenario", ["feeder_fault", "heatwave"])
def test_greedy_dispatch_still_stresses_the_feeders(scenario: str) -> None:
    # ...while the EV load can still push them past the soft limit: dispatch matters.
    greedy = make_policy("greedy_eta")
    stress = [run_episode(greedy, scenario, s).parts["grid_stress"] for s in range(3)]
    assert np.mean(stress) < 0.0


def test_feeder_fault_keeps_the_feeder_it_can_carry() -> None:
    # 17:30-19:30 (ticks 6..29): the South-East feeder (F3) keeps 60 % of its capacity
    # and 60 % of its load; the other feeders and the hours outside are untouched.
    env = EVGridEnv()
    noise = [1.0] * 6
    env.reset(seed=0, scenario="feeder_fault", background_noise=noise)
    fault = env.world
    env = EVGridEnv()
    env.reset(seed=0, scenario="evening_peak", background_noise=noise)
    normal = env.world
    ratio = fault.background / normal.background
    cap = fault.tables.capacity_kw / normal.tables.capacity_kw
    assert ratio[6:30, 2] == pytest.approx(0.6, rel=1e-12)
    assert cap[6:30, 2] == pytest.approx(0.6, rel=1e-12)
    others = np.ones(ratio.shape, dtype=bool)
    others[6:30, 2] = False
    assert (ratio[others] == 1.0).all() and (cap[others] == 1.0).all()
    assert get_scenario("feeder_fault").feeder_events[0].kind == "fault"
