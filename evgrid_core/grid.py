"""The grid: what the feeders carry when the stations draw, behind one interface.

Each tick the world asks its ``GridModel`` to carry the stations' EV load
(``carry(tick, station_kw)``) and gets a ``GridTick``: per feeder the capacity,
background, EV load carried and shed, utilisation, and per station the factor its
EV energy is scaled by when protection sheds. The reward's grid terms
(``reward.feeder_stress``) and the KPIs read only the ``GridTick``.

``FeederSum`` (``"feeder_sum"``, the default) adds each feeder's stations to its
background load. The network models carry the same kW by the same rule and add the
feeders' AC state as radial networks (``network.py``) in ``GridTick.network``:
``LinDistFlow`` (``"lindistflow"``, numpy, here) and the pandapower reference
(``"ac"``, the ``evgrid_ac`` package, loaded through the ``evgrid.grid_models``
entry points). Another model is a class with the same ``carry`` and a row in
``GRID_MODELS``; ``SimConfig.grid`` names the one an episode uses.
"""

from __future__ import annotations

import importlib
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import entry_points
from pathlib import Path
from typing import Protocol

import numpy as np

from .distflow import LinDistFlowSolver, NetworkState
from .network import (
    Network,
    background_injections,
    city_network,
    station_injections,
)
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
    # The network models' bus voltages, branch loading and losses (diagnostics that
    # no reward, KPI or observation reads yet); None for the feeder sum.
    network: NetworkState | None = None


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


# --- The network models -----------------------------------------------------------
class NetworkGridModel:
    """A feeder sum whose ticks also carry the network's AC state.

    What the feeders carry (EV kW, protection, utilisation) is ``FeederSum``'s, to
    the bit; the carried loads (background spread over the buses, each station's
    EV kW after protection) then go to ``solve``. Limits on voltage or transformer
    loading are not rules yet: the state is reported, not acted on.
    """

    def __init__(self, tables: ScenarioTables, background_kw: np.ndarray) -> None:
        self.feeders = FeederSum(tables, background_kw)
        self.network = city_network()
        # The episode's background loads at every bus, once (T, B) [kW], [kvar].
        self.background_p, self.background_q = background_injections(
            self.network, background_kw
        )

    def solve(self, p_kw: np.ndarray, q_kvar: np.ndarray) -> NetworkState:
        raise NotImplementedError

    def carry(self, tick: int, station_kw: np.ndarray) -> GridTick:
        g = self.feeders.carry(tick, station_kw)
        carried = (
            station_kw if g.station_factor is None else station_kw * g.station_factor
        )
        # network.bus_injections, with the background part computed per episode
        ev_p, ev_q = station_injections(self.network, carried)
        state = self.solve(
            self.background_p[tick] + ev_p, self.background_q[tick] + ev_q
        )
        return GridTick(g.capacity_kw, g.background_kw, g.ev_kw, g.shed_kw,
                        g.utilisation, g.station_factor, state)  # fmt: skip


class LinDistFlow(NetworkGridModel):
    """The network's state by the linearised DistFlow (``distflow.py``)."""

    def __init__(self, tables: ScenarioTables, background_kw: np.ndarray) -> None:
        super().__init__(tables, background_kw)
        self.solver = _solver(self.network)

    def solve(self, p_kw: np.ndarray, q_kvar: np.ndarray) -> NetworkState:
        return self.solver.solve(p_kw, q_kvar)


_solvers: dict[int, tuple[Network, LinDistFlowSolver]] = {}


def _solver(network: Network) -> LinDistFlowSolver:
    """One solver per network in a process (its matrices are read-only)."""
    if id(network) not in _solvers:
        _solvers[id(network)] = (network, LinDistFlowSolver(network))
    return _solvers[id(network)][1]


# --- Registry ------------------------------------------------------------------------
GRID_MODELS: dict[str, GridFactory] = {
    "feeder_sum": FeederSum,
    "lindistflow": LinDistFlow,
}
# Grid models of layers above the core (the AC reference): entry points of this
# group, name = module whose import registers the model; the checkout's
# pyproject.toml is read too, so a checkout not reinstalled since still finds them.
PLUGIN_GROUP = "evgrid.grid_models"
_CHECKOUT_PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def plugin_modules() -> dict[str, str]:
    """name -> module of every grid-model plugin."""
    found = {ep.name: ep.module for ep in entry_points(group=PLUGIN_GROUP)}
    if _CHECKOUT_PYPROJECT.is_file():
        with _CHECKOUT_PYPROJECT.open("rb") as f:
            project = tomllib.load(f).get("project", {})
        for name, value in (
            project.get("entry-points", {}).get(PLUGIN_GROUP, {}).items()
        ):
            found.setdefault(name, value.partition(":")[0].strip())
    return found


def register_grid_model(name: str, factory: GridFactory) -> None:
    """Add a grid model that ``SimConfig(grid=name)`` selects."""
    GRID_MODELS[name] = factory


def make_grid_model(
    name: str, tables: ScenarioTables, background_kw: np.ndarray
) -> GridModel:
    if name not in GRID_MODELS and name in (plugins := plugin_modules()):
        try:
            importlib.import_module(plugins[name])  # registers the model
        except ImportError as e:
            raise ValueError(f"grid model {name!r} cannot load: {e}") from e
    try:
        factory = GRID_MODELS[name]
    except KeyError:
        raise ValueError(
            f"unknown grid model {name!r}; choose one of: {', '.join(GRID_MODELS)}"
        ) from None
    return factory(tables, background_kw)
