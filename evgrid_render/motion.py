"""Where each EV is drawn at a simulated minute: interpolated along its road route.

The core gives each travelling EV its origin locality, its station, and the
minutes it departed and arrives (``env.state()["evs"]``); the route is
``city.path(origin, station)``. The EV moves along that polyline at a uniform
pace between the two minutes. Nothing here changes the simulation.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

LatLon = tuple[float, float]


@dataclass(frozen=True)
class Route:
    """A road route as a polyline of (lat, lon), with cumulative road km."""

    points: tuple[LatLon, ...]
    cum_km: tuple[float, ...]  # [km] from the start, one per point

    def at(self, fraction: float) -> LatLon:
        """The point ``fraction`` (0..1) of the way along, by road km."""
        f = min(1.0, max(0.0, fraction))
        total = self.cum_km[-1]
        if len(self.points) == 1 or total <= 0:
            return self.points[-1] if f >= 1 else self.points[0]
        d = f * total
        i = min(bisect.bisect_right(self.cum_km, d), len(self.points) - 1)
        d0, d1 = self.cum_km[i - 1], self.cum_km[i]
        t = 0.0 if d1 <= d0 else (d - d0) / (d1 - d0)
        (a0, b0), (a1, b1) = self.points[i - 1], self.points[i]
        return a0 + (a1 - a0) * t, b0 + (b1 - b0) * t


class RouteBook:
    """Routes from a locality to a station, built once from the city's road graph."""

    def __init__(self, city) -> None:  # noqa: ANN001 - evgrid_core.City
        self.city = city
        self._routes: dict[tuple[str, int], Route] = {}

    def route(self, origin: str, station: int) -> Route:
        key = (origin, station)
        r = self._routes.get(key)
        if r is None:
            nodes = self.city.path(origin, station)
            pts = [self.city.coords[n] for n in nodes]
            cum = [0.0]
            for a, b in zip(nodes, nodes[1:], strict=False):
                cum.append(cum[-1] + float(self.city.graph.edges[a, b]["km"]))
            st = self.city.stations[station - 1]
            if len(pts) == 1:  # same locality: a short hop to the station marker
                pts.append((st.lat, st.lon))
                cum.append(cum[-1] + 1e-3)
            r = Route(tuple(pts), tuple(cum))
            self._routes[key] = r
        return r


def travel_fraction(minute: float, depart: float, arrive: float) -> float:
    """How far along its trip an EV is at ``minute`` (0 before, 1 after)."""
    if arrive <= depart:
        return 1.0
    return min(1.0, max(0.0, (minute - depart) / (arrive - depart)))


def ev_position(ev: dict, minute: float, book: RouteBook) -> LatLon | None:
    """(lat, lon) of a travelling EV at ``minute``; None if it is not on the road."""
    station = ev.get("station")
    if station is None or ev.get("depart_minute") is None:
        return None
    depart, arrive = float(ev["depart_minute"]), float(ev["arrive_minute"])
    if depart != depart or arrive != arrive:  # NaN: not routed
        return None
    if minute >= arrive:
        return None
    return book.route(ev["node"], station).at(travel_fraction(minute, depart, arrive))
