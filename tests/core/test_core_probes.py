"""Probe episodes with exact expected values: one EV, one station, known tariff."""

import dataclasses

import numpy as np
import pytest

from evgrid_core import EVGridEnv, get_scenario, load_city
from evgrid_core.fleet import arrivals_from_records
from evgrid_core.grid import feeder_protection
from evgrid_core.observation import render_text
from evgrid_core.scenarios import FeederEvent

CITY = load_city()
NO_NOISE = [1.0] * len(CITY.feeders)
W = EVGridEnv().config.weights


def one_car(scenario="quiet_night", **overrides):
    record = dict(tick=0, klass="car", node="Koramangala", soc=0.2, battery_kwh=40.5)
    record.update(overrides)
    env = EVGridEnv()
    env.reset(seed=0, scenario=scenario, arrivals=arrivals_from_records([record], CITY.nodes),
              background_noise=NO_NOISE)  # fmt: skip
    return env


def test_one_car_on_ultra_exact_energy_cost_wait_and_reward_parts() -> None:
    env = one_car()
    # 23:00, quiet night. Koramangala station S5 is 2.0 km away inside the locality;
    # night speed 25 km/h -> 4.8 min -> arrives at the next 5-minute tick.
    res = env.step("ROUTE E1 S5 ULTRA")
    assert res.info["valid"] and res.done  # the only EV: the clock runs to the end
    soc_at_station = 0.2 - 2.0 / 7.0 / 40.5  # 7 km/kWh
    kwh = (
        (0.8 - soc_at_station) * 40.5 / 0.92
    )  # grid kWh to reach 80 % at 92 % efficiency
    renewable_2300 = (2000 + 2000 + 0) / (
        17000 * 0.68
    )  # hydro + wind, no sun, demand x 0.68
    k = env.kpi_summary()
    assert k["energy_kwh"] == pytest.approx(kwh, rel=1e-12)
    assert k["energy_cost_inr"] == pytest.approx(
        kwh * 4.50 * 1.3, rel=1e-12
    )  # KERC Rs 4.50 x 1.3 outside the MoP 2024 solar hours
    assert k["mean_wait_min"] == 5.0
    assert k["evs_served"] == 1 and k["stranded"] == 0
    assert k["renewable_share_pct"] == pytest.approx(100 * renewable_2300, rel=1e-12)
    parts = res.info["reward_parts"]
    assert parts["wait"] == pytest.approx(-W.wait * 5)
    assert parts["cost"] == pytest.approx(-W.cost * kwh * 4.50 * 1.3, rel=1e-12)
    assert parts["renewable"] == pytest.approx(
        -W.renewable * kwh * (1 - renewable_2300), rel=1e-12
    )
    for key in (
        "grid_stress",
        "peak",
        "urgency",
        "stranded",
        "invalid",
        "defer_abuse",
        "load_shift",
    ):
        assert parts[key] == 0.0, key
    assert res.reward == pytest.approx(sum(parts.values()), rel=1e-15)
    # 50 kW (the car's DC limit) for 6.41 ticks: it leaves after the 7th charging tick.
    assert env.state()["evs"] == []


def test_slow_charger_is_limited_by_the_car_and_the_tick() -> None:
    env = one_car(soc=0.75, battery_kwh=30.2)
    env.step("ROUTE E1 S5 SLOW")
    soc = 0.75 - 2.0 / 7.0 / 30.2
    kwh = (
        (0.8 - soc) * 30.2 / 0.92
    )  # 1.95 kWh at 7 kW (the charger, under the car's 7.2)
    assert env.kpi_summary()["energy_kwh"] == pytest.approx(kwh, rel=1e-12)


def test_defer_costs_exactly_its_minutes_and_comes_back() -> None:
    env = one_car()
    res = env.step("DEFER E1 15")
    assert res.info["valid"] and not res.done
    assert res.info["reward_parts"]["wait"] == pytest.approx(-W.wait * 15)
    assert (
        res.info["reward_parts"]["defer_abuse"] == 0.0
    )  # first defer is free of abuse cost
    obs = env.observation()
    assert obs.tick == 3 and obs.request.id == 1 and obs.request.waited_min == 15.0
    res = env.step("DEFER E1 5")
    assert res.info["reward_parts"]["defer_abuse"] == pytest.approx(-W.defer_abuse * 1)


def test_invalid_action_strands_the_ev_with_exact_penalty() -> None:
    env = one_car()
    res = env.step("ROUTE E1 S5 TURBO")
    assert not res.info["valid"] and "malformed ROUTE" in res.info["reason"]
    parts = res.info["reward_parts"]
    assert parts["invalid"] == -W.invalid and parts["stranded"] == -W.stranded
    assert res.reward == -W.invalid - W.stranded
    assert (
        env.kpi_summary()["stranded"] == 1
        and env.kpi_summary()["invalid_action_pct"] == 100.0
    )


def _protection_probe(room_kw: float) -> EVGridEnv:
    """Two cars on ULTRA at S5 and S9 (both on F3), 50 kW each, in tick 1 alone.

    In tick 1 only, F3's usable capacity is its background + ``room_kw``. A third car
    asks at tick 2, so the clock stops there and tick 1 can be read.
    """
    bg = float(one_car().world.background[1, 2])  # [kW] South-East feeder (F3), tick 1
    factor = (bg + room_kw) / CITY.feeders[2].capacity_kw
    sc = dataclasses.replace(
        get_scenario("quiet_night"),
        feeder_events=(FeederEvent(3, 1, 2, factor, "fault"),),
    )
    recs = [dict(tick=0, klass="car", node="Koramangala", soc=0.2, battery_kwh=40.5),
            dict(tick=0, klass="car", node="HSR Layout", soc=0.2, battery_kwh=40.5),
            dict(tick=2, klass="car", node="Yelahanka", soc=0.2, battery_kwh=40.5)]  # fmt: skip
    env = EVGridEnv()
    env.reset(seed=0, scenario=sc, arrivals=arrivals_from_records(recs, CITY.nodes),
              background_noise=NO_NOISE)  # fmt: skip
    env.step("ROUTE E1 S5 ULTRA")
    env.last_parts = env.step("ROUTE E2 S9 ULTRA").info["reward_parts"]
    assert env.world.tick == 2 and env.observation().request.id == 3
    return env


def test_feeder_protection_sheds_ev_load_above_capacity_pro_rata() -> None:
    # 100 kW asked where 60 kW is left: both sessions scaled by 0.6 (30 kW each), the
    # feeder carries exactly its capacity, 40 kW is shed and stays owed.
    env = _protection_probe(60.0)
    obs, parts, k = env.observation(), env.last_parts, env.kpi_summary()
    assert obs.station_kw[4] == pytest.approx(30.0, rel=1e-9)  # S5
    assert obs.station_kw[8] == pytest.approx(30.0, rel=1e-9)  # S9
    assert obs.feeder_shed_kw.tolist() == pytest.approx([0, 0, 40.0, 0, 0, 0], rel=1e-9)
    assert obs.feeder_util[2] == pytest.approx(1.0, rel=1e-12)
    assert "F3 100(" in render_text(obs) and "SHED 40kW" in render_text(obs)
    soc = 0.2 - 2.0 / 7.0 / 40.5  # on arrival, after 2 km
    assert env.world.soc[0] == pytest.approx(soc + 2.5 * 0.92 / 40.5, rel=1e-9)
    # The peak part is charged on the shed kWh, stress on all 100 kW asked.
    assert parts["peak"] == pytest.approx(-W.peak * 40.0 * 5 / 60, rel=1e-9)
    assert parts["grid_stress"] == pytest.approx(-W.grid_stress * 100.0 * 5 / 60)
    assert k["shed_kwh"] == pytest.approx(40.0 * 5 / 60, rel=1e-9)
    assert k["overload_feeder_min"] == 5.0 and k["stress_events"] == 1
    assert k["peak_feeder_util_pct"] == pytest.approx(100.0, rel=1e-12)
    env.step("")  # strands E3; the clock runs to the end
    need = (0.8 - soc) * 40.5 / 0.92  # [kWh] the shed energy was delivered later
    assert env.world.energy_kwh[:2].tolist() == pytest.approx([need, need], rel=1e-12)
    assert env.kpi_summary()["shed_kwh"] == pytest.approx(40.0 * 5 / 60, rel=1e-9)


def test_ev_load_within_capacity_minus_background_is_never_shed() -> None:
    # 100 kW asked where exactly 100 kW is left (to float rounding): nothing shed.
    env = _protection_probe(100.0)
    obs, parts, k = env.observation(), env.last_parts, env.kpi_summary()
    assert obs.station_kw[[4, 8]].tolist() == pytest.approx([50.0, 50.0], rel=1e-12)
    assert obs.feeder_util[2] == pytest.approx(1.0, rel=1e-12)
    assert obs.feeder_shed_kw.tolist() == [0.0] * 6 and "SHED" not in render_text(obs)
    assert parts["peak"] == 0.0 and k["shed_kwh"] == 0.0
    assert k["overload_feeder_min"] == 0.0


def test_feeder_protection_rule_per_feeder() -> None:
    factor, shed = feeder_protection(
        np.array([100.0, 50.0, 0.0, 40.0, 80.0]),  # [kW] EV load asked
        np.array([60.0, 80.0, -10.0, -5.0, 80.0]),  # [kW] capacity - background
    )
    # Over: scaled to the room left; under or at: untouched; the background alone
    # over capacity: all EV load shed (none asked: nothing to shed).
    assert factor.tolist() == [0.6, 1.0, 1.0, 0.0, 1.0]
    assert shed.tolist() == [40.0, 0.0, 0.0, 40.0, 0.0]


def test_load_shift_caps_the_station_power() -> None:
    env = one_car()
    res = env.step(
        "LOAD_SHIFT S5 25 60"
    )  # 25 % of 400 kW = 100 kW: above 50 kW, no effect
    assert res.info["valid"] and res.info["reward_parts"]["load_shift"] == -W.load_shift
    assert (
        env.step("LOAD_SHIFT S5 25 60").info["reason"] == "S5 is already load-shifted"
    )


def test_critical_ev_late_and_stranded_by_patience() -> None:
    # A critical cab 2 km from S5 must plug in within 3 minutes: impossible (1 tick of travel).
    env = one_car(klass="cab", battery_kwh=26.0, deadline_min=3, patience_min=40)
    res = env.step("ROUTE E1 S5 FAST")
    assert res.info["reward_parts"]["urgency"] == -W.urgency
    assert env.kpi_summary()["critical_on_time_pct"] == 0.0
    env = one_car(klass="cab", battery_kwh=26.0, deadline_min=10, patience_min=40)
    env.step("ROUTE E1 S5 FAST")
    assert env.kpi_summary()["critical_on_time_pct"] == 100.0


def test_queue_wait_and_patience_on_a_full_station() -> None:
    # Three cars want S5's two ULTRA plugs at once; the third queues until a plug frees.
    recs = [dict(tick=0, klass="car", node="Koramangala", soc=0.2, battery_kwh=40.5, patience_min=20)
            for _ in range(3)]  # fmt: skip
    env = EVGridEnv()
    env.reset(seed=0, scenario="quiet_night", arrivals=arrivals_from_records(recs, CITY.nodes),
              background_noise=NO_NOISE)  # fmt: skip
    for i in (1, 2, 3):
        env.step(f"ROUTE E{i} S5 ULTRA")
    k = env.kpi_summary()
    # The third car reaches S5 at 23:05, waits 4 ticks (20 min of patience), gives up.
    assert k["evs_plugged_in"] == 2 and k["stranded"] == 1


def test_dc_power_tapers_above_80_percent() -> None:
    """Energy is exact whatever the taper; tapering makes the last 15 % slower."""
    from evgrid_core import SimConfig

    def session(target: float, config: SimConfig) -> tuple[float, float]:
        env = EVGridEnv(config)
        record = dict(
            tick=0,
            klass="car",
            node="Koramangala",
            soc=0.30,
            target=target,
            battery_kwh=50.3,
        )
        env.reset(seed=0, scenario="quiet_night", arrivals=arrivals_from_records([record], CITY.nodes),
                  background_noise=NO_NOISE)  # fmt: skip
        env.step("ROUTE E1 S5 ULTRA")
        w = env.world
        return env.kpi_summary()["energy_kwh"], float(
            w.unplug_minute[0] - w.plug_minute[0]
        )

    soc = 0.30 - 2.0 / 7.0 / 50.3
    tapered, flat = SimConfig(), SimConfig(taper_start_dc=1.0)
    for target in (0.80, 0.95):
        for config in (tapered, flat):
            kwh, _ = session(target, config)
            assert kwh == pytest.approx((target - soc) * 50.3 / 0.92, rel=1e-12)
    # Up to 80 % the taper never acts: same duration with or without it.
    assert session(0.80, tapered)[1] == session(0.80, flat)[1]
    # 29.4 -> 95 %: 35.8 kWh at 50 kW is 43 min flat (9 ticks); tapered it takes longer.
    assert session(0.95, flat)[1] == 45.0
    assert session(0.95, tapered)[1] > 45.0


def test_feeder_utilisation_history_has_one_row_per_tick() -> None:
    env = one_car()
    env.step("ROUTE E1 S5 ULTRA")
    history = env.kpis.feeder_util_history
    assert len(history) == env.scenario.n_ticks and len(history[0]) == len(CITY.feeders)
    assert max(max(row) for row in history) == pytest.approx(
        env.kpi_summary()["peak_feeder_util_pct"] / 100
    )


def test_energy_still_owed_at_the_end_costs_exactly_unmet() -> None:
    """A car that cannot finish before the episode ends pays for what it still needs."""
    env = one_car(tick=40)  # 23:00 + 200 min; it charges in ticks 41..47 (7 ticks)
    res = env.step("ROUTE E1 S5 SLOW")
    soc = 0.2 - 2.0 / 7.0 / 40.5
    delivered = 7 * 7.0 * 5 / 60  # 7 kW (the charger) for 7 ticks
    owed = (0.8 - soc) * 40.5 / 0.92 - delivered
    k = env.kpi_summary()
    assert k["energy_kwh"] == pytest.approx(delivered, rel=1e-12)
    assert k["unmet_kwh"] == pytest.approx(owed, rel=1e-9)
    assert res.info["reward_parts"]["unmet"] == pytest.approx(-W.unmet * owed, rel=1e-9)
    # The same car on ULTRA finishes in time: nothing owed.
    env = one_car(tick=30)
    assert env.step("ROUTE E1 S5 ULTRA").info["reward_parts"]["unmet"] == 0.0
    assert env.kpi_summary()["unmet_kwh"] == 0.0
