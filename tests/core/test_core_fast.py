"""Guards of the core's speed shortcuts (``evgrid_core/fast.py``): each equals the plain path.

The observation's city part is built once per tick (``city_part_of_the_tick``): never
stale, never changed. Observations are built without the dataclasses' ``__init__``
(``built``): every field is there, equal to what ``__init__`` builds.
"""

import dataclasses

import numpy as np
import pytest
from test_core_determinism import _obs_equal

from evgrid_core import SCENARIOS, EVGridEnv
from evgrid_core.observation import build_observation, render_text
from evgrid_core.policies import make_policy

# load_shift_spam changes the city between two decisions of a tick; always_invalid
# strands EVs; random_valid mixes ROUTE, DEFER and LOAD_SHIFT.
POLICIES = ["random_valid", "load_shift_spam", "always_invalid", "greedy_eta"]


def _fresh(env: EVGridEnv):  # noqa: ANN202
    """The observation built from scratch, without the tick's shared part."""
    w = env.world
    kept, w.obs_cache = w.obs_cache, None
    try:
        return build_observation(w, env.done)
    finally:
        w.obs_cache = kept


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_core_observation_shared_per_tick_equals_a_fresh_one(scenario: str) -> None:
    shared = 0
    for name in POLICIES:
        env, policy = EVGridEnv(), make_policy(name)
        obs, prev = env.reset(seed=3, scenario=scenario), None
        policy.reset(3)
        while True:
            fresh = _fresh(env)
            assert _obs_equal(obs, fresh)
            assert render_text(obs, 8) == render_text(fresh, 8)
            assert render_text(obs, 3) == render_text(fresh, 3)
            assert obs.lists == fresh.lists
            if prev is not None and obs.busy is prev.busy:
                shared += 1
            if env.done:
                break
            env.step(policy.act(obs))
            obs, prev = env.observation(), obs
    assert shared > 0  # the test did meet observations that share their tick's part


def test_core_observation_arrays_are_read_only() -> None:
    env = EVGridEnv()
    obs = env.reset(seed=1)
    # The tick's arrays, and the scenario's tables that observations hand out.
    for name in ("busy", "queue", "open", "cap_kw", "station_kw", "shifted",
                 "feeder_util", "feeder_capacity_kw", "feeder_forecast", "feeder_shed_kw",
                 "travel_min", "road_km", "route_mask", "plugs", "feeder_of"):  # fmt: skip
        with pytest.raises(ValueError, match="read-only"):
            getattr(obs, name)[0] = 0
    # The world's own arrays stay writable: the next tick builds new ones.
    env.world.busy[0, 0] += 0
    assert np.array_equal(obs.busy, env.observation().busy)


def test_core_observation_copy_starts_its_own_memo() -> None:
    obs = EVGridEnv().reset(seed=1, scenario="festival_surge")
    render_text(obs)  # fills the tick's memo
    full = np.full_like(obs.busy, 2)
    other = dataclasses.replace(obs, busy=full)
    assert other.tick_memo == {} and other.lists["busy"] == full.tolist()
    assert render_text(other) != render_text(obs)


def test_core_observation_equals_the_one_its_init_builds() -> None:
    # build_observation skips the dataclasses' __init__: every field must be there.
    env, policy = EVGridEnv(), make_policy("random_valid")
    obs = env.reset(seed=4, scenario="heatwave")
    policy.reset(4)
    while True:
        for item in (obs, obs.request) if obs.request else (obs,):
            names = {f.name for f in dataclasses.fields(item)}
            assert names <= item.__dict__.keys()
            again = type(item)(
                **{
                    f.name: getattr(item, f.name)
                    for f in dataclasses.fields(item)
                    if f.init
                }
            )
            assert _obs_equal(again, item) and repr(again) == repr(item)
        if env.done:
            break
        env.step(policy.act(obs))
        obs = env.observation()
