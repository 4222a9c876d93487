"""The multi-agent env: PettingZoo's API tests, masks, and rewards that add up."""

import math

import numpy as np
import pytest

pytest.importorskip("pettingzoo")

from pettingzoo.test import api_test, parallel_api_test, parallel_seed_test  # noqa: E402

from evgrid_core import REWARD_KEYS, EVGridEnv  # noqa: E402
from evgrid_core.policies import make_policy  # noqa: E402
from evgrid_gym import action_mask, decode_action  # noqa: E402
from evgrid_marl import (  # noqa: E402
    FLEET_NOOP,
    EVGridParallelEnv,
    aec_env,
    split,
)
from evgrid_marl.env import N_ROUTE  # noqa: E402


# --- PettingZoo's own tests ---------------------------------------------------------------
@pytest.mark.parametrize("roles", ["both", "fleets"])
def test_parallel_api_test(roles: str) -> None:
    parallel_api_test(EVGridParallelEnv(roles=roles), num_cycles=200)


def test_parallel_seed_test() -> None:
    parallel_seed_test(lambda: EVGridParallelEnv(scenario="morning_peak"))


def test_aec_api_test() -> None:
    api_test(aec_env(), num_cycles=60)


# --- Masks --------------------------------------------------------------------------------
def test_masks_owner_routes_others_noop() -> None:
    env = EVGridParallelEnv()
    obs, infos = env.reset(seed=3)
    core_obs = env.core.observation()
    owner = "fleet_" + core_obs.request.klass
    for a in env.agents:
        m = obs[a]["action_mask"]
        assert (m == infos[a]["action_mask"]).all()
        if a == owner:  # the core's ROUTE/DEFER mask, NOOP not allowed
            assert (m[:FLEET_NOOP] == action_mask(core_obs)[:FLEET_NOOP]).all()
            assert m[FLEET_NOOP] == 0 and m.sum() > 1
        elif a.startswith("fleet_"):
            assert m.sum() == 1 and m[FLEET_NOOP] == 1
        else:  # NOOP and shifts of its own stations only
            own = env.roster.stations_of[a]
            on = {(i - 1) // 12 + 1 for i in np.flatnonzero(m[1:]) + 1}
            assert m[0] == 1 and on == set(own)
        # the request's own features are its owner's alone
        assert (obs[a]["observation"][6:17] != 0).any() == (a == owner)


def test_owner_noop_is_the_core_invalid_answer() -> None:
    env = EVGridParallelEnv(roles="fleets")
    env.reset(seed=5)
    owner = "fleet_" + env.core.observation().request.klass
    _, rewards, _, _, infos = env.step({a: FLEET_NOOP for a in env.agents})
    (core_step,) = infos[owner]["core_steps"]
    assert not core_step["valid"]
    parts = infos[owner]["reward_parts"]
    # invalid (1.0) and stranded (4.0) are the owner's alone, and exact
    assert parts["invalid"] == -1.0 and parts["stranded"] == -4.0
    assert all(
        "invalid" not in infos[a]["reward_parts"] for a in env.agents if a != owner
    )


def test_defer_without_clock_advance_is_the_owners_wait_exactly() -> None:
    # Find a step with several requests due, so DEFER 10 settles one and the clock
    # stays: the whole reward is the owner's wait (0.02 x 10 min) and nothing else.
    env = EVGridParallelEnv(roles="fleets")
    env.reset(seed=2)
    while env.core.observation().pending < 2:
        owner = "fleet_" + env.core.observation().request.klass
        env.step(
            {owner: N_ROUTE + 1} | {a: FLEET_NOOP for a in env.agents if a != owner}
        )
    request = env.core.observation().request
    owner = "fleet_" + request.klass
    acts = {a: FLEET_NOOP for a in env.agents} | {owner: N_ROUTE + 1}  # DEFER 10
    _, rewards, _, _, infos = env.step(acts)
    abuse = -0.25 * request.defers  # each DEFER pays for the EV's earlier ones
    assert infos[owner]["reward_parts"] == pytest.approx(
        {"wait": -0.2} | ({"defer_abuse": abuse} if abuse else {}), abs=1e-12
    )
    assert all(rewards[a] == 0.0 for a in env.agents if a != owner)


def test_refused_operator_shift_costs_nothing() -> None:
    env = EVGridParallelEnv()
    env.reset(seed=1)
    owner = "fleet_" + env.core.observation().request.klass
    defer = N_ROUTE + 6  # DEFER 60, valid for a first request
    acts = {a: (defer if a == owner else 0 if a.startswith("op") else FLEET_NOOP)
            for a in env.agents}  # fmt: skip
    acts["operator_F1"] = 1 + (6 - 1) * 12  # S6 is on F2: not its own
    _, rewards, _, _, infos = env.step(acts)
    assert infos["operator_F1"]["refused"] == [acts["operator_F1"]]
    assert rewards["operator_F1"] == 0.0
    assert len(infos[owner]["core_steps"]) == 1


# --- The agents' rewards add up to the single-agent reward ------------------------------------
def split_table() -> list[tuple[float, dict[str, float], str, dict[str, float]]]:
    return [
        (-1.0, {"a": 1.0, "b": 3.0}, "z", {"a": -0.25, "b": -0.75}),  # by weight
        (-1.0, {"a": 0.0}, "z", {"z": -1.0}),  # nothing to share by: the fallback
        (0.0, {"a": 1.0}, "z", {}),  # nothing to split
    ]


@pytest.mark.parametrize(("total", "weights", "fallback", "want"), split_table())
def test_split(total: float, weights: dict, fallback: str, want: dict) -> None:
    assert split(total, weights, fallback) == want


def _greedy_joint(env: EVGridParallelEnv, obs: dict, rng: np.random.Generator) -> dict:
    """The owner answers greedy_eta's action; operators shift at random now and then."""
    core_obs = env.core.observation()
    owner = "fleet_" + core_obs.request.klass
    act = _GREEDY.act(core_obs)
    acts = {}
    for a in env.agents:
        m = obs[a]["action_mask"]
        if a == owner:
            acts[a] = next(
                i for i in np.flatnonzero(m) if decode_action(i, act.ev) == act
            )
        elif a.startswith("fleet_"):
            acts[a] = FLEET_NOOP
        else:
            ok = np.flatnonzero(m[1:]) + 1
            acts[a] = int(rng.choice(ok)) if len(ok) and rng.random() < 0.05 else 0
    return acts


_GREEDY = make_policy("greedy_eta")


@pytest.mark.parametrize(
    ("scenario", "seed", "roles"),
    [("evening_peak", 0, "both"), ("heatwave", 1, "both"), ("feeder_fault", 2, "fleets"),
     ("festival_surge", 3, "both")],
)  # fmt: skip
def test_agent_rewards_add_up_to_the_single_agent_reward(
    scenario: str, seed: int, roles: str
) -> None:
    env = EVGridParallelEnv(scenario=scenario, roles=roles)
    single = EVGridEnv()  # the single-agent env, fed the same core actions
    obs, _ = env.reset(seed=seed)
    single.reset(seed=seed, scenario=scenario)
    rng = np.random.default_rng(seed)
    n_steps = n_shifts = 0
    while env.agents:
        obs, rewards, _, _, infos = env.step(_greedy_joint(env, obs, rng))
        core_steps = next(iter(infos.values()))["core_steps"]
        single_reward = 0.0
        for cs in core_steps:
            res = single.step(cs["action"])
            assert res.reward == cs["reward"]  # the same core step, bit for bit
            single_reward += res.reward
            n_shifts += cs["action"].startswith("LOAD_SHIFT")
        assert math.isclose(sum(rewards.values()), single_reward, abs_tol=1e-9)
        for part in REWARD_KEYS:  # part by part too
            agents_part = sum(i["reward_parts"].get(part, 0.0) for i in infos.values())
            core_part = sum(cs["reward_parts"][part] for cs in core_steps)
            assert math.isclose(agents_part, core_part, abs_tol=1e-9), part
        n_steps += 1
    assert single.done and n_steps > 50
    assert (n_shifts > 0) == (roles == "both")
    assert math.isclose(
        env.core.kpis.total_return, single.kpis.total_return, abs_tol=1e-9
    )
