"""Behaviour pinned across refactors: a recorded set of full episodes hashes as before.

Each episode (a scenario, a seed, a policy; typed actions, the same actions as text
lines, and a script that mixes in invalid lines and LOAD_SHIFTs) is hashed from
what a user sees: the text observation before each step, the reward, its parts and
the info after it, and the final KPIs and state. Floats are written to 10
significant digits, so a change in the last bit of a sum does not count but any
change of behaviour does. The digests are in ``golden_episodes.json``; after a
change that is meant to alter behaviour, rewrite them and say why in the commit:

    EVGRID_WRITE_GOLDEN=1 python3 -m pytest tests/core/test_core_golden.py
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pytest

from evgrid_core import EVGridEnv, format_action
from evgrid_core.policies import make_policy

GOLDEN = Path(__file__).with_name("golden_episodes.json")
EPISODES = [  # (scenario, seed, policy, how the actions are sent)
    ("evening_peak", 3, "greedy_eta", "typed"),
    ("evening_peak", 3, "greedy_eta", "text"),
    ("festival_surge", 5, "distilled", "typed"),
    ("feeder_fault", 7, "urgency_first", "text"),
    ("heatwave", 2, "price_renewable", "typed"),  # issues LOAD_SHIFTs
    ("quiet_night", 1, "random_valid", "text"),
    ("demand_response", 4, "least_loaded_feeder", "mixed"),
    ("airport_rush", 6, "nearest", "mixed"),
]


def _round(x: Any) -> Any:
    if isinstance(x, float):
        return float(f"{x:.10g}")
    if isinstance(x, dict):
        return {k: _round(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_round(v) for v in x]
    return x


def episode_digest(scenario: str, seed: int, policy: str, mode: str) -> str:
    env = EVGridEnv()
    obs = env.reset(seed=seed, scenario=scenario)
    p = make_policy(policy)
    p.reset(seed)
    h = hashlib.sha256()
    step = 0
    while not env.done:
        h.update(env.render_text().encode())
        action = p.act(obs)
        if mode == "text" and not isinstance(action, str):
            action = format_action(action)
        elif mode == "mixed":  # invalid lines and caps between the policy's own
            if step % 7 == 3:
                action = "ROUTE E99999 S1 FAST"
            elif step % 11 == 5:
                action = f"LOAD_SHIFT S{1 + step % 25} 50 15"
            elif step % 13 == 6:
                action = "DEFER E1 5 please"
        r = env.step(action)
        h.update(json.dumps(_round([r.reward, r.info]), sort_keys=True).encode())
        obs = env.observation()
        step += 1
    h.update(json.dumps(_round(env.kpi_summary()), sort_keys=True).encode())
    h.update(json.dumps(_round(env.state()), sort_keys=True).encode())
    return h.hexdigest()


def _key(ep: tuple) -> str:
    return "/".join(map(str, ep))


def test_recorded_episodes_hash_as_before() -> None:
    got = {_key(ep): episode_digest(*ep) for ep in EPISODES}
    if os.environ.get("EVGRID_WRITE_GOLDEN"):
        GOLDEN.write_text(json.dumps(got, indent=1, sort_keys=True) + "\n")
        pytest.skip(f"wrote {GOLDEN.name}")
    want = json.loads(GOLDEN.read_text())
    assert sorted(want) == sorted(got), "the recorded set changed: rewrite the file"
    changed = [k for k in got if got[k] != want[k]]
    assert changed == [], f"behaviour changed in {changed}"


def test_the_digest_sees_a_changed_action() -> None:
    # the hash is not blind: one different decision changes it
    a = episode_digest("quiet_night", 1, "greedy_eta", "typed")
    b = episode_digest("quiet_night", 1, "nearest", "typed")
    assert a != b
