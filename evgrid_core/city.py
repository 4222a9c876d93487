"""Bengaluru: localities, the road graph, the 25 charging stations and 6 BESCOM feeders.

Every figure carries its source. Tags as in ``shared/reference/bangalore``:
[V] stated in the cited source, [D] derived from cited data, [A] an assumption.
Localities and road km come from ``data/localities.csv`` and ``data/edges.csv``
(BMTC stop coordinates and BMTC route lengths, see ``bangalore_facts.md`` §1).
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import networkx as nx
import numpy as np

from .chargers import N_KINDS

DATA = Path(__file__).parent / "data"

# --- Stations ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Station:
    """A public charging station at a locality node of the road graph."""

    id: int  # 1..25, written S<id>
    name: str
    node: str  # locality name in the road graph
    lat: float  # [deg]
    lon: float  # [deg]
    feeder: int  # index into FEEDERS
    plugs: tuple[int, ...]  # plugs per charger kind (chargers.CHARGERS' order)
    limit_kw: float  # [kW] sanctioned connection limit shared by all plugs
    open_hour: int  # [h] opens at (0 = always open)
    close_hour: int  # [h] closes at (24 = always open)

    def is_open(self, minute_of_day: float) -> bool:
        hour = (minute_of_day // 60) % 24
        return self.open_hour <= hour < self.close_hour


# (id, short name, locality node, plugs per kind (SLOW, FAST, ULTRA), limit kW,
# feeder, open, close)
# Charger mix and limits [A]: BESCOM-type sites are mostly AC with a couple of DC
# units on an LT connection up to 150 kW [V] (KERC order 1-Aug-2024); hubs at IT
# parks and transit points have 150 kW DC on a 500 kVA transformer or HT [A]
# (DT sizes 25-500 kVA [V], NIE 2022-03-31). BESCOM sites keep 06:00-22:00 hours
# [V] (Deccan Herald ~2021: "136 ports at 74 locations, open 06:00-22:00"); the
# airport hub runs 24x7 [V] (Hindustan Times / The Hindu 2024-08-22); private
# hubs are assumed 24x7 [A]. The airport hub's 20 points are scaled to 16 plugs
# and its 400 kW is its limit [V] (Hindustan Times: 400 kW, 20 fast points).
_STATIONS = (
    (1, "Majestic", "Majestic (Kempegowda Bus Stn / KSR)", (6, 4, 2), 400, 0, 0, 24),
    (2, "BESCOM HQ", "KR Circle (BESCOM Corporate Office)", (4, 2, 0), 100, 0, 6, 22),
    (3, "MG Road", "MG Road", (4, 4, 1), 250, 0, 0, 24),
    (4, "Shantinagar", "Shantinagar (TTMC)", (6, 2, 0), 120, 5, 6, 22),
    (5, "Koramangala", "Koramangala", (4, 4, 2), 400, 2, 0, 24),
    (6, "Indiranagar", "Indiranagar", (4, 2, 1), 200, 1, 0, 24),
    (7, "Manyata", "Nagawara (Manyata Tech Park)", (6, 4, 2), 400, 3, 0, 24),
    (8, "BTM Layout", "BTM Layout", (4, 2, 0), 100, 2, 6, 22),
    (9, "HSR Layout", "HSR Layout", (4, 4, 1), 250, 2, 0, 24),
    (10, "Bellandur", "Bellandur", (4, 4, 2), 400, 2, 0, 24),
    (11, "Marathahalli", "Marathahalli", (4, 4, 1), 250, 1, 0, 24),
    (12, "Whitefield", "Whitefield (ITPL/TTMC)", (6, 4, 2), 400, 1, 0, 24),
    (13, "Mahadevapura", "Mahadevapura", (4, 2, 0), 100, 1, 6, 22),
    (14, "KR Puram", "KR Puram", (4, 2, 1), 200, 1, 0, 24),
    (15, "Banaswadi", "Banaswadi", (4, 2, 0), 100, 3, 6, 22),
    (16, "Hebbal", "Hebbal", (4, 4, 2), 400, 3, 0, 24),
    (17, "Yelahanka", "Yelahanka", (4, 2, 0), 100, 3, 6, 22),
    (18, "Airport", "Kempegowda Intl Airport (Devanahalli)", (4, 10, 2), 400, 3, 0, 24),
    (19, "Malleshwaram", "Malleshwaram", (4, 2, 0), 100, 0, 6, 22),
    (20, "Yeshwanthpur", "Yeshwanthpur (TTMC)", (6, 2, 1), 200, 4, 0, 24),
    (21, "Peenya", "Peenya", (4, 4, 1), 250, 4, 0, 24),
    (22, "Rajajinagar", "Rajajinagar", (4, 2, 0), 100, 4, 6, 22),
    (23, "Vijayanagar", "Vijayanagar (TTMC)", (6, 2, 0), 120, 5, 6, 22),
    (24, "Jayanagar", "Jayanagar (4th Block TTMC)", (4, 4, 1), 250, 5, 0, 24),
    (25, "Electronic City", "Electronic City", (4, 4, 2), 400, 2, 0, 24),
)

# --- Feeders --------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Feeder:
    """A BESCOM 11 kV feeder that several stations hang on."""

    id: int  # 1..6, written F<id>
    name: str
    capacity_kw: float  # [kW] thermal limit
    peak_background: float  # [0-1] background load / capacity at the daily peak hour


N_STATIONS = len(_STATIONS)

# Capacity: a BESCOM 11 kV Rabbit line "will carry up to 3,000 kVA" [V] (Deccan
# Herald); 11 kV x 200-300 A = 3.8-5.7 MVA [A]; suggested 3-5 MW [A]. Peak
# background fractions are set so the limit binds at the evening peak once EVs
# charge [A] (no hourly BESCOM feeder data was found [U]).
FEEDERS = (
    Feeder(1, "Central (Majestic-MG Road)", 4000.0, 0.93),
    Feeder(2, "East (Indiranagar-Whitefield)", 5000.0, 0.92),
    Feeder(3, "South-East (Koramangala-E City)", 5000.0, 0.91),
    Feeder(4, "North (Hebbal-Airport)", 4500.0, 0.92),
    Feeder(5, "West (Yeshwanthpur-Peenya)", 3500.0, 0.93),
    Feeder(6, "South (Jayanagar-Vijayanagar)", 3000.0, 0.94),
)

# --- Localities and roads ----------------------------------------------------------

INTRA_NODE_KM = 2.0  # [km] drive within one locality to its station [A]


@dataclass(frozen=True)
class City:
    """The static city: nodes, road graph, stations, feeders and road distances."""

    nodes: tuple[str, ...]  # locality names, graph order
    coords: dict[str, tuple[float, float]]  # node -> (lat, lon)
    graph: nx.Graph  # edges carry km and corridor
    stations: tuple[Station, ...]
    feeders: tuple[Feeder, ...]
    road_km: np.ndarray  # [km] (n_nodes, n_stations) shortest road distance

    @property
    def n_stations(self) -> int:
        return len(self.stations)

    def node_index(self, name: str) -> int:
        return self.nodes.index(name)

    def path(self, origin: str, station: int) -> list[str]:
        """The road route (list of node names) from a node to a station's node."""
        return _shortest_path(self, origin, self.stations[station - 1].node)


def _shortest_path(city: City, a: str, b: str) -> list[str]:
    return nx.shortest_path(city.graph, a, b, weight="km")


def _read_csv(name: str) -> list[dict[str, str]]:
    with open(DATA / name, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


@cache
def load_city() -> City:
    """Build the city once per process (about 10 ms); it is immutable."""
    localities = _read_csv("localities.csv")
    coords = {r["name"]: (float(r["lat"]), float(r["lon"])) for r in localities}
    graph = nx.Graph()
    for name, (lat, lon) in coords.items():
        graph.add_node(name, lat=lat, lon=lon)
    for e in _read_csv("edges.csv"):
        graph.add_edge(
            e["from"], e["to"], km=float(e["road_km_est"]), corridor=e["corridor"]
        )
    stations = tuple(
        Station(sid, short, node, *coords[node], feeder, plugs, float(lim), op, cl)
        for sid, short, node, plugs, lim, feeder, op, cl in _STATIONS
    )
    if any(len(st.plugs) != N_KINDS for st in stations):
        raise ValueError(
            f"every station needs a plug count per charger kind ({N_KINDS})"
        )
    nodes = tuple(coords)
    dist = dict(nx.all_pairs_dijkstra_path_length(graph, weight="km"))
    road_km = np.array(
        [
            [dist[n][st.node] if n != st.node else INTRA_NODE_KM for st in stations]
            for n in nodes
        ]
    )
    road_km.flags.writeable = False  # one city per process, shared by every episode
    return City(nodes, coords, graph, stations, FEEDERS, road_km)


def haversine_km(a: tuple[float, float], b: tuple[float, float]) -> float:
    """Great-circle distance between two (lat, lon) points."""
    lat1, lon1, lat2, lon2 = map(math.radians, (*a, *b))
    h = (
        math.sin((lat2 - lat1) / 2) ** 2
        + math.cos(lat1) * math.cos(lat2) * math.sin((lon2 - lon1) / 2) ** 2
    )
    return 2 * 6371.0 * math.asin(math.sqrt(h))
