"""The report's engineering tables, per-feeder series and notes, checked by hand."""

from __future__ import annotations

import json

import numpy as np
import pytest

from evaluation.engineering import feeder_figures, grid_figures, owner_figures
from evaluation.notes import forced_answers, invalid_answers
from evaluation.report import write_report
from evaluation.runner import run_episode
from evgrid_core import EVGridEnv, SimConfig


@pytest.fixture(scope="module")
def fault_record() -> dict:
    # greedy_eta sheds load on this seed of the feeder fault (25 feeder-min)
    return run_episode("greedy_eta", "feeder_fault", 900002)


def test_feeder_series_are_what_the_feeders_carried(fault_record):
    """Per feeder and tick: capacity and background are the episode's trace,
    (background + EV) / capacity is the env's own utilisation, and the shed kW
    add up to the env's shed kWh; the overload feeder-minutes match the KPI."""
    r, f = fault_record, fault_record["feeders"]
    cap, bg, ev, shed = (
        np.array(f[k]) for k in ("capacity_kw", "background_kw", "ev_kw", "shed_kw")
    )
    assert cap.shape == (6, 48) and f["names"][0] and f["tick_minutes"] == 5
    env = EVGridEnv()
    env.reset(seed=900002, scenario="feeder_fault")
    from evgrid_core.trace import episode_trace

    trace = episode_trace(env)
    assert np.allclose(cap, trace.capacity_kw.T, atol=0.005)
    assert np.allclose(bg, trace.background_kw.T, atol=0.005)
    assert np.allclose(((bg + ev) / cap).max(axis=0), r["util"], atol=1e-4)
    assert shed.sum() * 5 / 60 == pytest.approx(r["kpis"]["shed_kwh"], abs=0.01)
    assert r["kpis"]["shed_kwh"] > 0  # the case is one that sheds
    figs = feeder_figures(r)
    assert figs["over_min"].sum() == r["kpis"]["overload_feeder_min"] == 25.0
    assert figs["over_mwh"].sum() == pytest.approx(
        r["kpis"]["shed_kwh"] / 1000, abs=1e-5
    )
    # the South-East feeder's fault leaves 60 % of its capacity
    se = f["names"].index(next(n for n in f["names"] if "South" in n and "East" in n))
    assert figs["limit_mw"][se] == pytest.approx(0.6 * max(f["capacity_kw"][se]) / 1000)


def _record(util, kpis, policy="a", seed=0, scenario="evening_peak", **extra):
    base = dict.fromkeys(
        ("mean_wait_min", "p95_wait_min", "critical_on_time_pct", "energy_kwh"), 0.0
    )
    base |= {"unmet_kwh": 0.0, "invalid_action_pct": 0.0, "steps": 100.0}
    return {
        "policy": policy,
        "scenario": scenario,
        "seed": seed,
        "return": -1.0,
        "kpis": base | kpis,
        "parts": {"wait": -1.0},
        "util": util,
        "waits": [],
    } | extra


def test_grid_and_owner_figures_by_hand():
    # 6 ticks of 5 min: above 90 % in 4 of them, at the limit in 2
    r = _record(
        [0.85, 0.91, 0.95, 1.0, 0.99995, 0.89],
        {
            "peak_feeder_util_pct": 100.0,
            "overload_feeder_min": 10.0,
            "shed_kwh": 250.0,
            "evs_requested": 20.0,
            "evs_plugged_in": 15.0,
            "evs_served": 11.0,
            "stranded": 4.0,
            "gave_up": 3.0,
            "energy_kwh": 1500.0,
            "unmet_kwh": 120.0,
        },
    )
    g = grid_figures(r)
    assert g == {
        "peak_util_pct": 100.0,
        "above_soft_min": 20.0,
        "at_limit_min": 10.0,
        "over_feeder_min": 10.0,
        "shed_mwh": 0.25,
    }
    o = owner_figures(r)
    assert (o["still_charging"], o["turned_away"], o["gave_up"]) == (4.0, 1.0, 3.0)
    assert (o["energy_mwh"], o["unmet_mwh"]) == (1.5, 0.12)
    assert feeder_figures(r) is None  # an older record: no per-feeder series


def test_report_puts_feeders_and_owners_before_the_reward(tmp_path, fault_record):
    """Old records (no feeders, no network reward parts) and new ones together:
    the report says which have no per-feeder series and shows MW for the rest."""
    new = json.loads(json.dumps(fault_record))
    old = json.loads(json.dumps(fault_record))
    old.pop("feeders")
    old.pop("grid")
    old["policy"] = "nearest"
    for k in ("undervoltage", "transformer_overload"):
        old["parts"].pop(k, None)
    write_report(
        [new, old],
        tmp_path,
        policies=["greedy_eta", "nearest"],
        scenarios=["feeder_fault"],
        reference="greedy_eta",
        plots=False,
    )
    md = (tmp_path / "report.md").read_text()
    feeders, owners, reward = (
        md.index("### The feeders"),
        md.index("### The EV owners"),
        md.index("### The reward"),
    )
    assert feeders < owners < reward
    assert "Peak load asked [MW]" in md
    assert "No per-feeder series in the records of: nearest" in md
    figs = feeder_figures(new)
    over_table = md[md.index("Minutes over the limit [min]:") :]
    greedy = next(ln for ln in over_table.splitlines() if ln.startswith("| greedy_eta"))
    cells = [c.strip() for c in greedy.strip("|").split("|")][1:]
    assert [float(c.split(" ± ")[0]) for c in cells] == pytest.approx(
        figs["over_min"].tolist()
    )


def test_the_answer_no_policy_can_avoid():
    """evening_peak seed 900003: E71, a 3-wheeler with 9.8 km of range at Kengeri
    (nearest station 10.2 km), has nothing valid once its 3 DEFERs are used."""
    found = forced_answers("evening_peak", 900003, "feeder_sum")
    assert [(e["ev"], e["class"], e["defers"]) for e in found] == [(71, "3w", 3)]
    assert found[0]["range_km"] < found[0]["nearest_km"] == pytest.approx(10.2)
    rec = run_episode("random_valid", "evening_peak", 900003)
    assert invalid_answers(rec) == 1  # even the policy that picks only valid actions
    assert SimConfig().max_defers == 3


def test_eval_report_names_the_code_behind_each_policys_episodes() -> None:
    from evaluation.report import made_by

    records = [
        {"policy": "optimum", "code": "aaa (clean)"},
        {"policy": "greedy_eta", "code": "bbb (clean)"},
        {"policy": "optimum", "code": "bbb (clean)"},
        {"policy": "greedy_eta", "code": "bbb (clean)"},
        {"policy": "oracle"},
    ]
    assert made_by(records, ["greedy_eta", "oracle", "optimum"]) == (
        "Episodes made by code at (policy, episodes): aaa (clean): optimum (1); "
        "bbb (clean): greedy_eta (2), optimum (1); unrecorded: oracle (1)."
    )
