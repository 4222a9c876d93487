"""The grid: what the feeders carry when the stations draw, behind one interface.

Each tick the world asks its ``GridModel`` to carry the stations' EV load
(``carry(tick, station_kw)``) and gets a ``GridTick``: per feeder the capacity,
background, EV load carried and shed, utilisation, and per station the factor its
EV energy is scaled by when protection sheds. The reward's grid terms
(``reward.feeder_stress``) and the KPIs read only the ``GridTick``.

``FeederSum`` (the default) adds each feeder's stations to its background load.
Another model (an AC power flow) is a class with the same ``carry`` and a row in
``GRID_MODELS``; ``SimConfig.grid`` names the one an episode uses.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from .tables import ScenarioTables


@dataclass(frozen=True, slots=True)
class GridTick:
    """What the feeders carried in one tick (F feeders, S stations)."""

    capacity_kw: list[float]  # (F,) [kW] usable capacity
    background_kw: list[float]  # (F,) [kW] load other than EV charging
    ev_kw: np.ndarray  # (F,) [kW] EV load carried (read-only)
    shed_kw: np.ndarray  # (F,) [kW] EV load asked but shed by protection (read-only)
    utilisation: list[float]  # (F,) [0-1] load carried / capacity
    station_factor: np.ndarray | None  # (S,) each station's EV energy x this; None: 1


class GridModel(Protocol):
    """A grid model of one episode."""

    def carry(self, tick: int, station_kw: np.ndarray) -> GridTick:
        """The feeders in ``tick`` when the stations ask ``station_kw`` [kW] (S,)."""
        ...


# A model is built per episode from the scenario's tables and the episode's
# background load [kW] (T, F) (the scenario's, with this episode's noise).
GridFactory = Callable[[ScenarioTables, np.ndarray], GridModel]


# --- Feeder protection ----------------------------------------------------------
# A feeder asked to carry more than its capacity sheds EV charging pro rata, so it
# carries exactly its capacity (none at all if the background alone exceeds it) [A].
# No BESCOM relay setting or load-shedding protocol was found (facts §3.2, §6 [U]);
# a sustained overload trips the 11 kV breaker and blacks out every customer, so we
# assume the charging load, the one load the utility can curtail remotely (smart
# charging, OCPP charging limits), is curtailed first, at once, and only by the excess.
# An excess within a milliwatt is float rounding, not load: a plan that keeps EV load
# within capacity - background, to a solver's tolerance, is never shed.
SHED_TOLERANCE_KW = 1e-6  # [kW]


def feeder_protection(
    ev_kw: np.ndarray, headroom_kw: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Per feeder: the factor its EV charging is scaled by [0-1] and the kW shed.

    ``ev_kw`` [kW] is the EV load the feeder's sessions would draw this tick,
    ``headroom_kw`` [kW] its capacity minus its background load.
    """
    room = np.maximum(headroom_kw, 0.0)
    over = ev_kw > room + SHED_TOLERANCE_KW
    factor = np.where(over, room / np.maximum(ev_kw, 1e-12), 1.0)
    return factor, np.where(over, ev_kw - room, 0.0)


# --- The feeder sum ---------------------------------------------------------------
class FeederSum:
    """Each feeder carries its background plus its stations' EV load, up to its
    capacity (``feeder_protection`` sheds the excess)."""

    def __init__(self, tables: ScenarioTables, background_kw: np.ndarray) -> None:
        self.feeder_of = tables.feeder_of
        self.n_feeders = len(tables.city.feeders)
        self.capacity_rows = tables.capacity_rows
        self.background_rows: list[list[float]] = background_kw.tolist()
        # [kW] EV load a feeder carries before its protection sheds any (T, F)
        self.headroom_kw = tables.capacity_kw - background_kw
        self.no_shed_kw = np.zeros(self.n_feeders)
        self.no_shed_kw.flags.writeable = False  # handed out in observations

    def carry(self, tick: int, station_kw: np.ndarray) -> GridTick:
        cap, bg = self.capacity_rows[tick], self.background_rows[tick]
        ev_kw = np.bincount(
            self.feeder_of, weights=station_kw, minlength=self.n_feeders
        )
        headroom = self.headroom_kw[tick]
        shed, factor = self.no_shed_kw, None
        if (ev_kw > headroom + SHED_TOLERANCE_KW).any():  # rare: only then shed
            by_feeder, shed = feeder_protection(ev_kw, headroom)
            shed.flags.writeable = False  # the shed kWh stay owed to their EVs
            ev_kw = ev_kw - shed
            factor = by_feeder[self.feeder_of]
        ev_kw.flags.writeable = False
        # Six feeders: plain floats are faster than numpy here.
        util = [(b + e) / c for b, e, c in zip(bg, ev_kw.tolist(), cap, strict=True)]
        return GridTick(cap, bg, ev_kw, shed, util, factor)


# --- Registry ------------------------------------------------------------------------
GRID_MODELS: dict[str, GridFactory] = {"feeder_sum": FeederSum}


def register_grid_model(name: str, factory: GridFactory) -> None:
    """Add a grid model that ``SimConfig(grid=name)`` selects."""
    GRID_MODELS[name] = factory


def make_grid_model(
    name: str, tables: ScenarioTables, background_kw: np.ndarray
) -> GridModel:
    try:
        factory = GRID_MODELS[name]
    except KeyError:
        raise ValueError(
            f"unknown grid model {name!r}; choose one of: {', '.join(GRID_MODELS)}"
        ) from None
    return factory(tables, background_kw)
