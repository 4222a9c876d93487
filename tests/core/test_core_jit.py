"""One implementation of the rules, two speeds: compiled by numba, or plain Python.

The world's kernels (``ticks.py``, ``decide.py``, ``charging.py``) run compiled when
numba is there and as Python under ``NUMBA_DISABLE_JIT=1``: the same episodes, bit
for bit. The golden episodes (``test_core_golden.py``) pin the compiled path.
"""

import json
import os
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from evgrid_core import EVGridEnv, SimConfig
from evgrid_core.jit import COMPILED, array_sum
from evgrid_core.policies import make_policy

ROOT = Path(__file__).resolve().parents[2]

# (scenario, policy, seed, grid model): the feeder sum's one-call ticks, a feeder
# fault that sheds, LOAD_SHIFTs and invalid answers, and a network model's ticks
# carried from Python between the kernels.
CASES = [
    ("evening_peak", "greedy_eta", 3, "feeder_sum"),
    ("festival_surge", "random_valid", 5, "feeder_sum"),
    ("feeder_fault", "load_shift_spam", 1, "feeder_sum"),
    ("heatwave", "always_invalid", 2, "feeder_sum"),
    ("evening_peak", "urgency_first", 4, "lindistflow"),
]

PLAY = """
import json, sys
from evgrid_core import EVGridEnv, SimConfig
from evgrid_core.jit import COMPILED
from evgrid_core.policies import make_policy
out = {"compiled": COMPILED, "episodes": []}
for scenario, policy, seed, grid in json.loads(sys.argv[1]):
    env = EVGridEnv(SimConfig(grid=grid))
    obs = env.reset(seed=seed, scenario=scenario)
    p = make_policy(policy)
    p.reset(seed)
    rewards = []
    while not env.done:
        rewards.append(env.step(p.act(obs)).reward)
        obs = env.observation()
    out["episodes"].append({"rewards": [r.hex() for r in rewards],
                            "kpis": {k: float(v).hex() for k, v in env.kpi_summary().items()},
                            "state": env.state()})
print(json.dumps(out))
"""


def play(env_vars: dict[str, str]) -> dict:
    env = {**os.environ, **env_vars}
    done = subprocess.run(
        [sys.executable, "-c", PLAY, json.dumps(CASES)],
        capture_output=True, text=True, cwd=ROOT, env=env, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


@pytest.mark.slow
def test_the_episodes_are_the_same_compiled_and_as_plain_python() -> None:
    compiled = play({"NUMBA_DISABLE_JIT": "0"})
    plain = play({"NUMBA_DISABLE_JIT": "1"})
    assert compiled["compiled"] and not plain["compiled"]
    for case, a, b in zip(CASES, compiled["episodes"], plain["episodes"], strict=True):
        assert a["rewards"] == b["rewards"], case  # every step's reward, to the bit
        assert a["kpis"] == b["kpis"], case
        assert a["state"] == b["state"], case


def test_numba_compiles_the_core_here() -> None:
    """numba is a core dependency: without it every episode runs at Python speed."""
    assert COMPILED, "numba is missing or disabled: the core runs as plain Python"


@pytest.mark.parametrize("fn", [array_sum, getattr(array_sum, "py_func", array_sum)])
def test_array_sum_is_numpys_sum_to_the_bit(fn) -> None:  # noqa: ANN001
    # numpy adds pairwise (blocks of 8 running sums, halves above 128 elements); a
    # plain loop would round differently and change the episodes' energy totals.
    rng = np.random.default_rng(11)
    for n in [*range(0, 300), 511, 1000, 2049, 5000]:
        a = rng.random(n) * 10.0 ** rng.uniform(-3, 3, n)
        assert fn(a, n) == float(a.sum()), n


def test_a_clone_and_a_pickled_copy_are_independent_and_equal() -> None:
    env = EVGridEnv(SimConfig())
    obs = env.reset(seed=7, scenario="evening_peak")
    p = make_policy("greedy_eta")
    for _ in range(40):
        env.step(p.act(obs))
        obs = env.observation()
    clone, copy = env.clone(), pickle.loads(pickle.dumps(env))
    before = env.state()
    assert clone.state() == before == copy.state()
    for other in (clone, copy):  # each copy plays on alone
        o = other.observation()
        while not other.done:
            other.step(p.act(o))
            o = other.observation()
    assert env.state() == before
    rest = []
    while not env.done:
        rest.append(env.step(p.act(obs)).reward)
        obs = env.observation()
    assert env.kpi_summary() == clone.kpi_summary() == copy.kpi_summary()


def test_a_handle_holds_each_blocks_address_and_shape() -> None:
    """``jit.handle``: what the kernels are handed instead of the blocks; compiled,
    one int64 row per block (address, then the shape); as Python, the blocks."""
    from evgrid_core.jit import COMPILED, SLOT, handle

    blocks = (np.zeros((3, 4)), np.arange(5), np.ones((2, 2, 2), dtype=bool))
    h = handle(blocks)
    if not COMPILED:
        assert h is blocks
        return
    rows = np.asarray(h).reshape(len(blocks), SLOT)
    for row, b in zip(rows, blocks, strict=True):
        assert row[0] == b.ctypes.data
        assert tuple(row[1 : 1 + b.ndim]) == b.shape and not row[1 + b.ndim :].any()
    with pytest.raises(ValueError, match="C-contiguous"):
        handle((np.zeros((4, 4))[:, ::2],))
