"""The grid interface: the feeder sum behind it, and another model plugged in."""

import numpy as np
import pytest

from evgrid_core import EVGridEnv, SimConfig, get_scenario
from evgrid_core.grid import GRID_MODELS, FeederSum, GridTick
from evgrid_core.policies import make_policy
from evgrid_core.rollout import play_episode
from evgrid_core.tables import scenario_tables


class Unlimited:
    """A dummy grid model: every feeder carries whatever its stations ask."""

    def __init__(self, tables, background_kw) -> None:  # noqa: ANN001
        self.tables, self.background = tables, background_kw

    def carry(self, tick: int, station_kw: np.ndarray) -> GridTick:
        cap, bg = self.tables.capacity_rows[tick], self.background[tick].tolist()
        ev = np.bincount(self.tables.feeder_of, weights=station_kw, minlength=len(cap))
        util = [(b + e) / c for b, e, c in zip(bg, ev.tolist(), cap, strict=True)]
        return GridTick(cap, bg, ev, np.zeros(len(cap)), util, None)

    def forecast(self, tick: int, asked_kw: np.ndarray, ticks: int) -> np.ndarray:
        horizon = slice(tick, tick + ticks)
        cap = self.tables.capacity_kw[horizon]
        return ((self.background[horizon] + asked_kw) / cap).max(axis=0)


def test_a_dummy_grid_model_runs_a_whole_episode(monkeypatch) -> None:
    monkeypatch.setitem(GRID_MODELS, "unlimited", Unlimited)
    policy = make_policy("greedy_eta")
    # festival_surge seed 0: the feeder sum sheds EV charging on overloaded feeders
    summed = play_episode(policy, "festival_surge", 0).kpi_summary()
    env = play_episode(policy, "festival_surge", 0, SimConfig(grid="unlimited"))
    unlimited = env.kpi_summary()
    assert env.done and env.steps > 100
    assert summed["shed_kwh"] > 0 and unlimited["shed_kwh"] == 0.0
    assert unlimited["energy_kwh"] > summed["energy_kwh"]  # nothing was cut
    assert env.kpis.parts_total["peak"] == 0.0  # nothing shed, nothing paid
    assert unlimited["peak_feeder_util_pct"] > 100.0  # the model's utilisation


def test_an_unknown_grid_model_is_named_with_the_choices() -> None:
    with pytest.raises(ValueError, match="unknown grid model .nope.*feeder_sum"):
        EVGridEnv(SimConfig(grid="nope")).reset(seed=0)


def test_the_feeder_sum_adds_stations_and_sheds_only_the_excess() -> None:
    sc = get_scenario("evening_peak")
    tables = scenario_tables(sc, SimConfig())
    background = tables.background_kw.copy()
    grid = FeederSum(tables, background)
    S = tables.city.n_stations
    on_f1 = np.flatnonzero(tables.feeder_of == 0)  # stations on feeder F1
    # Within the headroom: the sum, nothing shed, utilisation = (bg + ev) / cap.
    kw = np.zeros(S)
    kw[on_f1[:2]] = [100.0, 50.0]
    g = grid.carry(3, kw)
    assert g.ev_kw[0] == 150.0 and not g.ev_kw[1:].any()
    assert g.shed_kw.tolist() == [0.0] * 6 and g.station_factor is None
    assert g.utilisation[0] == (background[3, 0] + 150.0) / tables.capacity_kw[3, 0]
    # Beyond it: F1 carries exactly its capacity; its stations are scaled alike.
    room = tables.capacity_kw[3, 0] - background[3, 0]
    kw[on_f1[:2]] = [room, room]
    g = grid.carry(3, kw)
    assert g.shed_kw[0] == pytest.approx(room)
    assert g.utilisation[0] == pytest.approx(1.0, rel=1e-12)
    assert g.station_factor[on_f1[:2]].tolist() == pytest.approx([0.5, 0.5])
    others = np.setdiff1d(np.arange(S), on_f1)
    assert (g.station_factor[others] == 1.0).all()


def test_the_grid_model_is_chosen_per_episode_by_config() -> None:
    env = EVGridEnv()
    env.reset(seed=0)
    assert type(env.world.grid) is FeederSum  # the default
