"""Configuration: frozen dataclasses with units. Override with ``dataclasses.replace``."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class RewardWeights:
    """Weights of the named reward parts. Every part is a cost (reward <= 0).

    Costs only, so no tick can pay more than nothing: an invalid action (which
    strands its EV and pays ``invalid`` on top: 5.0) is always worse than any valid
    one, whose own costs are at most 90 min of travel or 60 min of defer plus abuse
    (1.8) and, in the last step, the energy the EV is still owed (52 kWh: 1.04).
    """

    wait: float = 0.02  # [per EV-minute] defer + travel + queue time before plug-in
    grid_stress: float = 0.01  # [per kWh] EV energy asked above the feeder's soft limit
    peak: float = 0.05  # [per kWh] EV energy asked above capacity (shed, still owed)
    renewable: float = 0.002  # [per kWh] non-renewable share of charged energy
    cost: float = 0.0005  # [per INR] energy bought by the operator
    urgency: float = 2.0  # [per EV] critical EV not plugged in by its deadline
    stranded: float = 4.0  # [per EV] EV that gave up (patience, or rejected)
    invalid: float = 1.0  # [per action] unparsable or invalid action
    defer_abuse: float = (
        0.25  # [per defer] times the number of earlier defers of that EV
    )
    load_shift: float = 0.1  # [per action] each demand-response cap issued
    unmet: float = (
        0.02  # [per kWh] energy still owed at the end to EVs routed, queued or charging
    )


REWARD_KEYS: tuple[str, ...] = (
    "wait",
    "grid_stress",
    "peak",
    "renewable",
    "cost",
    "urgency",
    "stranded",
    "invalid",
    "defer_abuse",
    "load_shift",
    "unmet",
)


@dataclass(frozen=True, slots=True)
class SimConfig:
    """Rules of the world that are not scenario-specific."""

    tick_minutes: int = 5  # [min]
    soft_limit: float = 0.90  # [0-1] feeder utilisation where stress begins
    charge_efficiency: float = 0.92  # [0-1] battery kWh gained per grid kWh [A]
    taper_start_dc: float = 0.80  # [0-1] SoC where DC power starts to fall linearly [A]
    taper_start_ac: float = 0.95  # [0-1] SoC where AC power starts to fall [A]
    taper_floor: float = 0.10  # [0-1] power fraction left at 100 % SoC [A]
    max_travel_minutes: float = 90.0  # [min] dispatch radius; farther is invalid [A]
    max_defers: int = 3  # per EV; a further DEFER is invalid
    max_load_shifts_per_tick: int = 2  # further LOAD_SHIFTs in a tick are invalid
    obs_stations: int = 8  # stations listed in the text observation
    weights: RewardWeights = field(default_factory=RewardWeights)
