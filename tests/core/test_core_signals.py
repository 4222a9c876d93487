"""Time-of-day signals against the reference figures (shared/reference/bangalore)."""

import numpy as np
import pytest

from evgrid_core import EVGridEnv, get_scenario
from evgrid_core.signals import (
    AUGUST,
    FEBRUARY,
    LOAD_SHAPE,
    renewable_share,
    tariff_inr,
)


@pytest.mark.parametrize(
    ("clock", "inr"),
    [
        ("00:00", 4.50 * 1.3),  # night: outside the solar hours
        ("08:59", 4.50 * 1.3),  # a minute before the solar hours
        ("09:00", 4.50 * 0.7),  # MoP 2024 solar hours start
        ("12:30", 4.50 * 0.7),
        ("15:59", 4.50 * 0.7),  # last solar minute
        ("16:00", 4.50 * 1.3),  # solar hours end: 1.3 x at all other hours
        ("17:30", 4.50 * 1.3),  # (the old rule charged the base 4.50 here)
        ("19:00", 4.50 * 1.3),
        ("23:59", 4.50 * 1.3),
    ],
)
def test_tariff_is_the_mop_2024_solar_and_non_solar_rule(
    clock: str, inr: float
) -> None:
    h, m = map(int, clock.split(":"))
    assert tariff_inr(h * 60 + m) == pytest.approx(inr, rel=1e-15)


def _daily_share(supply) -> float:  # noqa: ANN001
    """Renewable energy / demand energy over a whole day (hourly steps)."""
    share = np.array([renewable_share(h * 60, supply) for h in range(24)])
    return float((share * LOAD_SHAPE).sum() / LOAD_SHAPE.sum())


def test_monsoon_renewable_share_is_augusts() -> None:
    # 18-Aug-2025: 143 of 179 MU renewable, 80 % (facts §3.3, NIE 2025-08-20).
    assert get_scenario("monsoon").supply is AUGUST
    assert _daily_share(AUGUST) == pytest.approx(143 / 179, abs=0.03)
    # February's supply (hydro + wind 4 GW against 17 GW) is far below that.
    assert _daily_share(FEBRUARY) < 0.6
    # The monsoon evening's share is what August's supply gives at those hours.
    env = EVGridEnv()
    env.reset(seed=0, scenario="monsoon")
    tables = env.world.tables
    expected = [renewable_share(m, AUGUST) for m in tables.minute_of_day]
    assert tables.renewable.tolist() == expected
    assert min(expected) > 0.5  # hydro + wind alone: 5,046 MW at the 9,091 MW peak
