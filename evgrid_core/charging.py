"""How one EV charges: the one statement of the charging arithmetic.

A session's power is min(charger, vehicle acceptance) (``plug_kw``, set on
plug-in), tapered linearly above a state of charge (``tapered_kw``); the world
then scales it down with the other sessions of its station to the station's limit
(or its demand-response cap) and with those of its feeder to what the feeder
carries (``grid.py``). Grid energy in a tick = min(power x tick, what the EV still
needs); battery energy = grid energy x efficiency; the EV leaves once it reaches
its target.

The functions take floats (one session: ``session_energy``, the optimum's plans)
or numpy arrays (every session of a tick at once: ``World._charge``), with the
same float operations either way.
"""

from __future__ import annotations

import numpy as np

from .chargers import CHARGER_DC, CHARGER_KW, vehicle_kw
from .config import SimConfig

Value = float | np.ndarray  # one session's number, or every session's

DONE_TOLERANCE_KWH = 1e-9  # [kWh] a session this close to its need has reached it


# Elementwise max and min of arrays (the world's sessions) or of floats (one
# session): numpy's ufuncs cost a float ten times what Python's builtins do.
def _max(a: Value, b: float) -> Value:
    return np.maximum(a, b) if isinstance(a, np.ndarray) else max(a, b)


def _min(a: Value, b: Value) -> Value:
    return np.minimum(a, b) if isinstance(a, np.ndarray) else min(a, b)


def plug_kw(kind: int, max_ac_kw: float, max_dc_kw: float) -> float:
    """[kW] the most a session draws: min(charger, vehicle) (0 = the EV cannot use it)."""
    return min(CHARGER_KW[kind], vehicle_kw(kind, max_ac_kw, max_dc_kw))


def taper_start(config: SimConfig, kind: int) -> float:
    """[0-1] the state of charge where a ``kind`` session's power starts to fall."""
    return config.taper_start_dc if CHARGER_DC[kind] else config.taper_start_ac


def tapered_kw(plug_kw: Value, soc: Value, taper_start: Value, floor: float) -> Value:
    """[kW] a session's power before any limit: full below ``taper_start``, then
    falling linearly to ``floor`` x full at 100 % SoC."""
    # >= 1 below taper_start, so the clip gives full power there
    taper = 1.0 - (1.0 - floor) * (soc - taper_start) / _max(1.0 - taper_start, 1e-9)
    return plug_kw * _min(_max(taper, floor), 1.0)


def need_kwh(soc: Value, target: Value, battery_kwh: Value, efficiency: float) -> Value:
    """[kWh grid side] still to deliver for the EV to reach its target (0 once there)."""
    return _max((target - soc) * battery_kwh / efficiency, 0.0)


def tick_energy_kwh(power_kw: Value, dt_h: float, need: Value) -> Value:
    """[kWh grid side] delivered in one tick: power x tick, no more than the need."""
    return _min(power_kw * dt_h, need)


def reached(energy: Value, need: Value) -> bool | np.ndarray:
    """Whether a tick's ``energy`` [kWh] completes the session (its ``need``)."""
    return energy >= need - DONE_TOLERANCE_KWH


def soc_after(
    soc: Value, energy: Value, battery_kwh: Value, efficiency: float
) -> Value:
    """[0-1] state of charge after ``energy`` [kWh grid side] (the session goes on)."""
    return soc + energy * efficiency / battery_kwh


# --- One session, tick by tick (the optimum plans with these) -------------------
def session_energy(
    config: SimConfig,
    *,
    soc: float,
    target: float,
    battery_kwh: float,
    plug_kw: float,
    kind: int,
    max_ticks: int,
    is_open: np.ndarray | None = None,
) -> list[float]:
    """[kWh grid side] per tick of one session that no station limit or LOAD_SHIFT caps.

    The list ends at the tick the EV reaches its target (that tick included), or
    after ``max_ticks``. ``is_open`` (per session tick) marks ticks the station is
    dark: the EV stays plugged in and draws nothing, as in the world (its limit is
    0 then).
    """
    dt_h = config.tick_minutes / 60.0
    eff = config.charge_efficiency
    ts = taper_start(config, kind)
    out: list[float] = []
    for j in range(max_ticks):
        if is_open is not None and not is_open[j]:
            out.append(0.0)
            continue
        need = need_kwh(soc, target, battery_kwh, eff)
        energy = tick_energy_kwh(
            tapered_kw(plug_kw, soc, ts, config.taper_floor), dt_h, need
        )
        out.append(float(energy))
        if reached(energy, need):
            break
        soc = soc_after(soc, energy, battery_kwh, eff)
    return out


def unmet_after(
    config: SimConfig,
    *,
    soc: float,
    target: float,
    battery_kwh: float,
    energies: list[float],
) -> list[float]:
    """[kWh grid side] still owed at the episode's end if it ends after each prefix
    of a session's ``energies``: entry n after the first n ticks (n = 0..len).

    0 from the tick the session reached its target on (the EV left).
    """
    eff = config.charge_efficiency
    owed = [float(need_kwh(soc, target, battery_kwh, eff))]
    for e in energies:
        if owed[-1] == 0.0 or reached(e, owed[-1]):
            owed.append(0.0)
            continue
        soc = soc_after(soc, e, battery_kwh, eff)
        owed.append(float(need_kwh(soc, target, battery_kwh, eff)))
    return owed
