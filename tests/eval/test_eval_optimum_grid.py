"""The optimum under lindistflow: the network's voltage and DT rows price a plan as
the env scores it, and the feeder sum's model is left as it was.

Tiny episode on the North feeder's tail at the evening peak: four cabs at the
airport, only S18 Airport (its DT swapped for a 63 kVA stand-in for the first six
ticks) and S17 Yelahanka open, 12 ticks from 18:00. The airport's buses sit just
above their floors with the background alone (the OLTC holds the busbar:
docs/grid.md), so charging there can pay ``undervoltage``; two fast sessions on the
stand-in pay ``transformer_overload``.
"""

from __future__ import annotations

import numpy as np
import pytest

from evaluation.milp import (
    build_model,
    check_grid,
    full_point,
    grid_limits,
    price_selection,
    selection_feasible,
)
from evaluation.optimum import model_parts, plan_actions, replay, solve_episode
from evaluation.plan_options import build_options
from evgrid_core import EVGridEnv, SimConfig, load_city
from evgrid_core.fleet import arrivals_from_records
from evgrid_core.scenarios import Scenario, StationClosure, TransformerEvent
from evgrid_core.trace import episode_trace

OPEN = (17, 18)
N_TICKS = 12
TAIL = Scenario(
    "tiny_airport_tail",
    "Tiny probe",
    "Four cabs at the airport, two stations on the North feeder's tail.",
    18 * 60,
    n_ticks=N_TICKS,
    closures=tuple(
        StationClosure(s, 0, N_TICKS) for s in range(1, 26) if s not in OPEN
    ),
    transformer_events=(TransformerEvent(18, 0, 6, 63.0),),
)
NODE = "Kempegowda Intl Airport (Devanahalli)"
RECORDS = [
    {"tick": t, "klass": "cab", "node": NODE, "soc": 0.3, "patience_min": 30}
    for t in (0, 0, 1, 2)
]
LIN = SimConfig(grid="lindistflow")


def _kwargs() -> dict:
    arrivals = arrivals_from_records(RECORDS, load_city().nodes)
    return {"arrivals": arrivals, "background_noise": np.ones(6)}


def _env(config: SimConfig = LIN) -> EVGridEnv:
    env = EVGridEnv(config)
    env.reset(seed=0, scenario=TAIL, **_kwargs())
    return env


def test_the_network_rows_price_plans_as_the_env_scores_them() -> None:
    env = _env()
    trace = episode_trace(env)
    opts = build_options(trace, LIN)
    model = build_model(trace, LIN, opts, grid_limits(env))
    assert model.n_rows["undervoltage"] > 0 and model.n_rows["transformer_overload"] > 0
    by_ev = [np.flatnonzero(np.array(opts.ev) == i) for i in range(trace.n_evs)]
    rng = np.random.default_rng(3)
    paid = dict.fromkeys(("undervoltage", "transformer_overload"), 0)
    tried = 0
    for _ in range(150):
        chosen = [int(rng.choice(ix)) for ix in by_ev]
        if not selection_feasible(model, chosen):
            continue  # two sessions on one plug, or over the feeder's capacity
        x = np.zeros(len(opts))
        x[chosen] = 1
        replayed = _env()
        ret, refused = replay(replayed, plan_actions(opts, x))
        assert refused == 0 and replayed.kpis.shed_kwh == 0
        assert price_selection(model, chosen) == pytest.approx(ret, abs=1e-9)
        parts = model_parts(opts, model, full_point(model, chosen), LIN)
        for key in paid:
            got = replayed.kpis.parts_total[key]
            assert parts[key] == pytest.approx(got, abs=1e-9), key
            paid[key] += got < 0
        tried += 1
    assert tried >= 30 and all(n > 0 for n in paid.values()), (tried, paid)


def test_the_optimum_under_lindistflow_replays_its_objective() -> None:
    res = solve_episode(TAIL, 0, config=LIN, time_limit_s=30, reset_kwargs=_kwargs())
    assert res.proven_optimal and res.invalid_steps == 0
    assert res.objective_return == pytest.approx(res.replay_return, abs=1e-9)
    # The feeder sum's optimum of the same episode ignores the network: under
    # lindistflow its plan takes the tail below its floor and overloads the
    # stand-in DT, which the network-aware plan avoids, and scores less.
    plain = solve_episode(TAIL, 0, time_limit_s=30, reset_kwargs=_kwargs())
    replayed = _env()
    ret, _ = replay(replayed, {k: list(v) for k, v in plain.plan.items()})
    paid = replayed.kpis.parts_total
    assert paid["undervoltage"] < 0 and paid["transformer_overload"] < 0
    assert res.replay_parts["undervoltage"] == 0.0
    assert res.replay_parts["transformer_overload"] == 0.0
    assert ret < res.replay_return


def test_the_feeder_sums_model_has_no_network_rows() -> None:
    env = _env(SimConfig())
    trace = episode_trace(env)
    opts = build_options(trace, SimConfig())
    assert grid_limits(env) is None
    model = build_model(trace, SimConfig(), opts, grid_limits(env))
    assert set(model.n_rows) <= {
        "assign", "plugs", "station_limit", "feeder_soft", "feeder_capacity"
    }  # fmt: skip
    assert model.A.shape[1] == len(opts) + 6 * N_TICKS  # options + soft-limit slacks


def test_the_optimum_refuses_a_grid_model_that_is_not_linear() -> None:
    with pytest.raises(ValueError, match="grid model 'ac' is not"):
        check_grid(SimConfig(grid="ac"))
