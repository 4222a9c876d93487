"""The batched vector env: the same episodes as the single env, bit for bit.

``EVGridVectorEnv`` (``evgrid_core.batch.Batch`` under Gymnasium's ``VectorEnv``)
steps every env in one compiled call; each env's observation vector, mask, reward
and done flag must equal what ``EVGridGymEnv`` gives for the same seed and actions,
across auto-resets, with valid and invalid actions, compiled and as plain Python.
"""

import os
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("gymnasium")

from gymnasium.utils.env_checker import data_equivalence  # noqa: E402

from evgrid_core import EVGridEnv, SimConfig  # noqa: E402
from evgrid_core.batch import Batch  # noqa: E402
from evgrid_core.jit import COMPILED  # noqa: E402
from evgrid_gym import EVGridGymEnv, decode_action  # noqa: E402
from evgrid_gym.vector import EVGridVectorEnv  # noqa: E402


def _actions(rng: np.random.Generator, mask: np.ndarray) -> np.ndarray:
    """A valid action per env, and now and then any index at all (invalid ones too)."""
    picked = (rng.random(mask.shape) * mask).argmax(axis=1)
    wild = rng.random(len(mask)) < 0.05
    picked[wild] = rng.integers(-3, mask.shape[1] + 5, int(wild.sum()))
    return picked


def play_side_by_side(scenarios: list[str], n: int, steps: int, seed: int) -> int:
    """Step a batch and n single envs with the same actions; every step compared.
    Returns how many episodes ended (auto-resets)."""
    venv = EVGridVectorEnv(n, scenarios)
    obs, info = venv.reset(seed=seed)
    singles = [EVGridGymEnv() for _ in range(n)]
    names = [scenarios[i % len(scenarios)] for i in range(n)]
    k = [0] * n

    def restart(i: int) -> tuple[np.ndarray, dict]:
        return singles[i].reset(
            seed=seed + k[i] * n + i, options={"scenario": names[i]}
        )

    expect = [restart(i) for i in range(n)]
    rng = np.random.default_rng(seed)
    ended = 0
    for t in range(steps):
        for i in range(n):
            assert np.array_equal(obs[i], expect[i][0]), (t, i)
            assert np.array_equal(info["action_mask"][i], expect[i][1]["action_mask"])
        acts = _actions(rng, info["action_mask"])
        obs, rew, term, trunc, info = venv.step(acts)
        assert not trunc.any()
        for i in range(n):
            o, r, done, _, _ = singles[i].step(int(acts[i]))
            assert r == rew[i] and done == term[i], (t, i, r, rew[i])
            if done:
                ended += 1
                assert info["episode"]["_r"][i]
                k[i] += 1
                expect[i] = restart(i)
            else:
                expect[i] = (o, {"action_mask": singles[i].action_masks()})
    venv.close()
    return ended


def test_the_batch_plays_the_single_envs_episodes_to_the_bit() -> None:
    ended = play_side_by_side(["evening_peak", "feeder_fault", "festival_surge"], 4,
                              400, seed=11)  # fmt: skip
    assert ended >= 2  # auto-resets were crossed


@pytest.mark.slow
def test_every_scenario_in_one_batch() -> None:
    from evgrid_core.scenarios import SCENARIOS

    assert play_side_by_side([s for s in SCENARIOS if s != "full_day"], 12, 250, 3)


def test_episode_summaries_match_the_single_env_kpis() -> None:
    b = Batch(2, ["evening_peak", "festival_surge"], seed=40)
    rng = np.random.default_rng(1)
    played: list[list[int]] = [[], []]
    ends: list[tuple[dict, list[int]]] = []
    while len(ends) < 2:
        acts = (rng.random(b.mask.shape) * b.mask).argmax(axis=1)
        for i in range(2):
            played[i].append(int(acts[i]))
        b.step(acts)
        for ep in b.finished:
            ends.append((ep, played[ep["env"]]))
            played[ep["env"]] = []
    for ep, actions in ends:
        env = EVGridEnv()
        obs = env.reset(seed=ep["seed"], scenario=ep["scenario"])
        total = 0.0
        for a in actions:
            total += env.step(decode_action(a, obs.request.id)).reward
            obs = env.observation()
        assert env.done and ep["steps"] == len(actions) == env.steps
        kpi = env.kpi_summary()
        assert ep["return"] == pytest.approx(total, abs=1e-9)
        assert ep["evs_served"] == kpi["evs_served"]
        assert (ep["gave_up"], ep["stranded"]) == (kpi["gave_up"], kpi["stranded"])
        assert ep["energy_kwh"] == kpi["energy_kwh"]
        assert ep["unmet_kwh"] == kpi["unmet_kwh"]
        assert ep["overload_ticks"] * 5 == kpi["overload_feeder_min"]
        assert ep["invalid"] == env.kpis.invalid


def test_episode_info_follows_gymnasiums_vector_convention() -> None:
    venv = EVGridVectorEnv(3, "evening_peak")
    obs, info = venv.reset(seed=5)
    assert obs.shape == (3, venv.single_observation_space.shape[0])
    assert venv.observation_space.contains(obs)
    rng = np.random.default_rng(0)
    returns = np.zeros(3)
    while True:
        obs, rew, term, trunc, info = venv.step(_actions(rng, info["action_mask"]))
        returns += rew
        if term.any():
            break
    ep = info["episode"]
    assert (ep["_r"] == term).all() and (info["_episode"] == term).all()
    from gymnasium.wrappers.vector import DictInfoToList

    listed = DictInfoToList(venv)._convert_info_to_list(info)
    assert ["episode" in x for x in listed] == term.tolist()
    i = int(np.flatnonzero(term)[0])
    assert ep["r"][i] == pytest.approx(returns[i], abs=1e-9)
    assert ep["l"][i] > 0 and ep["overload_min"][i] % 5 == 0


def test_same_seed_same_batch_and_threads_change_nothing() -> None:
    def run(threads: int) -> list:
        venv = EVGridVectorEnv(6, ["evening_peak", "heatwave"], threads=threads)
        obs, info = venv.reset(seed=9)
        rng = np.random.default_rng(2)
        out = []
        for _ in range(120):
            obs, rew, term, _, info = venv.step(_actions(rng, info["action_mask"]))
            out.append((obs.copy(), rew.copy(), term.copy()))
        venv.close()
        return out

    a, b, c = run(1), run(1), run(2)
    assert data_equivalence(a, b) and data_equivalence(a, c)


def test_an_episode_larger_than_its_room_is_played_alike() -> None:
    """With no room beyond the mean EVs, about half the episodes draw more: their
    env is given a bigger room and the same episode starts again, unchanged."""

    def run(room: float) -> tuple[list, list, tuple[int, int]]:
        b = Batch(4, ["evening_peak", "festival_surge"], seed=3, room=room)
        first = b.state_bytes()
        rng = np.random.default_rng(5)
        out, ends = [], []
        for _ in range(700):
            obs, rew, done, mask = b.step((rng.random(b.mask.shape) * b.mask).argmax(1))
            out.append((obs.copy(), rew.copy(), done.copy(), mask.copy()))
            ends += b.finished
        return out, ends, (first, b.state_bytes())

    tight, tight_ends, (first, last) = run(0.0)
    roomy, roomy_ends, _ = run(6.0)
    assert len(tight_ends) >= 6 and tight_ends == roomy_ends
    assert data_equivalence(tight, roomy)
    if COMPILED:  # the tight rooms grew after the first episodes (as Python, every
        assert last > first  # episode has blocks of its own size)


def test_seeds_stay_below_the_limit() -> None:
    b = Batch(3, "evening_peak", seed=8, seed_limit=10)
    assert [b.seed_of(i, k) for k in range(3) for i in range(3)] == [8, 9, 0, 1, 2, 3,
                                                                     4, 5, 6]  # fmt: skip
    venv = EVGridVectorEnv(2, seed_limit=50)
    for _ in range(5):
        venv.reset()
        assert all(venv.batch.seed_of(i) < 50 for i in range(2))
    with pytest.raises(ValueError, match="seed_limit"):
        Batch(3, seed_limit=2)


def test_bad_input_is_refused_with_a_message() -> None:
    with pytest.raises(ValueError, match="positive integer"):
        Batch(0)
    with pytest.raises(ValueError, match="feeder sum only"):
        Batch(2, config=SimConfig(grid="lindistflow"))
    with pytest.raises(ValueError, match="unknown scenario 'nowhere'"):
        Batch(2, "nowhere")
    b = Batch(2)
    with pytest.raises(ValueError, match="2 integer indices"):
        b.step(np.zeros(3, dtype=int))
    with pytest.raises(ValueError, match="2 integer indices"):
        b.step(np.zeros(2))  # floats
    with pytest.raises(ValueError, match="below 2\\*\\*62"):
        b.reset(seed=2**62)
    with pytest.raises(ValueError, match="non-negative"):
        b.reset(seed=-1)
    with pytest.raises(ValueError, match="room"):
        Batch(2, room=-1.0)
    venv = EVGridVectorEnv(2)
    with pytest.raises(ValueError, match="no options"):
        venv.reset(seed=1, options={"scenario": "heatwave"})


SCRIPT = """
import hashlib, numpy as np
from evgrid_core.batch import Batch
from evgrid_core.jit import COMPILED
b = Batch(3, ["evening_peak", "feeder_fault"], seed=21)
rng = np.random.default_rng(0)
h = hashlib.sha256()
for _ in range(150):
    a = (rng.random(b.mask.shape) * b.mask).argmax(axis=1)
    obs, rew, done, mask = b.step(a)
    for x in (obs, rew, done, mask):
        h.update(x.tobytes())
print(COMPILED, h.hexdigest())
"""


@pytest.mark.slow
def test_the_batch_is_the_same_compiled_and_as_plain_python() -> None:
    def run(flag: str) -> list[str]:
        env = {**os.environ, "NUMBA_DISABLE_JIT": flag}
        r = subprocess.run([sys.executable, "-c", SCRIPT], env=env,
                           capture_output=True, text=True)  # fmt: skip
        assert r.returncode == 0, r.stderr[-3000:]
        return r.stdout.split()

    compiled, plain = run("0"), run("1")
    assert compiled[0] == "True" and plain[0] == "False"
    assert compiled[1] == plain[1]
