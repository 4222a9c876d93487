"""Patience runs from an EV's first request until it plugs in, whatever it is doing.

Probe episodes with hand-made EVs: an EV not plugged in by the end of the tick in
which request minute + patience falls gives up there, pending, deferred, driving or
queued, at the stranded cost; an EV that reaches its station in tick a plugs in
during tick a (a plug free) before that check, so it is served iff
request + patience >= a * 5 min.
"""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from evgrid_core import EVGridEnv, load_city
from evgrid_core.fleet import arrivals_from_records
from evgrid_core.policies import make_policy
from evgrid_core.reward import REWARD_KEYS
from evgrid_core.world import (
    CHARGING,
    GAVE_UP,
    QUEUED,
    SERVED,
    STRANDED,
    TRAVELING,
    give_up_tick,
    give_up_ticks,
    new_parts,
)

CITY = load_city()
NO_NOISE = [1.0] * len(CITY.feeders)
W = EVGridEnv().config.weights
# 23:00, quiet night. From Koramangala: S5 Koramangala 4.8 min (1 tick), S1 Majestic
# 25.68 min (6 ticks: arrives at tick 6, minute 30).
CAR = dict(klass="car", node="Koramangala", soc=0.5, battery_kwh=40.5)
# A bystander whose requests stop the clock at chosen ticks (patience beyond the episode).
BYSTANDER = dict(klass="3w", node="Indiranagar", soc=0.3, patience_min=1000)


def episode(*records: dict) -> EVGridEnv:
    env = EVGridEnv()
    env.reset(seed=0, scenario="quiet_night", arrivals=arrivals_from_records(list(records), CITY.nodes),
              background_noise=NO_NOISE)  # fmt: skip
    return env


def only(parts: dict[str, float], **expected: float) -> None:
    """Every reward part is 0 except ``expected`` (exact up to rounding)."""
    for key, value in parts.items():
        assert value == pytest.approx(expected.get(key, 0.0), abs=1e-12), key


def status_of(env: EVGridEnv, ev_id: int) -> str:
    return env.world.status_name(ev_id - 1)


def nothing_refers_to(env: EVGridEnv, ev_id: int) -> None:
    w, ev = env.world, ev_id - 1
    assert w.status[ev] in (GAVE_UP, STRANDED)  # nothing waits for it to come back
    assert ev not in w.pending and ev not in w.plugged
    # The stations' counts are exactly their EVs' statuses: it left every queue.
    for code, counts in (
        (QUEUED, w.queue_len),
        (TRAVELING, w.inbound),
        (CHARGING, w.busy),
    ):
        want = np.zeros_like(counts)
        for e in np.flatnonzero(w.status == code):
            want[w.station[e], w.kind[e]] += 1
        assert (want == counts).all(), code
    assert ev_id not in [e["id"] for e in env.state()["evs"]]


def test_a_driving_ev_gives_up_at_the_end_of_the_tick_its_patience_runs_out() -> None:
    # E1 asks at minute 0 with 29 minutes of patience and is sent to Majestic, which it
    # reaches at minute 30: at the end of tick 5 (minute 30 > 29) it gives up on the road.
    env = episode(dict(tick=0, patience_min=29, **CAR), dict(tick=5, **BYSTANDER),
                  dict(tick=6, **BYSTANDER))  # fmt: skip
    res = env.step("ROUTE E1 S1 FAST")
    only(res.info["reward_parts"], wait=-W.wait * 30)  # the drive, charged at departure
    assert res.info["gave_up"] == []
    assert env.observation().tick == 5 and status_of(env, 1) == "traveling"
    res = env.step("DEFER E2 60")  # closes tick 5: E1 gives up at its end
    only(res.info["reward_parts"], wait=-W.wait * 60, stranded=-W.stranded)
    assert res.info["gave_up"] == [1]  # the step says who left, for viewers and logs
    assert env.observation().tick == 6 and status_of(env, 1) == "gave_up"
    assert env.world.status[0] == GAVE_UP
    nothing_refers_to(env, 1)
    k = env.kpi_summary()
    assert k["gave_up"] == 1 and k["stranded"] == 1 and k["evs_plugged_in"] == 0
    while not env.done:  # Majestic never sees it
        env.step(f"DEFER E{env.observation().request.id} 5")
    assert env.kpi_summary()["energy_kwh"] == 0.0


def test_an_ev_that_arrives_as_its_patience_ends_is_served() -> None:
    # The same drive with 30 minutes of patience: it reaches Majestic in tick 6 and
    # plugs in during tick 6's physics, before the end-of-tick check.
    env = episode(dict(tick=0, patience_min=30, **CAR))
    res = env.step("ROUTE E1 S1 FAST")
    assert res.info["reward_parts"]["stranded"] == 0.0
    w = env.world
    assert w.plug_minute[0] == 30.0 and w.status[0] == SERVED
    k = env.kpi_summary()
    assert k["gave_up"] == 0 and k["evs_plugged_in"] == 1 and k["mean_wait_min"] == 30


@pytest.mark.parametrize("patience", [29, 30])
def test_served_iff_request_plus_patience_reaches_the_arrival_tick(patience) -> None:
    """The rule the hindsight optimum models: plan arrives at tick a (here 6)."""
    env = episode(dict(tick=0, patience_min=patience, **CAR))
    env.step("ROUTE E1 S1 FAST")
    served = 0 + patience >= 6 * 5
    assert (env.world.status[0] == SERVED) == served
    assert env.kpi_summary()["gave_up"] == (not served)


def test_a_critical_ev_giving_up_before_its_deadline_also_pays_urgency() -> None:
    env = episode(dict(tick=0, klass="cab", node="Koramangala", soc=0.5, battery_kwh=26.0,
                       patience_min=29, deadline_min=45))  # fmt: skip
    res = env.step("ROUTE E1 S1 FAST")  # arrives at minute 30: gives up, not yet late
    only(res.info["reward_parts"], wait=-W.wait * 30, stranded=-W.stranded,
         urgency=-W.urgency)  # fmt: skip
    assert env.kpi_summary()["critical_on_time_pct"] == 0.0


def test_a_deferred_ev_back_with_under_a_tick_of_patience_gives_up_then() -> None:
    # E1 (22 min of patience) is deferred 20 minutes: it asks again at tick 4 with
    # 2 minutes left. No drive is shorter than a tick, so wherever it is sent it has
    # not plugged in by the end of tick 4 (minute 25 > 22), and gives up there.
    env = episode(dict(tick=0, patience_min=22, **CAR), dict(tick=5, **BYSTANDER))
    res = env.step("DEFER E1 20")
    only(res.info["reward_parts"], wait=-W.wait * 20)
    obs = env.observation()
    assert obs.tick == 4 and obs.request.id == 1
    assert obs.request.patience_left_min == 2.0 and obs.defer_options == ()
    res = env.step("ROUTE E1 S5 ULTRA")  # one tick away: plugs in at tick 5, too late
    only(res.info["reward_parts"], wait=-W.wait * 5, stranded=-W.stranded,
         defer_abuse=0.0)  # fmt: skip
    assert env.observation().tick == 5 and status_of(env, 1) == "gave_up"
    nothing_refers_to(env, 1)


def test_a_deferred_ev_gives_up_while_deferred_when_its_patience_ends_first() -> None:
    # The validator never lets a DEFER outlast patience; the world's rule holds
    # anyway: a deferred EV past its patience leaves before it would ask again.
    env = episode(dict(tick=0, patience_min=12, **CAR), dict(tick=3, **BYSTANDER))
    w = env.world
    parts = new_parts()
    w.defer(0, 30, parts)  # past patience: only the world's own API allows it
    w.advance(parts, env.kpis)
    assert env.observation().tick == 3 and w.status[0] == GAVE_UP  # end of tick 2
    assert dict(zip(REWARD_KEYS, parts, strict=True))["stranded"] == -W.stranded
    nothing_refers_to(env, 1)


def test_a_queued_ev_gives_up_as_before_and_is_counted_as_giving_up() -> None:
    # Three cars want S5's two ULTRA plugs; the third queues from tick 1. Its 20
    # minutes of patience end in tick 4 (end of tick 3: 20 < 20 is false; end of
    # tick 4: 20 < 25): it waits in the queue for ticks 1..4 and leaves at the end.
    recs = [dict(tick=0, patience_min=20, **(CAR | dict(soc=0.2))) for _ in range(3)]
    env = episode(*recs, dict(tick=5, **BYSTANDER))
    for i in (1, 2):
        env.step(f"ROUTE E{i} S5 ULTRA")
    res = env.step("ROUTE E3 S5 ULTRA")  # closes tick 0; the clock runs to tick 5
    parts = res.info["reward_parts"]
    assert parts["wait"] == pytest.approx(-W.wait * (5 + 4 * 5))  # drive + queue
    assert parts["stranded"] == -W.stranded and parts["urgency"] == 0.0
    assert env.observation().tick == 5 and status_of(env, 3) == "gave_up"
    nothing_refers_to(env, 3)
    k = env.kpi_summary()
    assert k["evs_plugged_in"] == 2 and k["gave_up"] == 1 and k["stranded"] == 1


@pytest.mark.parametrize("policy", ["random_valid", "always_defer", "greedy_eta"])
@pytest.mark.parametrize("scenario", ["evening_peak", "festival_surge"])
def test_no_ev_plugs_in_after_its_patience_ran_out(policy: str, scenario: str) -> None:
    env = EVGridEnv()
    obs = env.reset(seed=2, scenario=scenario)
    p = make_policy(policy)
    p.reset(2)
    while not env.done:
        env.step(p.act(obs))
        obs = env.observation()
    w = env.world
    plugged = w.plug_minute == w.plug_minute  # not NaN
    patience_minute = np.array(w.evs.patience_minute)
    assert (w.plug_minute[plugged] <= patience_minute[plugged]).all()
    assert ((w.status == CHARGING) | (w.status == SERVED))[plugged].all()
    # Everyone who is gone unserved, and nothing refers to them.
    gone = w.status == GAVE_UP
    assert int(gone.sum()) == env.kpi_summary()["gave_up"]
    for ev in gone.nonzero()[0].tolist():
        nothing_refers_to(env, ev + 1)


@pytest.mark.parametrize(
    ("patience_minute", "tick"),
    [
        (29, 5),  # end of tick 5 (30) is the first end past 29
        (30, 6),  # end of tick 5 is 30: not past it
        (0, 0),  # no patience: gives up at the end of its request tick
        (4.9, 0),
        (25 - 1e-14, 4),  # rounding never moves the tick
        (math.nextafter(15.0, 0.0), 2),
    ],
)
def test_give_up_tick_table(patience_minute: float, tick: int) -> None:
    assert give_up_tick(patience_minute, 5) == tick


@given(st.floats(0.0, 2000.0), st.sampled_from([1, 5, 15]))
def test_give_up_tick_is_the_end_of_tick_test(patience_minute: float, tm: int) -> None:
    g = give_up_tick(patience_minute, tm)
    assert patience_minute < (g + 1) * tm  # gives up at the end of tick g ...
    assert g == 0 or not patience_minute < g * tm  # ... and not at the end of g - 1
    assert give_up_ticks([patience_minute, math.inf], tm).tolist() == [g, math.inf]


@pytest.mark.parametrize("patience", [20, 60])
def test_a_route_the_candidates_call_late_loses_the_ev(patience) -> None:
    """``Candidates.late``: a ROUTE expected to plug in after the EV gives up. With 20
    minutes of patience Majestic (25.7 min away, nothing queued) is late and the EV
    sent there gives up on the road; with 60 it is not, and the EV is served. The
    DEFERs, which the validator keeps within patience, are never late."""
    from evgrid_core.actions import Route
    from evgrid_core.candidates import candidates

    env = episode(dict(tick=0, patience_min=patience, **CAR))
    c = candidates(env.observation())
    late = c.late()
    plug_in = c.column("travel_min") + c.column("wait_inbound_min")
    route = np.array([isinstance(a, Route) for a in c.actions])
    assert late.dtype == bool and late.shape == (len(c),)
    assert not late[~route].any()
    assert (late[route] == (plug_in[route] > patience)).all()
    majestic = c.lines.index("ROUTE E1 S1 FAST")
    assert late[majestic] == (patience == 20)
    assert not late[c.lines.index("ROUTE E1 S5 FAST")]  # Koramangala, 4.8 min away
    env.step("ROUTE E1 S1 FAST")
    while not env.done:
        env.step(f"DEFER E{env.observation().request.id} 5")
    assert env.kpi_summary()["gave_up"] == (1 if patience == 20 else 0)
