"""The plug-in contract checks: ours pass them, a broken plug-in fails with its rule named."""

import dataclasses

import numpy as np
import pytest

from evgrid_core import SCENARIOS, check_grid_model, check_policy
from evgrid_core.baselines import BASELINES, GreedyETA
from evgrid_core.checks import GRID_RULES, POLICY_RULES, ContractError
from evgrid_core.grid import FeederSum, GridTick
from evgrid_core.policies import make_policy


# --- Our own plug-ins pass -------------------------------------------------------------
@pytest.mark.parametrize("name", [*(c.name for c in BASELINES), "distilled"])
def test_our_policies_keep_the_contract_on_every_scenario(name: str) -> None:
    checked = check_policy(name)
    assert set(checked) == set(SCENARIOS)
    assert all(n > 0 for n in checked.values())


def test_an_instance_and_a_factory_are_checked_too() -> None:
    assert check_policy(GreedyETA(), scenarios=["heatwave"]) == check_policy(
        GreedyETA, scenarios=["heatwave"]
    )


@pytest.mark.parametrize("name", ["feeder_sum", "lindistflow"])
def test_our_grid_models_keep_the_contract(name: str) -> None:
    checked = check_grid_model(name)
    assert checked == {"evening_peak": 24, "feeder_fault": 24, "festival_surge": 24}


def test_the_adversaries_are_caught_by_the_validity_rule() -> None:
    for name in ("always_invalid", "all_to_one_station", "always_defer"):
        with pytest.raises(ContractError, match=rf"^\[valid\] {name} on ") as e:
            check_policy(name, scenarios=["evening_peak"])
        assert e.value.rule == "valid"
        assert "obs.route_mask" in str(e.value)  # says where the valid answers are


# --- Broken policies ---------------------------------------------------------------------
class NoReset:
    name = "no_reset"

    def act(self, obs):  # noqa: ANN001, ANN201
        return "NO"


class Nameless(GreedyETA):
    name = None


class Raises(GreedyETA):
    name = "raises"

    def act(self, obs):  # noqa: ANN001, ANN201
        if obs.tick > 3:
            raise KeyError("station")
        return super().act(obs)


class AnswersANumber(GreedyETA):
    name = "answers_a_number"

    def act(self, obs):  # noqa: ANN001, ANN201
        return 7


class AnswersANaN(GreedyETA):
    name = "answers_a_nan"

    def act(self, obs):  # noqa: ANN001, ANN201
        from evgrid_core import Defer

        return Defer(obs.request.id, float("nan"))


class ChangesTheObservation(GreedyETA):
    name = "changes_the_observation"

    def act(self, obs):  # noqa: ANN001, ANN201
        object.__setattr__(obs, "load_shifts_left", 0)
        return super().act(obs)


class Unseeded(GreedyETA):
    """Picks at random among the valid ROUTEs with a generator nobody seeded."""

    name = "unseeded"

    def reset(self, seed: int) -> None:
        self.rng = np.random.default_rng()

    def act(self, obs):  # noqa: ANN001, ANN201
        s, k = np.nonzero(obs.route_mask)
        if not len(s):
            return super().act(obs)
        i = self.rng.integers(len(s))
        return f"ROUTE E{obs.request.id} S{s[i] + 1} {['SLOW', 'FAST', 'ULTRA'][k[i]]}"


def every_seventh_far(policy: GreedyETA, obs, n: int):  # noqa: ANN001, ANN201
    """greedy_eta's answer, but the n-th decision routes to the last valid
    target when n is a multiple of 7."""
    s, k = np.nonzero(obs.route_mask)
    if n % 7 or not len(s):
        return GreedyETA.act(policy, obs)
    return f"ROUTE E{obs.request.id} S{s[-1] + 1} {['SLOW', 'FAST', 'ULTRA'][k[-1]]}"


class Leaky(GreedyETA):
    """Counts its decisions across episodes (reset forgets to zero it)."""

    name = "leaky"

    def __init__(self) -> None:
        super().__init__()
        self.decided = 0

    def act(self, obs):  # noqa: ANN001, ANN201
        self.decided += 1
        return every_seventh_far(self, obs, self.decided)


class SharedCounter(GreedyETA):
    """The same leak, in the class: every instance counts together."""

    name = "shared_counter"
    decided = 0

    def act(self, obs):  # noqa: ANN001, ANN201
        SharedCounter.decided += 1
        return every_seventh_far(self, obs, SharedCounter.decided)


@pytest.mark.parametrize(
    ("policy", "rule", "says"),
    [
        (NoReset, "interface", "has no reset"),
        (Nameless, "interface", "name is not a str"),
        (Raises, "answers", "act raised KeyError"),
        (AnswersANumber, "answers", "act returned int"),
        (AnswersANaN, "valid", "answered 'Defer"),
        (ChangesTheObservation, "answers", "changed the observation"),
        (Unseeded, "deterministic", "by two new instances"),
        (Leaky, "no_leak", "after part of episode 0 was played"),
        (SharedCounter, "deterministic", "keep no state in the class"),
    ],
)
def test_a_broken_policy_fails_with_its_rule_named(policy, rule, says) -> None:  # noqa: ANN001
    assert rule in POLICY_RULES
    with pytest.raises(ContractError, match=says) as e:
        check_policy(policy, scenarios=["evening_peak"])
    assert e.value.rule == rule
    assert str(e.value).startswith(f"[{rule}] ")


def test_a_leak_is_found_in_one_instance_too() -> None:
    with pytest.raises(ContractError) as e:
        check_policy(Leaky(), scenarios=["evening_peak"])
    assert e.value.rule == "deterministic"  # played twice in a row: differs at once
    assert "when played twice in a row" in str(e.value)


# --- Broken grid models ---------------------------------------------------------------------
class Wrapped(FeederSum):
    """The feeder sum with one thing done wrong by ``bend``."""

    def carry(self, tick: int, station_kw: np.ndarray) -> GridTick:
        return self.bend(super().carry(tick, station_kw), station_kw)

    def bend(self, g: GridTick, station_kw: np.ndarray):  # noqa: ANN201
        return g


class InMW(Wrapped):
    def bend(self, g, station_kw):  # noqa: ANN001, ANN201
        return dataclasses.replace(g, capacity_kw=[c / 1000 for c in g.capacity_kw])


class UtilisationInPercent(Wrapped):
    def bend(self, g, station_kw):  # noqa: ANN001, ANN201
        return dataclasses.replace(g, utilisation=[u * 100 for u in g.utilisation])


class LosesLoad(Wrapped):
    def bend(self, g, station_kw):  # noqa: ANN001, ANN201
        ev = g.ev_kw * 0.9
        util = [
            (b + e) / c
            for b, e, c in zip(g.background_kw, ev, g.capacity_kw, strict=True)
        ]
        return dataclasses.replace(g, ev_kw=ev, utilisation=util)


class ShedsWithoutFactors(Wrapped):
    def bend(self, g, station_kw):  # noqa: ANN001, ANN201
        return dataclasses.replace(g, station_factor=None)


class PerStation(Wrapped):
    def bend(self, g, station_kw):  # noqa: ANN001, ANN201
        return dataclasses.replace(g, ev_kw=np.asarray(station_kw))


class NotATick(Wrapped):
    def bend(self, g, station_kw):  # noqa: ANN001, ANN201
        return dataclasses.asdict(g)


class CapsItsInput(Wrapped):
    def carry(self, tick: int, station_kw: np.ndarray) -> GridTick:
        np.minimum(station_kw, 500.0, out=station_kw)
        return super().carry(tick, station_kw)


class Noisy(FeederSum):
    """Forecasts with a factor drawn, unseeded, when it is built."""

    def __init__(self, tables, background_kw) -> None:  # noqa: ANN001
        super().__init__(tables, background_kw)
        self.jitter = 1.0 + 1e-9 * np.random.default_rng().random()

    def forecast(self, tick, asked_kw, ticks):  # noqa: ANN001, ANN201
        return super().forecast(tick, asked_kw, ticks) * self.jitter


class ForecastInPercent(FeederSum):
    def forecast(self, tick, asked_kw, ticks):  # noqa: ANN001, ANN201
        return super().forecast(tick, asked_kw, ticks) * 100


class ForecastIgnoresTheHorizon(FeederSum):
    def forecast(self, tick, asked_kw, ticks):  # noqa: ANN001, ANN201
        return super().forecast(tick + ticks - 1, asked_kw, 1)


class NoForecast:
    def __init__(self, tables, background_kw) -> None:  # noqa: ANN001
        self.inner = FeederSum(tables, background_kw)

    def carry(self, tick, station_kw):  # noqa: ANN001, ANN201
        return self.inner.carry(tick, station_kw)


class ListsNotArrays(Wrapped):
    """Plain lists where arrays are usual: allowed, the numbers are what count."""

    def bend(self, g, station_kw):  # noqa: ANN001, ANN201
        return dataclasses.replace(g, ev_kw=list(g.ev_kw), shed_kw=list(g.shed_kw))


class CarryRaises(FeederSum):
    def carry(self, tick, station_kw):  # noqa: ANN001, ANN201
        raise KeyError(tick)


def test_plain_lists_keep_the_contract_too() -> None:
    assert check_grid_model(ListsNotArrays, scenarios=["heatwave"], ticks=8)


class BreaksLate(FeederSum):
    """Keeps the contract on the ticks it is asked about, not in an episode's order."""

    def __init__(self, tables, background_kw) -> None:  # noqa: ANN001
        super().__init__(tables, background_kw)
        self.last = -1

    def carry(self, tick, station_kw):  # noqa: ANN001, ANN201
        if tick == self.last + 1 and tick > 5:
            raise RuntimeError("ticks in a row")
        self.last = tick
        return super().carry(tick, station_kw)


@pytest.mark.parametrize(
    ("model", "rule", "says"),
    [
        (InMW, "units", r"capacity_kw is .* \[kW\]"),
        (UtilisationInPercent, "units", "a fraction, not a percentage"),
        (LosesLoad, "conservation", "every kW asked is carried or shed"),
        (ShedsWithoutFactors, "conservation", "station_factor None"),
        (PerStation, "shapes", "ev_kw must be 6 finite values"),
        (NotATick, "interface", "not a GridTick"),
        (CapsItsInput, "inputs", "changed the station_kw"),
        (Noisy, "deterministic", "other floats"),
        (ForecastInPercent, "forecast", "not a percentage or kW"),
        (ForecastIgnoresTheHorizon, "forecast", "fell with more ticks"),
        (NoForecast, "interface", "has no forecast"),
        (CarryRaises, "interface", "carry raised KeyError"),
        (BreaksLate, "episode", "RuntimeError: ticks in a row"),
    ],
)
def test_a_broken_grid_model_fails_with_its_rule_named(model, rule, says) -> None:  # noqa: ANN001
    assert rule in GRID_RULES
    with pytest.raises(ContractError, match=says) as e:
        check_grid_model(model)
    assert e.value.rule == rule


def test_a_registered_policy_name_that_is_unknown_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="unknown policy 'nope'"):
        check_policy("nope")
    with pytest.raises(ValueError, match="unknown grid model 'nope'"):
        check_grid_model("nope")
    with pytest.raises(ValueError, match="two different"):
        check_policy("greedy_eta", seeds=(3, 3))


def test_the_check_leaves_the_registries_as_it_found_them() -> None:
    from evgrid_core.grid import GRID_MODELS

    before = dict(GRID_MODELS)
    check_grid_model(FeederSum, scenarios=["heatwave"])
    with pytest.raises(ContractError):
        check_grid_model(BreaksLate, scenarios=["heatwave"])
    assert before == GRID_MODELS
    assert make_policy("greedy_eta").name == "greedy_eta"


# --- The guide's examples -------------------------------------------------------------------
def guide_example(which: str) -> str:
    from pathlib import Path

    text = (Path(__file__).parents[2] / "docs" / "guide.md").read_text()
    block = text.split(f"<!-- example: {which} -->\n```python\n", 1)[1]
    return block.split("\n```", 1)[0]


@pytest.mark.parametrize("which", ["policy", "grid model"])
def test_the_guides_examples_keep_their_contracts(which: str) -> None:
    code = guide_example(which)
    lines = [line for line in code.splitlines() if line.strip()]
    assert len(lines) <= 20  # short enough to read at a glance
    assert "check_policy(" in code or "check_grid_model(" in code
    exec(compile(code, f"guide.md ({which})", "exec"), {})  # runs the check itself
