"""Time-of-day signals: feeder background load, renewable share, tariff, road speed.

All are functions of the minute of day, evaluated once per tick and cached per
scenario. Sources in ``shared/reference/bangalore/bangalore_facts.md``.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass

import numpy as np

from .city import DATA

# --- Background load ---------------------------------------------------------------
# Normalised hourly multipliers for a BESCOM feeder, hours 00..23 [A] synthetic
# (facts §3.1): a morning peak about 09-10 h and an evening peak about 19 h.
LOAD_SHAPE = np.array(
    [0.62, 0.58, 0.56, 0.55, 0.57, 0.65, 0.78, 0.88, 0.95, 1.00, 0.99, 0.96,
     0.92, 0.90, 0.89, 0.88, 0.88, 0.92, 0.98, 1.00, 0.95, 0.85, 0.75, 0.68]
)  # fmt: skip


def _hourly_interp(values: np.ndarray, minute_of_day: float) -> float:
    """Linear interpolation of an hourly series sampled at each hour's midpoint."""
    h = (minute_of_day / 60.0 - 0.5) % 24.0
    i = int(h)
    frac = h - i
    return float(values[i] * (1 - frac) + values[(i + 1) % 24] * frac)


def load_shape(minute_of_day: float) -> float:
    """Background load multiplier (1.0 at the daily peak)."""
    return _hourly_interp(LOAD_SHAPE, minute_of_day)


# --- Renewable share ---------------------------------------------------------------
def _solar_profile() -> np.ndarray:
    with open(DATA / "solar_profile_clear_sky.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    return np.array([float(r["normalised_0_1"]) for r in rows])


SOLAR_PROFILE = _solar_profile()  # clear-sky GHI, normalised, hours 00..23 [D]
SOLAR_CAP_MW = 9000.0  # [MW] installed solar, about 7,600-9,000 [V]/[A]
SOLAR_DERATE = 0.8  # measured / clear-sky irradiation, 5.4-6.4 vs 7.2 kWh/m2 [D]
# [MWh/day] the solar model's output on a day with solar_scale 1
SOLAR_MWH_PER_DAY = SOLAR_CAP_MW * SOLAR_DERATE * float(SOLAR_PROFILE.sum())


@dataclass(frozen=True, slots=True)
class StateSupply:
    """Karnataka's supply and demand in one season, for the renewable share."""

    hydro_mw: float  # [MW] hydro output, flat through the day [A]
    wind_mw: float  # [MW] wind output, flat through the day [A]
    solar_scale: float  # [x] solar output / (SOLAR_CAP_MW x SOLAR_DERATE x profile)
    peak_demand_mw: float  # [MW] state demand at LOAD_SHAPE's 1.0


# February, facts §3.3: the midday snapshot of 28-Feb-2025 (hydro 2,000 MW, wind
# 1,940 MW) [V]; demand 17,000 MW (17,220 MW peak 2023-24) [V].
FEBRUARY = StateSupply(
    hydro_mw=2000.0, wind_mw=2000.0, solar_scale=1.0, peak_demand_mw=17000.0
)
# August, facts §3.1/§3.3: Karnataka's record 80 % renewable day, 18-Aug-2025: 143 of
# 179 MU, wind 65.8, hydro 55.3, solar 22.6 MU [V] (NIE 2025-08-20). MU per day / 24 h
# gives the mean MW [D]; solar's scale is its MU over the model's clear-sky day (0.42,
# monsoon clouds) [D]; the peak is the day's mean demand over LOAD_SHAPE's mean
# (9,091 MW; the reported monsoon-day peaks were 9,700-9,900 MW [V]) [D].
AUGUST = StateSupply(
    hydro_mw=55.3e3 / 24.0,
    wind_mw=65.8e3 / 24.0,
    solar_scale=22.6e3 / SOLAR_MWH_PER_DAY,
    peak_demand_mw=179e3 / 24.0 / float(LOAD_SHAPE.mean()),
)


def renewable_share(minute_of_day: float, supply: StateSupply = FEBRUARY) -> float:
    """Share of grid energy from hydro, wind and solar at this minute [0-1] [D].

    RE(h) = (hydro + wind + solar_cap x 0.8 x profile(h)) / demand(h), facts §3.3.
    """
    h = int(minute_of_day // 60) % 24
    solar = SOLAR_CAP_MW * SOLAR_DERATE * SOLAR_PROFILE[h] * supply.solar_scale
    demand = supply.peak_demand_mw * LOAD_SHAPE[h]
    return min(1.0, (supply.hydro_mw + supply.wind_mw + solar) / demand)


# --- Tariff ---------------------------------------------------------------------------
# MoP Guidelines for EV Charging Infrastructure 2024 (Saur Energy 2024-09-19, facts
# §2.1) [V]: the public-charging tariff is 0.7 x ACoS in solar hours (09:00-16:00) and
# 1.3 x ACoS at other hours. The reference gives no Karnataka ACoS: the KERC energy
# charge stands in for it [A]. (KERC's own ToD for EV stations was not found [U].)
BASE_TARIFF_INR = 4.50  # [INR/kWh] KERC EV charging energy charge in force Aug 2024 [V]
SOLAR_HOURS = (9, 16)  # [h] MoP 2024 solar hours, 09:00-16:00 [V]
SOLAR_FACTOR, NON_SOLAR_FACTOR = 0.7, 1.3  # [x base] MoP 2024 [V]


def tariff_inr(minute_of_day: float) -> float:
    """Energy charge the operator pays [INR/kWh]: the MoP 2024 solar/non-solar rule."""
    h = int(minute_of_day // 60) % 24
    if SOLAR_HOURS[0] <= h < SOLAR_HOURS[1]:
        return BASE_TARIFF_INR * SOLAR_FACTOR
    return BASE_TARIFF_INR * NON_SOLAR_FACTOR


# --- Road speed -----------------------------------------------------------------------
def road_speed_kmh(minute_of_day: float) -> float:
    """Average car speed [km/h]: TomTom 2025 for Bengaluru [V], night speed [A]."""
    h = int(minute_of_day // 60) % 24
    if 8 <= h < 11:
        return 14.6  # morning rush [V]
    if 17 <= h < 21:
        return 13.2  # evening rush [V]
    if h >= 22 or h < 6:
        return 25.0  # night, light traffic [A]
    return 16.6  # average, 10 km in 36 min 9 s [V]
