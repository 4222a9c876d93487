"""Time-of-day signals: feeder background load, renewable share, tariff, road speed.

All are functions of the minute of day, evaluated once per tick and cached per
scenario. Sources in ``shared/reference/bangalore/bangalore_facts.md``.
"""

from __future__ import annotations

import csv

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
HYDRO_MW = 2000.0  # [MW] Karnataka hydro, midday snapshot 28-Feb-2025 [V]
WIND_MW = 2000.0  # [MW] February wind (1,940 MW snapshot) [V]
SOLAR_CAP_MW = 9000.0  # [MW] installed solar, about 7,600-9,000 [V]/[A]
SOLAR_DERATE = 0.8  # measured / clear-sky irradiation, 5.4-6.4 vs 7.2 kWh/m2 [D]
STATE_PEAK_MW = 17000.0  # [MW] Karnataka demand, Feb [V] (17,220 MW peak 2023-24)


def renewable_share(
    minute_of_day: float, solar_scale: float = 1.0, wind_mw: float = WIND_MW
) -> float:
    """Share of grid energy from hydro, wind and solar at this minute [0-1] [D].

    RE(h) = (hydro + wind + solar_cap x 0.8 x profile(h)) / demand(h), facts §3.3.
    """
    h = int(minute_of_day // 60) % 24
    solar = SOLAR_CAP_MW * SOLAR_DERATE * SOLAR_PROFILE[h] * solar_scale
    demand = STATE_PEAK_MW * LOAD_SHAPE[h]
    return min(1.0, (HYDRO_MW + wind_mw + solar) / demand)


# --- Tariff ---------------------------------------------------------------------------
BASE_TARIFF_INR = 4.50  # [INR/kWh] KERC EV charging energy charge in force Aug 2024 [V]
SOLAR_HOURS = (9, 16)  # [h] MoP 2024: 0.7 x in solar hours 09:00-16:00 [V]
PEAK_HOURS = (18, 22)  # [h] 1.3 x in the evening peak [A] (MoP says "other hours")
SOLAR_FACTOR, PEAK_FACTOR = 0.7, 1.3  # [V] MoP Guidelines 2024 (Saur Energy 2024-09-19)


def tariff_inr(minute_of_day: float) -> float:
    """Energy charge the operator pays [INR/kWh], time-of-day [A] after the MoP rule."""
    h = int(minute_of_day // 60) % 24
    if SOLAR_HOURS[0] <= h < SOLAR_HOURS[1]:
        return BASE_TARIFF_INR * SOLAR_FACTOR
    if PEAK_HOURS[0] <= h < PEAK_HOURS[1]:
        return BASE_TARIFF_INR * PEAK_FACTOR
    return BASE_TARIFF_INR


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
