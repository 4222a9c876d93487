"""The AC reference (evgrid_ac): pandapower on hand-computed probes, LinDistFlow
against it on the city, and the "ac" grid model in whole episodes."""

import math
import subprocess
import sys

import numpy as np
import pytest
from grid_probes import three_bus, two_bus

from evgrid_ac.model import ACPowerFlow
from evgrid_ac.net import PandapowerNet
from evgrid_ac.validate import compare
from evgrid_core import EVGridEnv, SimConfig
from evgrid_core.distflow import LinDistFlowSolver
from evgrid_core.network import city_network
from evgrid_core.oltc import TAP_STEP_PU
from evgrid_core.policies import ADVERSARIAL, make_policy
from evgrid_core.rollout import play_episode, run_episode


def exact_chain(r: list[float], x: list[float], p: list[float], q: list[float]):
    """The full DistFlow equations on a chain (slack at 1 p.u., loads p, q at buses
    1..n, all per unit), solved by sweeping until nothing changes: by hand, in floats.
    Returns (voltages, branch losses)."""
    n = len(r)
    v2 = [1.0] * (n + 1)
    for _ in range(100):
        Ps, Qs, loss = [0.0] * n, [0.0] * n, [0.0] * n
        down_p = down_q = 0.0
        for b in reversed(range(n)):  # backward: receiving-end flow, then the loss
            Pr, Qr = p[b] + down_p, q[b] + down_q
            loss[b] = r[b] * (Pr * Pr + Qr * Qr) / v2[b + 1]
            Ps[b], Qs[b] = Pr + loss[b], Qr + x[b] / r[b] * loss[b]
            down_p, down_q = Ps[b], Qs[b]
        for b in range(n):  # forward: the DistFlow voltage equation
            v2[b + 1] = (v2[b] - 2 * (r[b] * Ps[b] + x[b] * Qs[b])
                         + (r[b] ** 2 + x[b] ** 2) * (Ps[b] ** 2 + Qs[b] ** 2) / v2[b])  # fmt: skip
    return [math.sqrt(v) for v in v2], loss


def test_pandapower_matches_the_two_bus_closed_form() -> None:
    # V2^4 - (1 - 2 (rP + xQ)) V2^2 + (r^2 + x^2)(P^2 + Q^2) = 0 with r = 1/121,
    # x = 2/121, P = 1, Q = 0.5: V2^2 = (117 + sqrt(117^2 - 25)) / 242
    v2 = (117 + math.sqrt(117**2 - 25)) / 242
    ac = PandapowerNet(two_bus()).solve(np.array([0.0, 1000.0]), np.array([0.0, 500.0]))
    assert ac.vm_pu[1] == pytest.approx(math.sqrt(v2), abs=1e-8)
    assert ac.losses_kw[0] == pytest.approx(1250 / 121 / v2, abs=1e-5)  # r |S|^2 / V2^2
    amps = math.sqrt(1.25) / (math.sqrt(3) * 11 * math.sqrt(v2))  # [kA]
    assert ac.loading[0] == pytest.approx(amps / 0.2, abs=1e-7)
    # LinDistFlow: sqrt(117/121), 0.0017 p.u. high; losses 3.4 % low.
    lin = LinDistFlowSolver(two_bus()).solve(
        np.array([0.0, 1000.0]), np.array([0.0, 500.0])
    )
    assert lin.vm_pu[1] - ac.vm_pu[1] == pytest.approx(
        math.sqrt(117 / 121) - math.sqrt(v2), abs=1e-8
    )
    assert 0 < lin.vm_pu[1] - ac.vm_pu[1] < 0.002


def test_pandapower_matches_distflow_by_hand_on_three_buses() -> None:
    p, q = np.array([0.0, 2000.0, 1000.0]), np.array([0.0, 500.0, 300.0])
    ac = PandapowerNet(three_bus()).solve(p, q)
    r01, x01 = 0.001, math.sqrt(0.008**2 - 0.001**2)  # 10 MVA, vk 8 %, vkr 1 %
    vm, loss = exact_chain([r01, 0.6 / 121], [x01, 0.7 / 121], [2.0, 1.0], [0.5, 0.3])
    assert ac.vm_pu.tolist() == pytest.approx(vm, abs=1e-8)
    assert ac.losses_kw.tolist() == pytest.approx([v * 1e3 for v in loss], abs=1e-5)
    lin = LinDistFlowSolver(three_bus()).solve(p, q)
    assert np.abs(lin.vm_pu - ac.vm_pu).max() < 0.001  # the linearisation's error


def test_pandapower_applies_the_oltcs_tap_as_lindistflow_does() -> None:
    # The probe's 66/11 kV transformer at tap n: no load, bus A at exactly
    # 1 + n x 1.25 %; loaded, LinDistFlow at the same tap close to it.
    net, solver = PandapowerNet(three_bus()), LinDistFlowSolver(three_bus())
    for tap in (-2, 0, 3):
        idle = net.solve(np.zeros(3), np.zeros(3), np.array([tap]))
        want = 1 + tap * TAP_STEP_PU
        assert idle.vm_pu.tolist() == pytest.approx([1.0, want, want], abs=1e-8)
        p, q = np.array([0.0, 2000.0, 1000.0]), np.array([0.0, 500.0, 300.0])
        ac, lin = net.solve(p, q, np.array([tap])), solver.solve(p, q, np.array([tap]))
        # (the linearisation's error, a little larger at a raised tap: 0.0011 at 3)
        assert np.abs(lin.vm_pu - ac.vm_pu).max() < 0.0015
        assert ac.tap.tolist() == [tap]


def test_the_ac_model_solves_each_tick_at_the_cores_taps() -> None:
    env = EVGridEnv(SimConfig(grid="ac"))
    env.reset(seed=0, scenario="evening_peak")
    lin = EVGridEnv(SimConfig(grid="lindistflow"))
    lin.reset(seed=0, scenario="evening_peak")
    assert np.array_equal(env.world.grid.tap, lin.world.grid.tap)
    assert np.array_equal(env.network.tap, lin.network.tap)
    hub = [city_network().branches[h].to_bus for h in city_network().feeder_head]
    # both busbars near the regulator's target (the AC one a little lower)
    assert np.abs(env.network.vm_pu[hub] - lin.network.vm_pu[hub]).max() < 0.002


def test_lindistflow_stays_close_to_pandapower_on_the_city() -> None:
    """The bounds docs/grid.md states, on every 4th tick of an evening peak."""
    e = compare("evening_peak", seed=0, every=4)
    assert e.ticks == 12 and e.min_vm_ac < 0.9  # the long North feeder's tail
    assert e.max_dv < 0.01 and e.mean_dv < 0.0025
    assert e.max_dloading < 0.025 and e.mean_dloading < 0.002
    assert 0.9 < e.losses_ratio < 0.97  # LinDistFlow's losses run a few % low


def test_the_ac_model_is_chosen_by_config_and_carries_the_feeder_sums_kw() -> None:
    policy = make_policy("greedy_eta")
    a = play_episode(policy, "feeder_fault", 1)
    b = play_episode(policy, "feeder_fault", 1, SimConfig(grid="ac"))
    assert type(b.world.grid) is ACPowerFlow
    lin = play_episode(policy, "feeder_fault", 1, SimConfig(grid="lindistflow"))
    network_kpis = ("undervoltage_feeder_min", "transformer_overload_min", "losses_kwh")
    network_parts = ("undervoltage", "transformer_overload")
    ka, kb = a.kpi_summary(), b.kpi_summary()
    added = sum(b.kpis.parts_total[k] for k in network_parts)
    assert kb.pop("return") == pytest.approx(ka.pop("return") + added, abs=1e-9)
    for k in network_kpis:
        assert ka.pop(k) == 0.0
        kb.pop(k)
    assert ka == kb  # every feeder-sum KPI, bit for bit
    sa, sb = a.state(), b.state()
    sa.pop("kpis"), sb.pop("kpis")
    assert sa == sb
    # The network parts: AC voltages run a little lower than LinDistFlow's, so the
    # tail's deficit is at least as deep; the losses a few % higher (docs/grid.md).
    uv_ac, uv_lin = (
        b.kpis.parts_total["undervoltage"],
        lin.kpis.parts_total["undervoltage"],
    )
    assert uv_ac <= uv_lin < 0.0
    assert 1.0 < b.kpis.losses_kwh / lin.kpis.losses_kwh < 1.1
    n_ac, n_lin = b.world.grid_now.network, lin.world.grid_now.network
    assert np.abs(n_ac.vm_pu - n_lin.vm_pu).max() < 0.01
    assert len(n_ac.vm_pu) == len(city_network().buses)


def test_two_ac_envs_in_lockstep_are_identical() -> None:
    cfg = SimConfig(grid="ac")
    e1, e2 = EVGridEnv(cfg), EVGridEnv(cfg)
    o1 = e1.reset(seed=3, scenario="evening_peak")
    e2.reset(seed=3, scenario="evening_peak")
    policy = make_policy("random_valid")
    policy.reset(3)
    while not e1.done:
        action = policy.act(o1)
        r1, r2 = e1.step(action), e2.step(action)
        assert r1.reward == r2.reward and r1.info == r2.info
        n1, n2 = e1.world.grid_now.network, e2.world.grid_now.network
        assert np.array_equal(n1.vm_pu, n2.vm_pu)
        o1 = e1.observation()
    assert e1.state() == e2.state()


def test_no_adversarial_policy_beats_greedy_under_ac() -> None:
    """Under "ac" a return is the feeder sum's plus the network's parts, and the
    anti-hack ordering of tests/core/test_core_antihack.py still holds."""
    cfg = SimConfig(grid="ac")
    greedy = run_episode(make_policy("greedy_eta"), "evening_peak", 0, cfg).ret
    for cls in ADVERSARIAL:
        p = make_policy(cls.name)
        res = run_episode(p, "evening_peak", 0, cfg)
        network = res.parts["undervoltage"] + res.parts["transformer_overload"]
        plain = run_episode(p, "evening_peak", 0).ret
        assert res.ret == pytest.approx(plain + network, abs=1e-9)
        assert res.ret < greedy, cls.name


def test_without_pandapower_the_ac_model_says_how_to_install_it() -> None:
    code = (
        "import sys; sys.modules['pandapower'] = None\n"
        "from evgrid_core import EVGridEnv, SimConfig\n"
        "try:\n    EVGridEnv(SimConfig(grid='ac')).reset(seed=0)\n"
        "except ImportError as e:\n    print(e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout  # fmt: skip
    assert "pip install 'ev-grid-oracle[ac]'" in out


def test_the_ac_model_keeps_the_grid_model_contract() -> None:
    from evgrid_core import check_grid_model

    assert check_grid_model("ac", scenarios=["feeder_fault"], ticks=8) == {
        "feeder_fault": 8
    }
