"""The substation transformers' on-load tap changers (evgrid_core/oltc.py): the
regulator's rule, the taps of an episode, and LinDistFlow at a tap."""

import numpy as np
import pytest
from grid_probes import three_bus

from evgrid_core import SimConfig
from evgrid_core.distflow import LinDistFlowSolver
from evgrid_core.network import city_network
from evgrid_core.oltc import (
    BAND_PU,
    LT_CEILING_AT_BUSBAR_PU,
    TAP_MAX,
    TAP_MIN,
    TAP_STEP_PU,
    TARGET_PU,
    busbar_pu,
    next_tap,
    tap_schedule,
)
from evgrid_core.policies import make_policy
from evgrid_core.rollout import play_episode


def test_the_settings_keep_a_light_load_lt_customer_within_its_band() -> None:
    # 1.06 x 415 / 433: a DT's no-load 433 V read against the declared 415 V
    assert pytest.approx(1.06 * 415 / 433) == LT_CEILING_AT_BUSBAR_PU
    assert TARGET_PU + BAND_PU <= LT_CEILING_AT_BUSBAR_PU
    assert BAND_PU > TAP_STEP_PU / 2  # one step lands in the band: no hunting
    assert (TAP_MIN, TAP_MAX, TAP_STEP_PU) == (-8, 8, 0.0125)  # +-10 %


def test_the_regulator_holds_inside_its_band_and_steps_to_the_target_outside() -> None:
    tap = np.array([0, 0, 2, 0, 8, -8])
    busbar = np.array([0.991, 1.009, 0.989, 0.96, 0.9, 1.2])
    # in the band: kept; 0.989: 0.011 low, one step; 0.96: 0.04 low, 3.2 -> 3
    # steps; the ends of the range hold
    assert next_tap(tap, busbar).tolist() == [0, 0, 3, 3, 8, -8]
    # half a step rounds up (towards more voltage)
    assert next_tap(np.array([0]), np.array([TARGET_PU - 1.5 * TAP_STEP_PU])) == [2]


def test_an_episodes_taps_move_only_when_the_busbar_leaves_the_band() -> None:
    # One feeder whose transformer drop grows then falls: the tap starts at 0 and
    # steps up when the busbar falls out of the band; at tick 3 tap 2 holds (1.0055)
    # although tap 1 would be in the band too (0.9928): the band's hysteresis.
    v = [1.0, 0.985, 0.975, 0.98, 0.985, 1.0]  # the busbar at tap 0 (no OLTC)
    drop = 1.0 - np.array(v)[:, None] ** 2
    taps = tap_schedule(drop)
    assert taps[:, 0].tolist() == [0, 1, 2, 2, 1, 0]
    assert not taps.flags.writeable
    for t in range(len(v)):  # every tick ends inside the band
        assert abs(busbar_pu(taps[t], drop[t])[0] - TARGET_PU) <= BAND_PU


def test_lindistflow_at_a_tap_starts_below_the_transformer_from_its_ratio() -> None:
    p, q = np.array([0.0, 2000.0, 1000.0]), np.array([0.0, 500.0, 300.0])
    solver = LinDistFlowSolver(three_bus())
    plain, tapped = solver.solve(p, q), solver.solve(p, q, np.array([3]))
    ratio = 1 + 3 * TAP_STEP_PU
    assert tapped.vm_pu[0] == 1.0  # the 66 kV slack
    # v^2 = ratio^2 - 2 D^T (r P + x Q): the drops are the plain solve's
    assert tapped.vm_pu[1:] ** 2 == pytest.approx(
        plain.vm_pu[1:] ** 2 - 1 + ratio**2, abs=1e-12
    )
    assert solver.head_drop(p, q)[0] == pytest.approx(1 - plain.vm_pu[1] ** 2)
    assert tapped.tap.tolist() == [3] and plain.tap is None
    # no load: the busbar at the ratio itself
    none = solver.solve(np.zeros(3), np.zeros(3), np.array([-2]))
    assert none.vm_pu.tolist() == pytest.approx([1.0, 0.975, 0.975], abs=1e-12)


def test_every_tick_of_an_episode_is_solved_at_the_regulators_tap() -> None:
    env = play_episode(make_policy("greedy_eta"), "evening_peak", 0,
                       SimConfig(grid="lindistflow"))  # fmt: skip
    grid = env.world.grid
    solver = LinDistFlowSolver(city_network())
    want = tap_schedule(solver.head_drop(grid.background_p, grid.background_q))
    assert np.array_equal(grid.tap, want)
    assert (grid.tap > 0).any()  # the evening's load needs a step up somewhere
    n = env.network
    assert np.array_equal(n.tap, grid.tap[env.world.tick - 1])
    # every busbar inside the band with the background alone
    t = env.world.tick - 1
    hub = [
        b.to_bus for b in (city_network().branches[h] for h in n.network.feeder_head)
    ]
    bg = solver.solve(grid.background_p[t], grid.background_q[t], grid.tap[t])
    assert np.abs(bg.vm_pu[hub] - TARGET_PU).max() <= BAND_PU
