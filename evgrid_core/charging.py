"""How one EV charges: the one statement of the charging arithmetic.

A session's power is min(charger, vehicle acceptance) (``plug_kw``, set on
plug-in), tapered linearly above a state of charge (``tapered_kw``); the world
then scales it down with the other sessions of its station to the station's limit
(or its demand-response cap) and with those of its feeder to what the feeder
carries (``grid.py``). Grid energy in a tick = min(power x tick, what the EV still
needs); battery energy = grid energy x efficiency; the EV leaves once it reaches
its target.

The functions take one session's floats: the world's tick calls them in a
compiled loop over its sessions (``ticks.py``), the optimum's plans one session at
a time (``session_energy``), with the same float operations either way.
"""

from __future__ import annotations

import numpy as np

from .chargers import CHARGER_DC, CHARGER_KW, vehicle_kw_of
from .config import SimConfig
from .jit import kernel

DONE_TOLERANCE_KWH = 1e-9  # [kWh] a session this close to its need has reached it

# Each rule below is a kernel (``jit.py``): the world's tick applies it to every
# session in a compiled loop, the optimum to one session from Python; the floats
# are the same either way (``tests/core/test_core_charging.py``).


@kernel
def plug_kw(kind: int, max_ac_kw: float, max_dc_kw: float) -> float:
    """[kW] the most a session draws: min(charger, vehicle) (0 = the EV cannot use it)."""
    return min(CHARGER_KW[kind], vehicle_kw_of(kind, max_ac_kw, max_dc_kw))


def taper_start(config: SimConfig, kind: int) -> float:
    """[0-1] the state of charge where a ``kind`` session's power starts to fall."""
    return config.taper_start_dc if CHARGER_DC[kind] else config.taper_start_ac


@kernel
def tapered_kw(plug_kw: float, soc: float, taper_start: float, floor: float) -> float:
    """[kW] a session's power before any limit: full below ``taper_start``, then
    falling linearly to ``floor`` x full at 100 % SoC."""
    # >= 1 below taper_start, so the clip gives full power there
    taper = 1.0 - (1.0 - floor) * (soc - taper_start) / max(1.0 - taper_start, 1e-9)
    return plug_kw * min(max(taper, floor), 1.0)


@kernel
def need_kwh(soc: float, target: float, battery_kwh: float, efficiency: float) -> float:
    """[kWh grid side] still to deliver for the EV to reach its target (0 once there)."""
    return max((target - soc) * battery_kwh / efficiency, 0.0)


@kernel
def tick_energy_kwh(power_kw: float, dt_h: float, need: float) -> float:
    """[kWh grid side] delivered in one tick: power x tick, no more than the need."""
    return min(power_kw * dt_h, need)


@kernel
def reached(energy: float, need: float) -> bool:
    """Whether a tick's ``energy`` [kWh] completes the session (its ``need``)."""
    return energy >= need - DONE_TOLERANCE_KWH


@kernel
def soc_after(
    soc: float, energy: float, battery_kwh: float, efficiency: float
) -> float:
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
