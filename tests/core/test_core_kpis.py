"""KPIs: waits count every EV that asked, so turning EVs away cannot shorten them."""

import numpy as np
import pytest

from evgrid_core import KPI_UNITS, EVGridEnv, load_city
from evgrid_core.fleet import arrivals_from_records
from evgrid_core.policies import make_policy
from evgrid_core.rollout import run_episode

CITY = load_city()
NO_NOISE = [1.0] * len(CITY.feeders)


def one_car(**overrides) -> EVGridEnv:
    record = dict(tick=0, klass="car", node="Koramangala", soc=0.5, battery_kwh=40.5)
    env = EVGridEnv()
    env.reset(seed=0, scenario="quiet_night", arrivals=arrivals_from_records([record | overrides], CITY.nodes),
              background_noise=NO_NOISE)  # fmt: skip
    return env


def test_an_ev_turned_away_counts_its_whole_patience_as_wait() -> None:
    env = one_car(patience_min=40)
    env.step("please charge")  # invalid: stranded at its first request
    k = env.kpi_summary()
    assert k["mean_wait_min"] == 40.0 and k["p95_wait_min"] == 40.0
    assert k["mean_wait_plugged_in_min"] == 0.0 and k["evs_plugged_in"] == 0


def test_an_ev_turned_away_near_the_end_still_counts_its_whole_patience() -> None:
    env = one_car(patience_min=90, tick=46)  # asks 10 minutes before the end
    env.step("please charge")
    assert env.done and env.kpi_summary()["mean_wait_min"] == 90.0


def test_an_ev_that_gave_up_counts_until_its_patience_ran_out() -> None:
    env = one_car(patience_min=29)
    env.step("ROUTE E1 S1 FAST")  # Majestic, 6 ticks: gives up at the end of tick 5
    k = env.kpi_summary()
    assert k["gave_up"] == 1 and k["mean_wait_min"] == 29.0


def test_served_and_every_ev_waits_side_by_side() -> None:
    recs = [dict(tick=0, klass="car", node="Koramangala", soc=0.5, battery_kwh=40.5,
                 patience_min=p) for p in (60, 50)]  # fmt: skip
    env = EVGridEnv()
    env.reset(seed=0, scenario="quiet_night", arrivals=arrivals_from_records(recs, CITY.nodes),
              background_noise=NO_NOISE)  # fmt: skip
    env.step("ROUTE E1 S1 FAST")  # plugs in at minute 30
    env.step("please charge")  # E2 turned away: 50 minutes
    k = env.kpi_summary()
    assert k["mean_wait_plugged_in_min"] == 30.0 and k["mean_wait_min"] == 40.0
    assert k["p95_wait_min"] == pytest.approx(np.percentile([30.0, 50.0], 95))


def test_an_ev_still_waiting_counts_until_now() -> None:
    env = one_car(patience_min=1000, tick=40)  # asks 200 min in; 240-min episode
    env.step("ROUTE E1 S1 SLOW")  # arrives at tick 46; the clock ends at tick 48
    assert env.done
    assert env.kpi_summary()["mean_wait_min"] == 30.0  # plugged in at minute 230
    env = one_car(patience_min=1000, tick=44)
    env.step("ROUTE E1 S1 SLOW")  # would arrive at tick 50: still driving at the end
    assert env.kpi_summary()["mean_wait_min"] == 240.0 - 220.0


@pytest.mark.parametrize("scenario", ["evening_peak", "festival_surge"])
@pytest.mark.parametrize("policy", ["always_invalid", "always_defer"])
def test_turning_evs_away_never_looks_better_on_wait_than_greedy(scenario, policy):
    def wait(name: str, key: str) -> float:
        p = make_policy(name)
        return float(np.mean([run_episode(p, scenario, s).kpis[key] for s in range(3)]))

    assert wait(policy, "stranded") > wait("greedy_eta", "stranded")
    for key in ("mean_wait_min", "p95_wait_min"):
        assert wait(policy, key) > wait("greedy_eta", key), key


def test_kpi_keys_have_units_and_the_summary_has_exactly_them() -> None:
    env = one_car()
    assert list(env.kpi_summary()) == list(KPI_UNITS)
    assert (
        KPI_UNITS["gave_up"] == "EVs" and KPI_UNITS["mean_wait_plugged_in_min"] == "min"
    )
