"""The network's limits as rules: voltage floors and DT ratings (network.py), the
deficits and overloads a state reports (distflow.py), the reward's network parts
(reward.network_terms), the KPIs, and the two scenarios where each limit binds."""

import math
from dataclasses import replace

import numpy as np
import pytest
from grid_probes import two_bus

from evgrid_core import EVGridEnv, SimConfig
from evgrid_core.distflow import LinDistFlowSolver
from evgrid_core.equipment import LV_KV
from evgrid_core.network import (
    DT_NO_LOAD_KV,
    EV_PF,
    TRANSFORMER_LIMIT,
    city_network,
    tan_phi,
)
from evgrid_core.policies import make_policy
from evgrid_core.reward import network_terms
from evgrid_core.rollout import play_episode

LIN = SimConfig(grid="lindistflow")


# --- Limits as data ------------------------------------------------------------------
def test_every_bus_has_the_floor_of_its_voltage_level() -> None:
    net = city_network()
    for bus, floor in zip(net.buses, net.v_floor_pu.tolist(), strict=True):
        want = {66.0: 0.875, 11.0: 0.91, LV_KV: 0.94 * LV_KV / DT_NO_LOAD_KV}
        assert floor == pytest.approx(want[bus.vn_kv]), bus.name
    # points of supply: every bus carrying background or a station, no 66 kV bus
    kinds = {b.kind for b, on in zip(net.buses, net.supply_bus, strict=True) if on}
    assert kinds == {"substation", "locality", "lv"}
    assert TRANSFORMER_LIMIT == 1.0
    assert np.isfinite(net.station_dt_kva).all()  # no HT station in the city


# --- Probes: the deficit and the reward's parts by hand ---------------------------------
def _two_bus_state(p_kw: float):  # noqa: ANN202
    # z_base 121 ohm: r = 1/121, x = 2/121 p.u.; q = p/2 so v^2 = 1 - 4 p[MW] / 121
    return LinDistFlowSolver(two_bus()).solve(
        np.array([0.0, p_kw]), np.array([0.0, p_kw / 2])
    )


def test_the_voltage_deficit_is_measured_on_the_squared_voltage() -> None:
    s = _two_bus_state(6000.0)  # v^2 = 97/121: v = 0.8953, below the 0.91 floor
    want = (0.91**2 - 97 / 121) / (2 * 0.91)
    assert s.voltage_deficit_pu.tolist() == [0.0, pytest.approx(want, abs=1e-12)]
    assert want == pytest.approx(0.91 - math.sqrt(97 / 121), abs=2e-4)  # ~ floor - v
    assert s.undervoltage.tolist() == [True]
    assert _two_bus_state(5000.0).voltage_deficit_pu.tolist() == [0.0, 0.0]  # 0.9136
    # linear in the load: the sensitivity is (r + x tan phi) / floor per p.u.
    sens = LinDistFlowSolver(two_bus()).deficit_sensitivity(tan_phi(EV_PF))
    assert sens[1, 0] == pytest.approx((1 + 2 * tan_phi(EV_PF)) / 121 / 1000 / 0.91)


def test_the_reward_charges_what_the_ev_load_adds_below_the_floor() -> None:
    s = _two_bus_state(6000.0)
    base = _two_bus_state(5500.0).voltage_deficit_pu  # the background's own deficit

    assert network_terms(s)[0] == pytest.approx(s.voltage_deficit_pu.sum())
    added = network_terms(replace(s, background_deficit_pu=base))[0]
    assert added == pytest.approx((s.voltage_deficit_pu - base).sum(), abs=1e-15)
    assert 0.0 < added < s.voltage_deficit_pu.sum()
    assert network_terms(None) == (0.0, 0.0)  # the feeder sum's ticks


def test_a_dt_is_overloaded_by_the_kva_above_its_rating() -> None:
    env = EVGridEnv(LIN)
    env.reset(seed=0, scenario="dt_failure")
    grid = env.world.grid
    station_kw = np.zeros(25)
    station_kw[11] = 198.0  # Whitefield on its 100 kVA stand-in: 200 kVA at pf 0.99
    n = grid.carry(0, station_kw).network
    assert n.dt_rating_kva[11] == 100.0 and n.dt_rating_kva[0] == 500.0
    assert n.dt_overload_kva[11] == pytest.approx(198.0 / EV_PF - 100.0, rel=1e-12)
    assert n.station_transformer_loading[11] == pytest.approx(2.0, rel=1e-12)
    assert np.count_nonzero(n.dt_overload_kva) == 1
    assert network_terms(grid.carry(0, station_kw).network)[1] == pytest.approx(100.0)
    after = grid.carry(40, station_kw).network  # the 500 kVA unit is back at tick 36
    assert after.dt_overload_kva[11] == 0.0


# --- The scenarios where each limit binds ------------------------------------------------
def test_airport_night_binds_on_voltage_before_feeder_capacity() -> None:
    env = play_episode(make_policy("greedy_eta"), "airport_night", 0, LIN)
    parts, kpis = env.kpis.parts_total, env.kpi_summary()
    north = 3  # F4, the Airport's feeder
    peak = max(u[north] for u in env.kpis.feeder_util_history)
    assert parts["undervoltage"] < -0.5 and kpis["undervoltage_feeder_min"] > 0
    assert peak < SimConfig().soft_limit  # the feeder never nears its capacity
    assert parts["grid_stress"] == 0.0 and kpis["shed_kwh"] == 0.0


def test_dt_failure_binds_on_the_transformer_before_the_feeder() -> None:
    env = play_episode(make_policy("greedy_eta"), "dt_failure", 0, LIN)
    parts, kpis = env.kpis.parts_total, env.kpi_summary()
    assert parts["transformer_overload"] < -0.5
    assert kpis["transformer_overload_min"] > 0 and kpis["shed_kwh"] == 0.0
    east = 1  # F2, Whitefield's feeder
    assert max(u[east] for u in env.kpis.feeder_util_history) < 1.0
    # The feeder sum has no transformers: the same episode pays nothing for them.
    plain = play_episode(make_policy("greedy_eta"), "dt_failure", 0)
    assert plain.kpis.parts_total["transformer_overload"] == 0.0


def test_the_network_fields_reach_the_observation_only_under_a_network_model() -> None:
    plain, lin = EVGridEnv(), EVGridEnv(LIN)
    o1, o2 = plain.reset(seed=2), lin.reset(seed=2)
    assert o1.feeder_min_voltage_pu is None and o1.station_transformer_loading is None
    assert "VOLTS" not in plain.render_text() and " DT" not in plain.render_text()
    assert o2.feeder_min_voltage_pu.shape == (6,)
    assert o2.station_transformer_loading.shape == (25,)
    assert "VOLTS lowest p.u. (floor 0.91): F1 " in lin.render_text()
    # the same feeder forecast: the rule lives in the grid model, shared by both
    assert np.array_equal(o1.feeder_forecast, o2.feeder_forecast)
