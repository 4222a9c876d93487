"""The grid: what the feeders carry when the stations draw, behind one interface.

Each tick the world asks its ``GridModel`` to carry the stations' EV load
(``carry(tick, station_kw)``) and gets a ``GridTick``: per feeder the capacity,
background, EV load carried and shed, utilisation, and per station the factor its
EV energy is scaled by when protection sheds. The reward's grid terms
(``ticks.grid_terms``) and the KPIs read only the ``GridTick``.

``FeederSum`` (``"feeder_sum"``, the default) adds each feeder's stations to its
background load. The network models carry the same kW by the same rule and add the
feeders' AC state as radial networks (``network.py``) in ``GridTick.network``:
``LinDistFlow`` (``"lindistflow"``, numpy, here) and the pandapower reference
(``"ac"``, the ``evgrid_ac`` package, loaded through the ``evgrid.grid_models``
entry points). Another model is a class with the same ``carry`` and a row in
``GRID_MODELS``; ``SimConfig.grid`` names the one an episode uses. Every model
also gives the observation's 30-minute feeder forecast (``forecast``): the rule
lives with the model.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Protocol

import numpy as np

from .config import SimConfig
from .distflow import LinDistFlowSolver, NetworkState, voltage_deficit
from .jit import kernel
from .network import (
    EV_PF,
    Network,
    background_injections,
    city_network,
    station_injections,
    tan_phi,
)
from .oltc import tap_schedule
from .plugins import entry_point_modules
from .scenarios import Scenario, TransformerEvent
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
    # The network models' bus voltages, branch loading, flows and losses, read by
    # the reward (``reward.network_terms``), the KPIs and the observation; None for
    # the feeder sum.
    network: NetworkState | None = None


class GridModel(Protocol):
    """A grid model of one episode."""

    def carry(self, tick: int, station_kw: np.ndarray) -> GridTick:
        """The feeders in ``tick`` when the stations ask ``station_kw`` [kW] (S,)."""
        ...

    def forecast(self, tick: int, asked_kw: np.ndarray, ticks: int) -> np.ndarray:
        """(F,) [0-1] each feeder's highest utilisation over ``ticks`` ticks from
        ``tick`` if its EV load stays at ``asked_kw`` [kW] (F,)."""
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


@kernel
def protect(ev_kw: np.ndarray, headroom_kw: np.ndarray, factor: np.ndarray,
            shed_kw: np.ndarray) -> bool:  # fmt: skip
    """The protection rule, per feeder, in place: whether any feeder sheds.

    ``ev_kw`` [kW] is the EV load the feeder's sessions would draw this tick (left
    as what it carries), ``headroom_kw`` [kW] its capacity minus its background;
    ``factor`` [0-1] (ones in) and ``shed_kw`` (zeros in) are what it scales its EV
    charging by and what it sheds. Only a feeder over its headroom by more than
    ``SHED_TOLERANCE_KW`` sheds.
    """
    n = len(ev_kw)
    shed_any = False
    for f in range(n):
        if ev_kw[f] > headroom_kw[f] + SHED_TOLERANCE_KW:
            shed_any = True
    if not shed_any:  # the common case: nothing to scale
        return False
    for f in range(n):
        room = max(headroom_kw[f], 0.0)
        if ev_kw[f] > room + SHED_TOLERANCE_KW:
            factor[f] = room / max(ev_kw[f], 1e-12)
            shed_kw[f] = ev_kw[f] - room
        ev_kw[f] = ev_kw[f] - shed_kw[f]
    return True


def feeder_protection(
    ev_kw: np.ndarray, headroom_kw: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Per feeder: the factor its EV charging is scaled by [0-1] and the kW shed
    (``protect`` on copies)."""
    ev = np.array(ev_kw, dtype=float)
    factor, shed = np.ones(len(ev)), np.zeros(len(ev))
    protect(ev, np.asarray(headroom_kw, dtype=float), factor, shed)
    return factor, shed


@kernel
def feeder_sum(station_kw: np.ndarray, feeder_of: np.ndarray, headroom_kw: np.ndarray,
               ev_kw: np.ndarray, factor: np.ndarray, shed_kw: np.ndarray) -> bool:  # fmt: skip
    """The feeder sum's rule: each feeder's stations' EV load (``ev_kw``, zeros in),
    then ``protect``. The world's compiled tick and ``FeederSum.carry`` both call it."""
    for s in range(len(station_kw)):
        ev_kw[feeder_of[s]] += station_kw[s]
    return protect(ev_kw, headroom_kw, factor, shed_kw)


# --- The feeder sum ---------------------------------------------------------------
class FeederSum:
    """Each feeder carries its background plus its stations' EV load, up to its
    capacity (``feeder_protection`` sheds the excess)."""

    def __init__(self, tables: ScenarioTables, background_kw: np.ndarray) -> None:
        self.feeder_of = np.asarray(tables.feeder_of, dtype=np.int64)
        self.n_feeders = len(tables.city.feeders)
        self.capacity_kw = tables.capacity_kw  # (T, F) [kW]
        self.background_kw = background_kw  # (T, F) [kW]
        self.capacity_rows = tables.capacity_rows
        self.background_rows: list[list[float]] = background_kw.tolist()
        # [kW] EV load a feeder carries before its protection sheds any (T, F)
        self.headroom_kw = tables.capacity_kw - background_kw
        self.no_shed_kw = np.zeros(self.n_feeders)
        self.no_shed_kw.flags.writeable = False  # handed out in observations

    def carry(self, tick: int, station_kw: np.ndarray) -> GridTick:
        cap, bg = self.capacity_rows[tick], self.background_rows[tick]
        F = self.n_feeders
        ev_kw, factor, shed = np.zeros(F), np.ones(F), np.zeros(F)
        by_station = None
        if feeder_sum(np.asarray(station_kw, dtype=float), self.feeder_of,
                      self.headroom_kw[tick], ev_kw, factor, shed):  # fmt: skip
            shed.flags.writeable = False  # the shed kWh stay owed to their EVs
            by_station = factor[self.feeder_of]
        else:
            shed = self.no_shed_kw
        ev_kw.flags.writeable = False
        # Six feeders: plain floats are faster than numpy here.
        util = [(b + e) / c for b, e, c in zip(bg, ev_kw.tolist(), cap, strict=True)]
        return GridTick(cap, bg, ev_kw, shed, util, by_station)

    def forecast(self, tick: int, asked_kw: np.ndarray, ticks: int) -> np.ndarray:
        out = np.empty(self.n_feeders)
        forecast_into(self.background_kw, self.capacity_kw,
                      np.asarray(asked_kw, dtype=float), tick, ticks, out)  # fmt: skip
        return out


@kernel
def forecast_into(
    background_kw, capacity_kw, asked_kw, tick: int, ticks: int, out
) -> None:  # noqa: ANN001
    """The feeder sum's forecast, into ``out`` (F,): each feeder's highest
    utilisation over ``ticks`` ticks from ``tick`` (at least one, within the
    episode) if its EV load stays at ``asked_kw``."""
    end = min(capacity_kw.shape[0], tick + ticks)
    for f in range(out.shape[0]):
        high = (background_kw[tick, f] + asked_kw[f]) / capacity_kw[tick, f]
        for h in range(tick + 1, end):
            high = max(high, (background_kw[h, f] + asked_kw[f]) / capacity_kw[h, f])
        out[f] = high


# --- The network models -----------------------------------------------------------
class NetworkGridModel:
    """A feeder sum whose ticks also carry the network's AC state.

    What the feeders carry (EV kW, protection, utilisation) is ``FeederSum``'s, to
    the bit; the carried loads (background spread over the buses, each station's
    EV kW after protection) then go to ``solve``. The state carries the tick's DT
    ratings (a scenario's ``TransformerEvent`` swaps one) and the voltage deficits
    of the background alone (solved once per tick when first asked), from which
    the reward charges what the EV load adds (``reward.network_terms``).

    The substation OLTCs' taps (``tap``, (T, F)) are set once per episode by
    ``oltc.tap_schedule`` from the background's drop through each substation
    transformer (LinDistFlow's, whatever the solver: every model applies the same
    taps), and each tick is solved at its row.
    """

    def __init__(self, tables: ScenarioTables, background_kw: np.ndarray) -> None:
        self.feeders = FeederSum(tables, background_kw)
        self.network = city_network()
        # The episode's background loads at every bus, once (T, B) [kW], [kvar].
        self.background_p, self.background_q = background_injections(
            self.network, background_kw
        )
        self.n_ticks = len(background_kw)
        self.tap = tap_schedule(
            _solver(self.network).head_drop(self.background_p, self.background_q)
        )
        self.dt_kva: np.ndarray | None = None  # (T, S) [kVA] when a DT is swapped
        self._background_deficit: dict[int, np.ndarray] = {}

    def swap_transformers(self, events: Iterable[TransformerEvent]) -> None:
        """The scenario's DT swaps: station ``e.station``'s DT rated ``e.kva`` in
        ticks [start, end) (its impedance kept [A])."""
        table = np.tile(self.network.station_dt_kva, (self.n_ticks, 1))
        for e in events:
            table[e.start_tick : e.end_tick, e.station - 1] = e.kva
        table.flags.writeable = False
        self.dt_kva = table

    def solve(
        self, p_kw: np.ndarray, q_kvar: np.ndarray, tap: np.ndarray
    ) -> NetworkState:
        """The state with loads ``p_kw`` [kW], ``q_kvar`` [kvar] (B,) and the
        substation OLTCs at ``tap`` (F,)."""
        raise NotImplementedError

    def background_deficit(self, tick: int) -> np.ndarray:
        """(B,) [p.u.] the voltage deficits with the background load alone."""
        d = self._background_deficit.get(tick)
        if d is None:
            t = min(tick, self.n_ticks - 1)
            state = self.solve(self.background_p[t], self.background_q[t], self.tap[t])
            d = self._background_deficit[tick] = state.voltage_deficit_pu
        return d

    def carry(self, tick: int, station_kw: np.ndarray) -> GridTick:
        g = self.feeders.carry(tick, station_kw)
        carried = (
            station_kw if g.station_factor is None else station_kw * g.station_factor
        )
        # network.bus_injections, with the background part computed per episode
        ev_p, ev_q = station_injections(self.network, carried)
        state = self.solve(
            self.background_p[tick] + ev_p, self.background_q[tick] + ev_q,
            self.tap[tick],
        )  # fmt: skip
        state = replace(
            state,
            dt_kva=None if self.dt_kva is None else self.dt_kva[tick],
            background_deficit_pu=self.background_deficit(tick),
        )
        return GridTick(g.capacity_kw, g.background_kw, g.ev_kw, g.shed_kw,
                        g.utilisation, g.station_factor, state)  # fmt: skip

    def forecast(self, tick: int, asked_kw: np.ndarray, ticks: int) -> np.ndarray:
        return self.feeders.forecast(tick, asked_kw, ticks)


class LinDistFlow(NetworkGridModel):
    """The network's state by the linearised DistFlow (``distflow.py``)."""

    def __init__(self, tables: ScenarioTables, background_kw: np.ndarray) -> None:
        super().__init__(tables, background_kw)
        self.solver = _solver(self.network)

    def solve(
        self, p_kw: np.ndarray, q_kvar: np.ndarray, tap: np.ndarray
    ) -> NetworkState:
        return self.solver.solve(p_kw, q_kvar, tap)

    def linear_limits(self) -> LinearLimits:
        """The voltage and DT limits as linear functions of the stations' kW: what
        the hindsight optimum's model adds under this grid model."""
        net = self.network
        base = np.array(
            [
                voltage_deficit(net, self.solve(p, q, tap).vm_pu)
                for p, q, tap in zip(
                    self.background_p, self.background_q, self.tap, strict=True
                )
            ]
        )
        dt = self.dt_kva
        return LinearLimits(
            supply_bus=net.supply_bus,
            bus_feeder=net.bus_feeder,
            base_deficit_pu=base,
            deficit_per_kw=self.solver.deficit_sensitivity(tan_phi(EV_PF)),
            dt_kva=np.tile(net.station_dt_kva, (self.n_ticks, 1)) if dt is None else dt,
            kva_per_kw=1.0 / EV_PF,
        )


@dataclass(frozen=True)
class LinearLimits:
    """Under LinDistFlow, per tick t: bus b's voltage deficit (before its floor at 0)
    is ``base_deficit_pu[t, b] + deficit_per_kw[b] @ station_kw`` and station s's
    DT carries ``kva_per_kw * station_kw[s]`` against ``dt_kva[t, s]``: exact, as
    the world computes them (``distflow.NetworkState``)."""

    supply_bus: np.ndarray  # (B,) bool: the points of supply the limits hold
    bus_feeder: np.ndarray  # (B,) feeder index
    base_deficit_pu: np.ndarray  # (T, B) [p.u.] with the background alone
    deficit_per_kw: np.ndarray  # (B, S) [p.u./kW]
    dt_kva: np.ndarray  # (T, S) [kVA] DT ratings (NaN: HT)
    kva_per_kw: float  # [kVA/kW] of the EV load (its power factor's inverse)


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
# group, name = module whose import registers the model (``plugins``).
PLUGIN_GROUP = "evgrid.grid_models"


def plugin_modules() -> dict[str, str]:
    """name -> module of every grid-model plugin (``plugins``)."""
    return entry_point_modules(PLUGIN_GROUP)


def register_grid_model(name: str, factory: GridFactory) -> None:
    """Add a grid model that ``SimConfig(grid=name)`` selects."""
    GRID_MODELS[name] = factory


def grid_model_factory(name: str) -> GridFactory:
    """The factory ``SimConfig(grid=name)`` selects (a plugin imported on first
    use); a one-line ``ValueError`` for a name that is not one."""
    if name not in GRID_MODELS and name in (plugins := plugin_modules()):
        try:
            importlib.import_module(plugins[name])  # registers the model
        except ImportError as e:
            raise ValueError(f"grid model {name!r} cannot load: {e}") from e
    try:
        return GRID_MODELS[name]
    except KeyError:
        choices = ", ".join(dict.fromkeys([*GRID_MODELS, *plugin_modules()]))
        raise ValueError(
            f"unknown grid model {name!r}; choose one of: {choices}"
        ) from None


def grid_config(name: str, config: SimConfig | None = None) -> SimConfig:
    """``config`` (default ``SimConfig()``) on grid model ``name``, the name checked
    once here (a one-line ``ValueError`` naming the choices): what a front end builds
    its episodes from."""
    grid_model_factory(name)
    return replace(config or SimConfig(), grid=name)


def make_grid_model(
    name: str,
    tables: ScenarioTables,
    background_kw: np.ndarray,
    scenario: Scenario | None = None,
) -> GridModel:
    """The episode's grid model. A scenario's ``transformer_events`` reach the
    network models (the feeder sum has no transformers)."""
    model = grid_model_factory(name)(tables, background_kw)
    events = scenario.transformer_events if scenario is not None else ()
    if events and isinstance(model, NetworkGridModel):
        model.swap_transformers(events)
    return model
