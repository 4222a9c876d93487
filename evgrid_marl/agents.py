"""Who the agents are: fleet operators (by EV class) and station operators (by feeder).

A fleet operator owns the EVs of one class (private cars through an app aggregator,
a 3-wheeler fleet, a cab fleet) and answers their requests with ROUTE or DEFER. A
station operator owns the stations hanging on one BESCOM feeder and may cap them
(LOAD_SHIFT). Ownership is read from the core's own tables (``EVRequest.klass``,
``Station.feeder``), so a new EV class or feeder is a new agent, not an edit here.
"""

from __future__ import annotations

from dataclasses import dataclass

from evgrid_core import load_city
from evgrid_core.fleet import CLASS_NAMES

FLEET_PREFIX = "fleet_"
OPERATOR_PREFIX = "operator_F"
ROLES = ("both", "fleets")  # which agents the env has (see EVGridParallelEnv)


@dataclass(frozen=True)
class Roster:
    """The agents of one env, in a fixed order (fleets first, then operators)."""

    fleets: tuple[str, ...]  # one per EV class, CLASS_NAMES' order
    operators: tuple[str, ...]  # one per feeder, F1.. order (empty: fleets only)
    stations_of: dict[str, tuple[int, ...]]  # operator -> its stations (1-based)
    operator_of_station: tuple[str | None, ...]  # (S,) 0-based station -> operator

    @property
    def agents(self) -> tuple[str, ...]:
        return self.fleets + self.operators

    def fleet_of_class(self, klass: str) -> str:
        return FLEET_PREFIX + klass

    def operator_of_feeder(self, feeder: int) -> str | None:
        """The operator of a feeder (0-based); None with no operators."""
        name = f"{OPERATOR_PREFIX}{feeder + 1}"
        return name if name in self.stations_of else None


def make_roster(roles: str = "both") -> Roster:
    """The agents for ``roles``: ``"both"`` (fleets and station operators) or
    ``"fleets"`` (fleets only; no LOAD_SHIFT)."""
    if roles not in ROLES:
        raise ValueError(f"roles must be one of {', '.join(ROLES)}, got {roles!r}")
    city = load_city()
    fleets = tuple(FLEET_PREFIX + k for k in CLASS_NAMES)
    stations_of: dict[str, tuple[int, ...]] = {}
    if roles == "both":
        for f in city.feeders:
            stations_of[f"{OPERATOR_PREFIX}{f.id}"] = tuple(
                st.id for st in city.stations if st.feeder == f.id - 1
            )
    operator_of_station = tuple(
        f"{OPERATOR_PREFIX}{st.feeder + 1}" if stations_of else None
        for st in city.stations
    )
    return Roster(fleets, tuple(stations_of), stations_of, operator_of_station)
