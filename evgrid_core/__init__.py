"""EV Grid Oracle core: a headless Bengaluru EV-charging dispatch simulator.

Pure: imports only the standard library, numpy and networkx.
"""

import importlib

from .actions import (
    ACTION_SYNTAX,
    DEFER_MINUTES,
    SHIFT_CAP_PCT,
    SHIFT_MINUTES,
    Action,
    ChargerKind,
    Defer,
    Invalid,
    LoadShift,
    Route,
    action_contract,
    format_action,
    parse_action,
)
from .chargers import CHARGERS, ChargerSpec
from .city import City, Feeder, Station, load_city
from .config import REWARD_KEYS, RewardWeights, SimConfig
from .env import EpisodeOverError, EVGridEnv, StepResult
from .kpis import KPI_UNITS, aggregate
from .observation import EVRequest, Observation, render_text
from .rules import route_mask, validate_action
from .scenarios import DEFAULT_SCENARIO, SCENARIOS, Scenario, get_scenario

__all__ = [
    "ACTION_SYNTAX",
    "CHARGERS",
    "DEFER_MINUTES",
    "SHIFT_CAP_PCT",
    "SHIFT_MINUTES",
    "Action",
    "ContractError",
    "ChargerKind",
    "ChargerSpec",
    "City",
    "DEFAULT_SCENARIO",
    "Defer",
    "EVGridEnv",
    "EVRequest",
    "EpisodeOverError",
    "Feeder",
    "Invalid",
    "KPI_UNITS",
    "LoadShift",
    "Observation",
    "REWARD_KEYS",
    "RewardWeights",
    "Route",
    "SCENARIOS",
    "Scenario",
    "SimConfig",
    "Station",
    "StepResult",
    "action_contract",
    "aggregate",
    "check_grid_model",
    "check_policy",
    "format_action",
    "get_scenario",
    "load_city",
    "parse_action",
    "render_text",
    "route_mask",
    "validate_action",
]

# The plug-in checks load the policies: imported on first use, not with the core.
_LAZY = {
    "check_policy": "checks",
    "check_grid_model": "checks",
    "ContractError": "checks",
}


def __getattr__(name: str) -> object:
    if name in _LAZY:
        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
