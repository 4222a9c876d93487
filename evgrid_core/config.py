"""Configuration: frozen dataclasses with units. Override with ``dataclasses.replace``.

The reward's weights are ``reward.RewardWeights`` (re-exported here).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .reward import REWARD_KEYS, RewardWeights

__all__ = ["DEFAULTS", "REWARD_KEYS", "RewardWeights", "SimConfig"]


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
    grid: str = "feeder_sum"  # the grid model (a name in grid.GRID_MODELS)
    weights: RewardWeights = field(default_factory=RewardWeights)


# The default world: what estimates that see no config assume (the policies'
# charge minutes and feeder-stress threshold, the candidates' features).
DEFAULTS = SimConfig()
