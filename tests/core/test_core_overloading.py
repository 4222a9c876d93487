"""``Candidates.overloading``: the ROUTEs that would push a feeder over its limit.

One rule, in the core, under every grid model: a ROUTE overloads when its feeder's
30-minute forecast (the grid model's own) plus the EV's kW from that kind, plus what
the EVs already driving to the feeder will draw when they arrive within those 30
minutes, passes the feeder's capacity. Checked against the observation's own numbers on every decision
of seeded episodes under both grid models, and against what the world then does: a
ROUTE the rule calls overloading is followed by EV load shed on its feeder far more
often than one it does not.
"""

import numpy as np
import pytest

from evgrid_core import EVGridEnv, SimConfig
from evgrid_core.actions import Route
from evgrid_core.candidates import candidates
from evgrid_core.estimates import plug_kw_by_kind
from evgrid_core.policies import make_policy


def decisions(scenario: str, grid: str, seed: int, limit: int = 400):
    """(observation, candidates) of each decision of a ``greedy_eta`` episode."""
    env = EVGridEnv(SimConfig(grid=grid))
    obs = env.reset(seed=seed, scenario=scenario)
    policy = make_policy("greedy_eta")
    policy.reset(seed)
    for _ in range(limit):
        if env.done:
            return
        yield env, obs, candidates(obs)
        env.step(policy.act(obs))
        obs = env.observation()


@pytest.mark.parametrize("grid", ["feeder_sum", "lindistflow"])
@pytest.mark.parametrize("scenario", ["evening_peak", "feeder_fault"])
def test_overloading_is_the_forecast_plus_the_evs_and_the_inbound_kw_over_capacity(
    grid: str, scenario: str
) -> None:
    seen = committed = 0
    for _, obs, c in decisions(scenario, grid, seed=7):
        got = c.overloading()
        assert got.dtype == bool and got.shape == (len(c),)
        kw = plug_kw_by_kind(obs.request)
        want = np.zeros(len(c), dtype=bool)
        for i, a in enumerate(c.actions):
            if isinstance(a, Route):
                f = obs.feeder_of[a.station - 1]
                inbound = sum(
                    obs.inbound_kw[s]
                    for s in range(len(obs.feeder_of))
                    if obs.feeder_of[s] == f
                )
                load = (
                    obs.feeder_forecast[f]
                    + (kw[int(a.kind)] + inbound) / obs.feeder_capacity_kw[f]
                )
                want[i] = load > 1.0
                committed += inbound > 0
        np.testing.assert_array_equal(got, want)
        seen += int(got.any())
    assert committed > 0  # some candidates' feeders had EVs driving to them
    if scenario == "feeder_fault":  # the fault's feeder is forecast over its limit
        assert seen > 0


def test_inbound_kw_is_the_plug_kw_of_the_evs_arriving_within_the_forecast() -> None:
    """``Observation.inbound_kw`` against the EVs themselves: after each ROUTE, every
    EV driving to a station and due within 30 minutes adds its plug kW there (the
    world's own ``plug_kw`` once it plugs in), and the stations with EVs driving to
    them but none due that soon have none."""
    from evgrid_core.charging import plug_kw
    from evgrid_core.features import FORECAST_TICKS
    from evgrid_core.state import TRAVELING

    later = routed = 0
    for env, obs, _ in decisions("festival_surge", "feeder_sum", seed=11, limit=300):
        w = env.world
        want = np.zeros(len(obs.feeder_of))
        for ev in range(len(w.status)):
            if w.status[ev] != TRAVELING:
                continue
            routed += 1
            if w.due_tick[ev] >= w.tick + FORECAST_TICKS:
                later += 1
                continue
            k = int(w.kind[ev])
            want[w.station[ev]] += plug_kw(k, w.evs.max_ac_kw[ev], w.evs.max_dc_kw[ev])
        np.testing.assert_allclose(obs.inbound_kw, want, rtol=0, atol=1e-12)
        assert not obs.inbound_kw.flags.writeable
        assert np.all((obs.inbound_kw > 0) <= (obs.inbound.sum(axis=1) > 0))
    assert routed > 50 and later > 0  # both sides of the 30 minutes were seen


def test_a_route_called_overloading_is_followed_by_shedding_more_often() -> None:
    """Each ROUTE candidate of the first decisions of seeded ``feeder_fault`` episodes
    is tried in a copy of the env, which then plays ``greedy_eta`` for 30 minutes:
    did the chosen station's feeder shed EV load? The overloading ROUTEs shed far
    more often than the others (measured: see the assertion's message)."""
    policy = make_policy("greedy_eta")
    shed = {True: [], False: []}
    for seed in (3, 4):
        for k, (env, obs, c) in enumerate(
            decisions("feeder_fault", "feeder_sum", seed)
        ):
            if k % 6 or not c.overloading().any():
                continue
            for i, a in enumerate(c.actions):
                if not isinstance(a, Route):
                    continue
                trial = env.clone()
                trial.step(a)
                f = obs.feeder_of[a.station - 1]
                until, hit = trial.tick + 6, False
                policy.reset(seed)
                while not trial.done and trial.tick <= until and not hit:
                    o = trial.observation()
                    hit = bool(o.feeder_shed_kw[f] > 0)
                    trial.step(policy.act(o))
                shed[bool(c.overloading()[i])].append(hit)
    over, rest = np.mean(shed[True]), np.mean(shed[False])
    assert len(shed[True]) >= 10 and len(shed[False]) >= 10, shed
    assert over > rest + 0.2, (
        f"shed after an overloading ROUTE {over:.2f}, others {rest:.2f}"
    )


def test_sparing_is_every_candidate_but_the_overloading_ones_unless_all_overload() -> (
    None
):
    from evgrid_core.candidates import FEATURES, Candidates

    def cands(forecast: list[float], defer: list[bool]) -> Candidates:
        x = np.zeros((len(forecast), len(FEATURES)))
        x[:, FEATURES.index("forecast_with_ev")] = forecast
        x[:, FEATURES.index("is_defer")] = defer
        return Candidates(x)

    some = cands([1.2, 0.9, 1.1, 0.0], [False, False, False, True])
    assert some.sparing().tolist() == [False, True, False, True]
    routes_only = cands([1.2, 1.1], [False, False])  # every candidate overloads
    assert routes_only.sparing().tolist() == [True, True]
    assert cands([], []).sparing().tolist() == []


@pytest.mark.parametrize(
    ("scenario", "seed"), [("festival_surge", 0), ("feeder_fault", 3)]
)
def test_distilled_never_routes_onto_an_overloading_feeder_while_it_can_spare_it(
    scenario: str, seed: int
) -> None:
    from evgrid_core.distilled import Distilled

    env = EVGridEnv()
    obs = env.reset(seed=seed, scenario=scenario)
    sparing, greedy = Distilled(), Distilled(spare=False)
    differ = 0
    while not env.done:
        c = candidates(obs)
        action = sparing.act(obs)
        if len(c):
            i = c.actions.index(action)
            assert c.sparing()[i]
            other = greedy.act(obs)
            differ += other != action
            if other != action:  # the trees' own pick overloaded a feeder
                assert c.overloading()[c.actions.index(other)]
        env.step(action)
        obs = env.observation()
    assert differ > 0  # the rule bit on this episode
