"""The arrivals' attributes drawn by a kernel are numpy's, to the bit.

``fleet.draw_attributes`` (inside ``fleet.draw_fleet``) turns each EV's class and
six uniform draws into its battery, charge, target, patience and deadline. It
replaced a per-class numpy expression (kept here as the reference): the same floats
on every seed, in every scenario's scales, or every episode would change.
"""

import numpy as np
import pytest

from evgrid_core.config import SimConfig
from evgrid_core.episode import episode_inputs, episode_streams, start_numbers
from evgrid_core.fleet import CLASS_CDF, EV_CLASSES, Arrivals, draw_evs
from evgrid_core.scenarios import SCENARIOS, get_scenario


def numpy_attributes(klass: np.ndarray, u: np.ndarray, critical_scale: float) -> dict:
    """The attributes as ``draw_arrivals`` computed them with numpy (the reference)."""
    n = len(klass)
    battery, soc, patience, target = (np.empty(n) for _ in range(4))
    deadline, critical = np.full(n, np.inf), np.zeros(n, dtype=bool)
    for k, c in enumerate(EV_CLASSES):
        m = klass == k
        batts = np.array(c.batteries_kwh)
        battery[m] = batts[(u[m, 0] * len(batts)).astype(int)]
        soc[m] = np.round(
            c.soc_range[0] + u[m, 1] * (c.soc_range[1] - c.soc_range[0]), 2
        )
        patience[m] = np.round(
            c.patience_min[0] + u[m, 2] * (c.patience_min[1] - c.patience_min[0])
        )
        crit = u[m, 3] < min(1.0, c.critical_prob * critical_scale)
        critical[m] = crit
        dl = np.round(
            c.deadline_min[0] + u[m, 4] * (c.deadline_min[1] - c.deadline_min[0])
        )
        deadline[m] = np.where(crit, dl, np.inf)
        target[m] = np.round(c.target_soc + u[m, 5] * (c.target_max - c.target_soc), 2)
    cls = EV_CLASSES
    return {
        "battery_kwh": battery, "soc": soc, "target": target, "patience_min": patience,
        "critical": critical, "deadline_min": deadline,
        "max_ac_kw": np.array([cls[k].max_ac_kw for k in klass]),
        "max_dc_kw": np.array([cls[k].max_dc_kw for k in klass]),
        "km_per_kwh": np.array([cls[k].km_per_kwh for k in klass]),
    }  # fmt: skip


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_drawn_attributes_equal_numpys_on_many_seeds(scenario: str) -> None:
    """Each EV's class and uniforms, drawn again from the episode's arrivals' stream
    (``fleet.draw_evs``), give through the numpy reference the attributes that
    ``episode_inputs`` drew (``fleet.draw_fleet``, compiled)."""
    sc, config = get_scenario(scenario), SimConfig()
    lam, node_cdf, *_ = start_numbers(sc, config)
    for seed in range(0, 2000, 40):
        a: Arrivals = episode_inputs(seed, sc, config)[0]  # type: ignore[assignment]
        _, klass, _, u = draw_evs(episode_streams(seed)[0], lam, CLASS_CDF, node_cdf)
        assert np.array_equal(klass, a.klass)
        for name, expected in numpy_attributes(klass, u, sc.critical_scale).items():
            got = getattr(a, name)
            assert got.dtype == expected.dtype, name
            assert np.array_equal(got, expected), (scenario, seed, name)


@pytest.mark.parametrize("k", [1, 2, 5, 31, 70])
def test_the_class_and_node_draws_are_numpys_choice(k: int) -> None:
    """``draw_arrivals`` draws classes and nodes as ``Generator.choice`` with ``p``
    does, without its checks: the same indices from the same stream."""
    from evgrid_core.fleet import cdf_of, pick
    from evgrid_core.pcg import stream_of, uniform

    for seed in range(200):
        weights = np.random.default_rng(seed + 1000).random(k) + 0.01
        n = seed % 150
        want = np.random.default_rng(seed).choice(k, size=n, p=weights / weights.sum())
        rng = stream_of(np.random.default_rng(seed).bit_generator)
        got = pick(rng, cdf_of(weights), n)
        assert np.array_equal(got, want) and got.dtype == want.dtype
        assert uniform(rng) == np.random.default_rng(seed).random(n + 1)[-1]  # in step


@pytest.mark.parametrize("weights", [[1.0, -0.5], [0.0, 0.0], [1.0, float("nan")]])
def test_the_draws_refuse_weights_numpy_would_refuse(weights: list[float]) -> None:
    from evgrid_core.fleet import cdf_of

    with pytest.raises(ValueError):
        np.random.default_rng(0).choice(
            2, size=3, p=np.array(weights) / np.sum(weights)
        )
    with pytest.raises(ValueError, match="non-negative"):
        cdf_of(np.array(weights))
