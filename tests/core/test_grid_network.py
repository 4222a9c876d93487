"""The feeders as radial networks (network.py) and LinDistFlow on them (distflow.py):
the construction rule on the city, hand-computed probes, and the model in episodes."""

import math

import numpy as np
import pytest
from grid_probes import three_bus, two_bus

from evgrid_core import SCENARIOS, SimConfig
from evgrid_core.city import load_city
from evgrid_core.distflow import LinDistFlowSolver
from evgrid_core.equipment import Conductor, dt_kva
from evgrid_core.grid import FeederSum, LinDistFlow
from evgrid_core.network import Branch, Bus, Network, city_network, trunk_conductor
from evgrid_core.policies import ADVERSARIAL, make_policy
from evgrid_core.rollout import play_episode, run_episode


# --- Probes: networks small enough to compute by hand (tests/grid_probes.py) ----
def test_lindistflow_two_bus_by_hand() -> None:
    # 1 MW + 0.5 Mvar; z_base = 11^2 / 1 MVA = 121 ohm, so r = 1/121, x = 2/121 p.u.
    s = LinDistFlowSolver(two_bus()).solve(
        np.array([0.0, 1000.0]), np.array([0.0, 500.0])
    )
    # v^2 = 1 - 2 (r P + x Q) = 1 - 2 (1 + 1) / 121 = 117/121
    assert s.vm_pu[0] == 1.0
    assert s.vm_pu[1] == pytest.approx(math.sqrt(117 / 121), abs=1e-12)
    # losses r (P^2 + Q^2) / v_slack^2 = 1.25 / 121 MW
    assert s.losses_kw[0] == pytest.approx(1250 / 121, abs=1e-9)
    # loading |S| / v / rating: 1.118 MVA over sqrt(3) * 11 kV * 0.2 kA
    rating = math.sqrt(3) * 11 * 0.2
    assert s.loading[0] == pytest.approx(
        math.sqrt(1.25) / math.sqrt(117 / 121) / rating
    )


def test_lindistflow_three_bus_with_a_transformer_by_hand() -> None:
    s = LinDistFlowSolver(three_bus()).solve(
        np.array([0.0, 2000.0, 1000.0]), np.array([0.0, 500.0, 300.0])
    )
    # transformer on the 1 MVA base: z = 0.08 / 10, r = 0.01 / 10
    r01, x01 = 0.001, math.sqrt(0.008**2 - 0.001**2)
    r12, x12 = 0.6 / 121, 0.7 / 121
    va2 = 1 - 2 * (r01 * 3.0 + x01 * 0.8)  # the transformer carries both loads
    vb2 = va2 - 2 * (r12 * 1.0 + x12 * 0.3)
    assert s.vm_pu.tolist() == pytest.approx(
        [1.0, math.sqrt(va2), math.sqrt(vb2)], abs=1e-12
    )
    assert s.losses_kw.tolist() == pytest.approx(
        [r01 * (9 + 0.64) * 1e3, r12 * (1 + 0.09) / va2 * 1e3], abs=1e-9
    )
    assert s.loading[0] == pytest.approx(math.hypot(3, 0.8) / math.sqrt(va2) / 10.0)
    assert s.substation_loading.tolist() == [s.loading[0]]
    assert s.min_vm_pu.tolist() == [s.vm_pu[2]]


def test_a_network_that_is_not_radial_is_refused() -> None:
    line = Conductor("probe", 1.0, 1.0, 0.1)
    buses = (Bus("s", 11.0, 0, "grid"), Bus("a", 11.0, 0, "locality"))
    with pytest.raises(ValueError, match="not radial"):
        Network(buses, (Branch("l", 1, 0, 1.0, line),), (0,), np.zeros((1, 2)),
                np.array([1]), np.array([-1]))  # fmt: skip
    with pytest.raises(ValueError, match="hang on a slack"):
        Network(buses, (), (0,), np.zeros((1, 2)), np.array([1]), np.array([-1]))


# --- The city's feeders ---------------------------------------------------------------
def test_the_city_network_follows_the_construction_rule() -> None:
    city, net = load_city(), city_network()
    assert net.n_feeders == 6 and len(net.slack) == 6
    # One substation transformer per feeder, first from its 66 kV slack.
    heads = [net.branches[i] for i in net.feeder_head]
    assert [net.buses[b.to_bus].name for b in heads][3] == "F4 Hebbal 11 kV"
    assert all(b.transformer.vn_hv_kv == 66.0 for b in heads)
    # Line km are road km: F4's path Hebbal - Yelahanka - Airport is 6.9 + 19.9 km.
    km = {b.name: b.length_km for b in net.branches}
    assert km["F4 Hebbal - Yelahanka"] == 6.9
    assert km["F4 Yelahanka - Kempegowda Intl Airport (Devanahalli)"] == 19.9
    # Each feeder's trunk line km is the union of its stations' shortest road paths.
    trunk = np.bincount(
        net.branch_feeder,
        [b.length_km if b.name.startswith("F") else 0.0 for b in net.branches],
    )
    assert trunk.round(1).tolist() == [8.8, 22.8, 22.9, 37.0, 12.1, 17.0]
    # Each station: its DT by the BESCOM mapping, EV load on its LV side.
    for st in city.stations:
        br = net.branches[net.station_branch[st.id - 1]]
        assert br.transformer.sn_kva == dt_kva(st.limit_kw)
        assert net.buses[net.station_bus[st.id - 1]].vn_kv == 0.415
        assert net.bus_feeder[net.station_bus[st.id - 1]] == st.feeder
    assert [dt_kva(kw) for kw in (100, 120, 200, 250, 400, 600)] == [
        100, 250, 500, 500, 500, None,
    ]  # fmt: skip
    # The background: all of each feeder's, on its own locality buses.
    assert net.background_share.sum(axis=1) == pytest.approx([1.0] * 6)
    for f in range(6):
        on = np.flatnonzero(net.background_share[f])
        assert (net.bus_feeder[on] == f).all()
        assert {net.buses[b].kind for b in on} <= {"substation", "locality"}


def test_conductors_come_from_their_standard_data() -> None:
    dog = trunk_conductor(5000.0)  # 5 MW at pf 0.95 is 5.26 MVA: beyond Rabbit's 3
    assert dog.name == "Dog" and trunk_conductor(2500.0).name == "Rabbit"
    # IS 398-2 R20 0.2792 ohm/km at 50 degC; x from 1 m spacing and 14.15 mm diameter
    assert dog.r_ohm_per_km == pytest.approx(0.2792 * (1 + 0.00403 * 30))
    assert dog.x_ohm_per_km == pytest.approx(
        0.0628 * math.log(1 / (0.7788 * 0.007075)), rel=1e-3
    )


# --- The model in episodes --------------------------------------------------------------
NETWORK_PARTS = ("undervoltage", "transformer_overload")
NETWORK_KPIS = ("undervoltage_feeder_min", "transformer_overload_min", "losses_kwh")


def test_lindistflow_carries_the_feeder_sums_kw_bit_for_bit() -> None:
    """The network models carry the sum's kW: every other part and KPI is the sum's,
    bit for bit; they add the network's parts and KPIs, which the sum leaves 0."""
    policy = make_policy("greedy_eta")
    for scenario in ("festival_surge", "feeder_fault"):  # protection sheds in both
        a = play_episode(policy, scenario, 0)
        b = play_episode(policy, scenario, 0, SimConfig(grid="lindistflow"))
        assert type(b.world.grid) is LinDistFlow
        ka, kb = a.kpi_summary(), b.kpi_summary()
        pa, pb = a.kpis.parts_total, b.kpis.parts_total
        assert all(ka.pop(key) == 0.0 for key in NETWORK_KPIS)
        # No station's plugs can load its own DT past its rating (dt_kva): only a
        # swapped DT overloads (dt_failure).
        assert kb.pop("transformer_overload_min") == 0.0
        assert kb.pop("losses_kwh") > 0.0
        # The North feeder's tail dips below its floor in the fault's evening, not
        # in the festival's midday (the OLTCs hold the busbars: docs/grid.md).
        evening = scenario == "feeder_fault"
        assert (kb.pop("undervoltage_feeder_min") > 0.0) == evening
        assert (pb["undervoltage"] < 0.0) == evening
        network = sum(pb[k] for k in NETWORK_PARTS)
        assert kb.pop("return") == pytest.approx(ka.pop("return") + network, abs=1e-9)
        assert ka == kb
        assert all(pa.pop(k) == 0.0 for k in NETWORK_PARTS)
        assert pa == {k: v for k, v in pb.items() if k not in NETWORK_PARTS}
        sa, sb = a.state(), b.state()
        sa.pop("kpis"), sb.pop("kpis")
        assert sa == sb
    assert a.kpi_summary()["shed_kwh"] > 0  # the protection path was taken


def test_lindistflow_ticks_report_the_network() -> None:
    env = play_episode(make_policy("greedy_eta"), "evening_peak", 0,
                       SimConfig(grid="lindistflow"))  # fmt: skip
    g = env.world.grid_now
    n = g.network
    assert n is not None and n.vm_pu.shape == (len(city_network().buses),)
    assert ((n.min_vm_pu > 0.8) & (n.min_vm_pu < 1.0)).all()
    assert (n.feeder_losses_kw > 0).all() and (n.substation_loading > 0).all()
    # Every station's EV kW reaches its DT: loading > 0 exactly where it charges.
    charging = env.world.station_kw > 0
    assert (n.station_transformer_loading[charging] > 0).all()
    assert (n.station_transformer_loading[~charging] == 0).all()
    assert (
        FeederSum(env.world.tables, env.world.background)
        .carry(0, env.world.station_kw)
        .network
        is None
    )


def test_two_lindistflow_envs_in_lockstep_are_identical() -> None:
    from evgrid_core import EVGridEnv

    cfg = SimConfig(grid="lindistflow")
    e1, e2 = EVGridEnv(cfg), EVGridEnv(cfg)
    o1 = e1.reset(seed=7, scenario="feeder_fault")
    e2.reset(seed=7, scenario="feeder_fault")
    policy = make_policy("random_valid")
    policy.reset(7)
    while not e1.done:
        action = policy.act(o1)
        r1, r2 = e1.step(action), e2.step(action)
        assert r1.reward == r2.reward and r1.info == r2.info
        n1, n2 = e1.world.grid_now.network, e2.world.grid_now.network
        assert np.array_equal(n1.vm_pu, n2.vm_pu) and np.array_equal(
            n1.loading, n2.loading
        )
        o1 = e1.observation()
        assert e1.render_text() == e2.render_text()
    assert e1.state() == e2.state()


@pytest.mark.parametrize(
    "scenario",
    ["evening_peak", "feeder_fault", "heatwave", "airport_night", "dt_failure"],
)
def test_every_adversarial_policy_scores_below_greedy_under_lindistflow(
    scenario: str,
) -> None:
    cfg = SimConfig(grid="lindistflow")
    seeds = range(5)

    def mean(name: str) -> float:
        p = make_policy(name)
        return float(np.mean([run_episode(p, scenario, s, cfg).ret for s in seeds]))

    greedy = mean("greedy_eta")
    for cls in ADVERSARIAL:
        assert mean(cls.name) < greedy, cls.name
    assert scenario in SCENARIOS
