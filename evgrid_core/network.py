"""The six BESCOM feeders as radial AC networks: buses, line sections and
transformers, as data.

One description serves every network grid model: the linearised DistFlow in the
core (``distflow.py``) reads its per-unit impedances, and the AC reference
(``evgrid_ac``) builds its pandapower net from it, so no number lives twice.

Each feeder (``city.FEEDERS``) is built from the city's tables by one rule:

* a 66 kV grid bus (the slack, 1.0 p.u.) and a 66/11 kV substation transformer
  to the feeder's 11 kV busbar, placed at the locality of the feeder's stations
  with the least road km to all the others;
* line sections along the road graph (``city.graph``, BMTC road km): the union of
  the shortest road paths from the substation's locality to each station's, one
  11 kV bus per locality on them (distribution lines follow the roads) [A];
* per station a short 11 kV tap (``TAP_KM``) and a distribution transformer sized
  from the station's limit by the BESCOM mapping (``dt_kva``), the EV load on its
  low-voltage side;
* the feeder's background load spread equally over its locality buses [A].

Tags as in ``shared/reference/bangalore``: [V] stated in the cited source, [D]
derived from cited data, [A] an assumption. Sources: ``bangalore_facts.md`` (§1.4,
§3.2) and ``power-flow.md`` in ``shared/reference``, and the Indian standards named
beside each number (IS 398-2 for ACSR conductors, IS 1180-1 for distribution
transformers), which are not in ``shared/reference``: [A] until checked there.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache, cached_property

import networkx as nx
import numpy as np

from .city import City, load_city
from .equipment import (
    CONDUCTORS,
    LV_KV,
    SUBSTATION_TRANSFORMER,
    Conductor,
    TransformerType,
    distribution_transformer,
    dt_kva,
)

BASE_MVA = 1.0  # [MVA] the per-unit power base (pandapower's default too)

# --- Loads ---------------------------------------------------------------------------
BACKGROUND_PF = 0.95  # [-] lagging, the feeders' mixed background load [A]
EV_PF = 0.99  # [-] lagging, chargers with power-factor correction [A]
# BESCOM charger sites lie 0.2-1.3 km from their locality node [V] (facts §1.4);
# each station's 11 kV tap is taken as that range's middle [A].
TAP_KM = 0.75  # [km]


def tan_phi(pf: float) -> float:
    """kvar per kW of a load at power factor ``pf``."""
    return math.tan(math.acos(pf))


# --- Limits ----------------------------------------------------------------------------
# Voltage of supply: the Indian Electricity Rules 1956, rule 54 ("declared voltage of
# supply to consumer"), whose bands the CEA (Measures relating to Safety and Electric
# Supply) Regulations carried on: the voltage at a consumer's point of supply may not
# differ from the declared voltage by more than 6 % at low voltage, by more than 6 %
# up or 9 % down at high voltage (11 kV), by more than 10 % up or 12.5 % down at
# extra-high voltage. Neither text is in shared/reference: [A] until checked there.


@dataclass(frozen=True, slots=True)
class VoltageBand:
    """The voltage a point of supply may have [p.u. of the declared voltage]."""

    low: float
    high: float


VOLTAGE_BANDS = {
    "lt": VoltageBand(0.94, 1.06),  # rule 54 (i): low voltage, +-6 %
    "ht": VoltageBand(0.91, 1.06),  # rule 54 (ii): high voltage, +6 % / -9 %
    "eht": VoltageBand(0.875, 1.10),  # rule 54 (iii): extra-high, +10 % / -12.5 %
}
# The distribution transformers give 433 V at no load (IS 1180-1) for a declared
# 415 V [A]; the network models them at the nominal ratio (LV_KV), so an LV bus's
# voltage in the models' per unit is 415/433 of the supply's, and the LT band's
# floor there is 0.94 x 415/433 = 0.901.
DT_NO_LOAD_KV = 0.433  # [kV] [A: IS 1180-1, not in shared/reference]
# A distribution transformer is overloaded above its nameplate kVA [A]: IS 2026-7's
# loading guide allows cyclic overloads, but BESCOM's DT failures (7.5-7.95 % a
# year 2020-23) are put down to overloading [V] (DH, facts §3.2), so every kVA above
# the rating counts.
TRANSFORMER_LIMIT = 1.0  # [0-1] loading (kVA / rated kVA) above which a DT is over


def voltage_floor_pu(bus: Bus) -> float:
    """The lowest voltage the bus may have, in the network's per unit (its nominal
    voltage): the band of its voltage level, the LV side read through the DTs'
    no-load ratio."""
    if bus.vn_kv < 1.0:
        return VOLTAGE_BANDS["lt"].low * LV_KV / DT_NO_LOAD_KV
    return VOLTAGE_BANDS["ht" if bus.vn_kv <= 33.0 else "eht"].low


# --- The network ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Bus:
    name: str
    vn_kv: float  # [kV] nominal voltage
    feeder: int  # index into city.FEEDERS (its island)
    kind: str  # "grid" (the slack), "substation", "locality", "tap" or "lv"
    node: str = ""  # the locality (city.graph node) it sits at, for maps


@dataclass(frozen=True, slots=True)
class Branch:
    """A line section (``conductor`` and ``length_km``) or a transformer
    (``transformer``), from its parent bus (the high-voltage side) to its child."""

    name: str
    from_bus: int
    to_bus: int
    length_km: float = 0.0  # [km]
    conductor: Conductor | None = None
    transformer: TransformerType | None = None

    def z_pu(self, vn_kv: float) -> tuple[float, float]:
        """(r, x) on ``BASE_MVA`` at the child bus's nominal voltage."""
        if self.transformer is not None:
            t = self.transformer
            z = t.vk_percent / 100.0 * BASE_MVA / (t.sn_kva / 1000.0)
            r = t.vkr_percent / 100.0 * BASE_MVA / (t.sn_kva / 1000.0)
            return r, math.sqrt(z * z - r * r)
        assert self.conductor is not None
        z_base = vn_kv * vn_kv / BASE_MVA  # [ohm]
        c = self.conductor
        return (
            c.r_ohm_per_km * self.length_km / z_base,
            c.x_ohm_per_km * self.length_km / z_base,
        )

    def rating_mva(self, vn_kv: float) -> float:
        """[MVA] the apparent power at nominal voltage that loads it 100 %."""
        if self.transformer is not None:
            return self.transformer.sn_kva / 1000.0
        assert self.conductor is not None
        return math.sqrt(3) * vn_kv * self.conductor.max_i_ka


@dataclass(frozen=True)
class Network:
    """Radial islands, one per feeder: every bus but a slack is the child of exactly
    one branch, and branches come parents first."""

    buses: tuple[Bus, ...]
    branches: tuple[Branch, ...]
    slack: tuple[int, ...]  # (F,) each feeder's grid bus
    background_share: np.ndarray  # (F, B) each feeder's background load over buses
    station_bus: np.ndarray  # (S,) the bus whose load a station's EVs are
    station_branch: np.ndarray  # (S,) the station's transformer branch (-1: HT)

    def __post_init__(self) -> None:
        seen = set(self.slack)
        for b in self.branches:
            if b.from_bus not in seen or b.to_bus in seen:
                raise ValueError(f"branch {b.name} is not radial, parents first")
            seen.add(b.to_bus)
        if seen != set(range(len(self.buses))):
            raise ValueError("every bus must hang on a slack")

    @property
    def n_feeders(self) -> int:
        return len(self.slack)

    @cached_property
    def bus_feeder(self) -> np.ndarray:
        return np.array([b.feeder for b in self.buses])

    @cached_property
    def branch_feeder(self) -> np.ndarray:
        return self.bus_feeder[[b.to_bus for b in self.branches]]

    @cached_property
    def feeder_head(self) -> np.ndarray:
        """(F,) each feeder's first branch (its substation transformer)."""
        heads = [
            next(i for i, b in enumerate(self.branches) if b.from_bus == s)
            for s in self.slack
        ]
        return np.array(heads)

    @cached_property
    def supply_bus(self) -> np.ndarray:
        """(B,) bool: the points of supply whose voltage the limits hold: the buses
        that carry load (the background's locality buses and the stations' buses)."""
        out = (self.background_share > 0).any(axis=0)
        out[self.station_bus] = True
        out.flags.writeable = False
        return out

    @cached_property
    def v_floor_pu(self) -> np.ndarray:
        """(B,) [p.u.] each bus's lowest allowed voltage (``voltage_floor_pu``)."""
        out = np.array([voltage_floor_pu(b) for b in self.buses])
        out.flags.writeable = False
        return out

    @cached_property
    def station_dt_kva(self) -> np.ndarray:
        """(S,) [kVA] each station's distribution transformer rating (NaN: HT)."""
        out = np.full(len(self.station_branch), np.nan)
        for s, br in enumerate(self.station_branch.tolist()):
            t = self.branches[br].transformer if br >= 0 else None
            if t is not None:
                out[s] = t.sn_kva
        out.flags.writeable = False
        return out

    def impedance_pu(self) -> tuple[np.ndarray, np.ndarray]:
        """(r, x) of every branch [p.u.]."""
        z = [b.z_pu(self.buses[b.to_bus].vn_kv) for b in self.branches]
        return np.array([r for r, _ in z]), np.array([x for _, x in z])

    def rating_pu(self) -> np.ndarray:
        """Every branch's rating [p.u. of BASE_MVA]."""
        return np.array(
            [b.rating_mva(self.buses[b.to_bus].vn_kv) / BASE_MVA for b in self.branches]
        )


def background_injections(
    net: Network, background_kw: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Each feeder's background load ``background_kw`` (..., F) spread over its
    buses by ``background_share``: [kW], [kvar] (..., B)."""
    p = background_kw @ net.background_share
    return p, p * tan_phi(BACKGROUND_PF)


def station_injections(
    net: Network, station_kw: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Each station's EV load ``station_kw`` (S,) at its bus: [kW], [kvar] (B,)."""
    p = np.bincount(net.station_bus, weights=station_kw, minlength=len(net.buses))
    return p, p * tan_phi(EV_PF)


def bus_injections(
    net: Network, background_kw: np.ndarray, station_kw: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The load at every bus [kW], [kvar] (B,): the background (F,) and the
    stations' EV load (S,). Every network grid model's one statement of the loads."""
    (bp, bq), (ep, eq) = (
        background_injections(net, background_kw),
        station_injections(net, station_kw),
    )
    return bp + ep, bq + eq


# --- The city's feeders --------------------------------------------------------------


def substation_node(city: City, nodes: list[str]) -> str:
    """The feeder's substation locality: the station node with the least road km to
    all the others (the first in station order on a tie) [A]."""
    dist = {
        n: nx.single_source_dijkstra_path_length(city.graph, n, weight="km")
        for n in nodes
    }
    return min(nodes, key=lambda n: sum(dist[n][m] for m in nodes))


def trunk_conductor(capacity_kw: float) -> Conductor:
    """The lightest conductor whose rating at 11 kV carries the feeder's capacity
    at the background's power factor [A]."""
    need_mva = capacity_kw / 1000.0 / BACKGROUND_PF
    for c in CONDUCTORS:
        if math.sqrt(3) * 11.0 * c.max_i_ka >= need_mva:
            return c
    return CONDUCTORS[-1]


def lateral_conductor(sn_kva: float) -> Conductor:
    """The lightest conductor that carries a station's transformer [A]."""
    for c in CONDUCTORS:
        if math.sqrt(3) * 11.0 * c.max_i_ka * 1000.0 >= sn_kva:
            return c
    return CONDUCTORS[-1]


@cache
def city_network() -> Network:
    """The six feeders of ``load_city()`` as radial networks, built once per process."""
    return build_network(load_city())


def build_network(city: City) -> Network:
    buses: list[Bus] = []
    branches: list[Branch] = []
    slack: list[int] = []
    share_rows: list[dict[int, float]] = []
    station_bus = np.zeros(city.n_stations, dtype=np.int64)
    station_branch = np.full(city.n_stations, -1, dtype=np.int64)

    def bus(name: str, vn_kv: float, f: int, kind: str, node: str) -> int:
        buses.append(Bus(name, vn_kv, f, kind, node))
        return len(buses) - 1

    for f, feeder in enumerate(city.feeders):
        stations = [st for st in city.stations if st.feeder == f]
        nodes = list(dict.fromkeys(st.node for st in stations))
        root = substation_node(city, nodes)
        grid = bus(f"F{feeder.id} 66 kV grid", 66.0, f, "grid", root)
        slack.append(grid)
        hub = bus(f"F{feeder.id} {root} 11 kV", 11.0, f, "substation", root)
        branches.append(
            Branch(
                f"F{feeder.id} substation",
                grid,
                hub,
                transformer=SUBSTATION_TRANSFORMER,
            )
        )
        # Line sections along the shortest road paths from the substation.
        paths = nx.single_source_dijkstra_path(city.graph, root, weight="km")
        at = {root: hub}
        trunk = trunk_conductor(feeder.capacity_kw)
        for n in nodes:
            for a, b in zip(paths[n][:-1], paths[n][1:], strict=True):
                if b in at:
                    continue
                at[b] = bus(f"F{feeder.id} {b}", 11.0, f, "locality", b)
                km = float(city.graph.edges[a, b]["km"])
                branches.append(
                    Branch(f"F{feeder.id} {a} - {b}", at[a], at[b], km, trunk)
                )
        share_rows.append({i: 1.0 / len(at) for i in at.values()})
        # Each station: an 11 kV tap and its distribution transformer (or HT).
        for st in stations:
            kva = dt_kva(st.limit_kw)
            tap = bus(f"S{st.id} {st.name} 11 kV", 11.0, f, "tap", st.node)
            lateral = lateral_conductor(kva or st.limit_kw / EV_PF)
            branches.append(Branch(f"S{st.id} tap", at[st.node], tap, TAP_KM, lateral))
            if kva is None:
                station_bus[st.id - 1] = tap
                continue
            lv = bus(f"S{st.id} {st.name} LV", LV_KV, f, "lv", st.node)
            station_branch[st.id - 1] = len(branches)
            branches.append(
                Branch(
                    f"S{st.id} DT", tap, lv, transformer=distribution_transformer(kva)
                )
            )
            station_bus[st.id - 1] = lv
    share = np.zeros((len(slack), len(buses)))
    for f, row in enumerate(share_rows):
        share[f, list(row)] = list(row.values())
    for a in (share, station_bus, station_branch):
        a.flags.writeable = False
    return Network(
        tuple(buses), tuple(branches), tuple(slack), share, station_bus, station_branch
    )
