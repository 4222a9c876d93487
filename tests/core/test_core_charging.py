"""One home per rule: charging arithmetic, travel ticks, charger kinds, reward keys."""

import dataclasses

import numpy as np
import pytest

from evgrid_core import CHARGERS, REWARD_KEYS, ChargerKind, RewardWeights, load_city
from evgrid_core.actions import ACTION_SYNTAX
from evgrid_core.chargers import CHARGER_DC, CHARGER_KW, KIND_NAMES, KINDS_BY_INLET
from evgrid_core.charging import (
    need_kwh,
    reached,
    session_energy,
    soc_after,
    tapered_kw,
    tick_energy_kwh,
    unmet_after,
)
from evgrid_core.config import SimConfig
from evgrid_core.scenarios import SCENARIOS
from evgrid_core.tables import scenario_tables, travel_ticks


def test_the_charging_functions_give_the_same_floats_compiled_or_not() -> None:
    # The world's tick calls them compiled (numba), the optimum from Python; with
    # NUMBA_DISABLE_JIT they run as Python everywhere: the numbers must be identical.
    rng = np.random.default_rng(3)
    n = 2000
    soc = rng.uniform(0.0, 1.0, n)
    target = rng.uniform(0.5, 1.0, n)
    battery = rng.uniform(7.0, 80.0, n)
    plug = rng.choice(CHARGER_KW, n)
    start = rng.choice([0.8, 0.95], n)
    plain = {f: getattr(f, "py_func", f) for f in (tapered_kw, need_kwh,
             tick_energy_kwh, reached, soc_after)}  # fmt: skip
    for i in range(n):
        args = (float(plug[i]), soc[i].item(), start[i].item(), 0.1)
        p = tapered_kw(*args)
        nd = need_kwh(soc[i].item(), target[i].item(), battery[i].item(), 0.92)
        e = tick_energy_kwh(p, 5 / 60, nd)
        assert p == plain[tapered_kw](*args)
        assert nd == plain[need_kwh](
            soc[i].item(), target[i].item(), battery[i].item(), 0.92
        )
        assert e == plain[tick_energy_kwh](p, 5 / 60, nd)
        assert reached(e, nd) == plain[reached](e, nd)
        after = soc_after(soc[i].item(), e, battery[i].item(), 0.92)
        assert after == plain[soc_after](soc[i].item(), e, battery[i].item(), 0.92)


def test_power_is_full_below_the_taper_and_falls_to_the_floor_at_full() -> None:
    assert tapered_kw(150.0, 0.5, 0.8, 0.1) == 150.0
    assert tapered_kw(150.0, 0.8, 0.8, 0.1) == 150.0
    assert tapered_kw(150.0, 0.9, 0.8, 0.1) == pytest.approx(150.0 * 0.55)
    assert tapered_kw(150.0, 1.0, 0.8, 0.1) == pytest.approx(15.0)


def test_a_session_profile_and_what_it_still_owes() -> None:
    cfg = SimConfig()
    # 7 kW AC, 40 kWh, 50 % -> 60 %: 4 kWh battery side = 4.348 kWh grid side,
    # 0.583 kWh a tick: 7 full ticks and a last part tick.
    e = session_energy(cfg, soc=0.5, target=0.6, battery_kwh=40.0, plug_kw=7.0,
                       kind=int(ChargerKind.SLOW), max_ticks=100)  # fmt: skip
    assert len(e) == 8 and e[:7] == [7.0 * (5 / 60)] * 7
    assert sum(e) == pytest.approx(4.0 / 0.92)
    owed = unmet_after(cfg, soc=0.5, target=0.6, battery_kwh=40.0, energies=e)
    assert owed[0] == pytest.approx(4.0 / 0.92) and owed[-1] == 0.0
    assert owed[3] == pytest.approx(4.0 / 0.92 - 3 * 7.0 * 5 / 60)
    # A dark tick draws nothing and the session goes on after it.
    dark = np.array([True, False] + [True] * 20)
    e2 = session_energy(cfg, soc=0.5, target=0.6, battery_kwh=40.0, plug_kw=7.0,
                        kind=0, max_ticks=22, is_open=dark)  # fmt: skip
    assert e2[1] == 0.0 and len(e2) == 9


def test_the_travel_ticks_table_is_the_rule_on_every_entry() -> None:
    cfg = SimConfig()
    for name in ("evening_peak", "monsoon", "quiet_night"):
        tables = scenario_tables(SCENARIOS[name], cfg)
        got = tables.travel_ticks
        want = np.vectorize(lambda m: travel_ticks(m, cfg.tick_minutes))(
            tables.travel_min
        )
        np.testing.assert_array_equal(got, want)


def test_every_layer_reads_the_one_charger_table() -> None:
    assert (
        KIND_NAMES == tuple(c.name for c in CHARGERS) == tuple(ChargerKind.__members__)
    )
    assert ACTION_SYNTAX["ROUTE"][2] == ("charger", "choice", KIND_NAMES)
    assert CHARGER_KW.tolist() == [c.kw for c in CHARGERS]
    assert tuple(c.dc for c in CHARGERS) == CHARGER_DC
    assert [c.label for c in CHARGERS] == ["SLOW 7 kW AC", "FAST 30 kW DC",
                                           "ULTRA 150 kW DC"]  # fmt: skip
    # an EV with only an AC inlet (index 1) takes AC kinds, a DC-only one DC kinds
    assert KINDS_BY_INLET[1].tolist() == [not dc for dc in CHARGER_DC]
    assert KINDS_BY_INLET[2].tolist() == list(CHARGER_DC)
    assert all(len(st.plugs) == len(CHARGERS) for st in load_city().stations)


def test_reward_keys_are_the_weights_fields_in_order() -> None:
    names = [f.name for f in dataclasses.fields(RewardWeights)]
    assert list(REWARD_KEYS) == names and len(names) == 13
    assert names[-2:] == ["undervoltage", "transformer_overload"]  # network models
