"""The decision prompt under the network grid models (issue 18).

Each listed station's line gains its feeder's lowest voltage and its distribution
transformer's loading (`` 0.903pu DT135%``); under the feeder sum the prompt is the
one the shipped Oracle was trained on, byte for byte. The two models carry the same
kW, so one policy takes the same decisions on both: their prompts, request by
request, differ by those notes alone.
"""

from __future__ import annotations

import dataclasses
import re

import pytest

from evgrid_core import EVGridEnv, SimConfig
from evgrid_core.policies import make_policy
from oracle.prompt import decision_prompt, network_note

NOTE = re.compile(r" \d\.\d{3}pu DT\d+%$")  # what a station line gains


def lockstep(scenario: str, seed: int, limit: int):
    """(feeder_sum obs, lindistflow obs) at each of the first ``limit`` decisions,
    greedy_eta deciding on the feeder sum's and both envs taking its action."""
    flat = EVGridEnv()
    net = EVGridEnv(SimConfig(grid="lindistflow"))
    a, b = flat.reset(seed=seed, scenario=scenario), net.reset(seed, scenario)
    policy = make_policy("greedy_eta")
    policy.reset(seed)
    for _ in range(limit):
        if flat.done:
            return
        yield a, b
        action = policy.act(a)
        flat.step(action)
        net.step(action)
        a, b = flat.observation(), net.observation()


def _without_network(obs):
    return dataclasses.replace(
        obs, feeder_min_voltage_pu=None, station_transformer_loading=None
    )


@pytest.mark.parametrize(
    ("scenario", "seed"), [("evening_peak", 0), ("dt_failure", 1), ("airport_night", 2)]
)
def test_the_feeder_sum_prompt_is_unchanged(scenario, seed):
    # The feeder sum carries no network field, and the prompt of the network model's
    # observation with its fields removed is the feeder sum's, byte for byte.
    n = 0
    for flat, net in lockstep(scenario, seed, 40):
        assert flat.station_transformer_loading is None
        assert flat.feeder_min_voltage_pu is None
        p = decision_prompt(flat)
        q = decision_prompt(_without_network(net))
        assert (q.text, q.lines, q.letters) == (p.text, p.lines, p.letters)
        assert "pu DT" not in p.text
        n += bool(p.lines)
    assert n >= 20  # enough real decisions compared


@pytest.mark.parametrize(
    ("scenario", "seed"), [("evening_peak", 0), ("dt_failure", 1), ("airport_night", 2)]
)
def test_lindistflow_adds_the_numbers_to_each_station_line_only(scenario, seed):
    for flat, net in lockstep(scenario, seed, 40):
        p, q = decision_prompt(flat), decision_prompt(net)
        assert (q.lines, q.letters) == (p.lines, p.letters)  # the same options
        old = p.messages[1]["content"].split("\n")
        new = q.messages[1]["content"].split("\n")
        assert len(new) == len(old)
        for o, m in zip(old, new, strict=True):
            if re.match(r"S\d+ ", o):  # a station's line: its note appended
                s = int(o.split()[0][1:])
                assert m == o + network_note(net, s - 1)
                assert NOTE.search(m)
            else:
                assert m == o


def test_the_note_carries_the_feeder_voltage_and_the_transformer_loading():
    # dt_failure seed 0 at 10:00: S1's note reads its feeder's lowest voltage (3
    # decimals) and its DT's loading in % exactly as the observation has them.
    obs = EVGridEnv(SimConfig(grid="lindistflow")).reset(0, "dt_failure")
    for s in range(len(obs.station_names)):
        v = obs.feeder_min_voltage_pu[obs.feeder_of[s]]
        dt = obs.station_transformer_loading[s]
        assert network_note(obs, s) == f" {v:.3f}pu DT{dt * 100:.0f}%"
    # F4 (the North feeder's Yelahanka-Airport tail) is the lowest, just above the
    # 0.91 floor with its OLTC at tap 1 (docs/grid.md).
    north = [s for s in range(len(obs.station_names)) if obs.feeder_of[s] == 3]
    assert north and all(network_note(obs, s).startswith(" 0.917pu") for s in north)
    assert network_note(_without_network(obs), 0) == ""
