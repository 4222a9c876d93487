"""The validator: ``validate_action(world, action) -> (ok, reason)``.

Also the route mask (which (station, kind) pairs are valid for the current
request) and the valid DEFER options, computed with the same predicates for all
choices at once; tests check they agree with the validator on every choice.
"""

from __future__ import annotations

import numpy as np

from .actions import DEFER_MINUTES, Action, ChargerKind, Defer, LoadShift, Route
from .city import CHARGER_DC, vehicle_kw
from .world import World


def validate_action(w: World, action: Action) -> tuple[bool, str]:
    """Is ``action`` allowed now? Returns (ok, reason); reason is "" when ok."""
    if w.finished or not w.pending:
        return False, "the episode is over"
    ev = w.pending[0]
    if isinstance(action, (Route, Defer)):
        # Any EV waiting for a decision at this tick may be decided, the named one first
        # by default (the observation describes it); others only by their id.
        ev = action.ev - 1
        if ev not in w.pending:
            waiting = " ".join(f"E{i + 1}" for i in w.pending[:6]) + (
                " ..." if len(w.pending) > 6 else ""
            )
            return (
                False,
                f"E{action.ev} is not waiting for a decision now (waiting: {waiting})",
            )
    if isinstance(action, Route):
        # The mask's tables judge the pair; the rule restated below names the problem
        # (tests check the two agree on every pair).
        if route_allowed(w, ev, action.station, int(action.kind)):
            return True, ""
        problem = route_problem(w, ev, action.station, int(action.kind))
        return (False, problem) if problem else (True, "")
    if isinstance(action, Defer):
        problem = defer_problem(w, ev, action.minutes)
        return (False, problem) if problem else (True, "")
    if isinstance(action, LoadShift):
        problem = shift_problem(w, action.station)
        return (False, problem) if problem else (True, "")
    return False, f"not an action: {action!r}"


def route_problem(w: World, ev: int, station: int, kind: int) -> str | None:
    n = w.tables.city.n_stations
    if not 1 <= station <= n:
        return f"no station S{station} (stations are S1..S{n})"
    s = station - 1
    if w.tables.plugs_rows[s][kind] == 0:
        return f"S{station} has no {ChargerKind(kind).name} charger"
    if vehicle_kw(kind, w.max_ac_list[ev], w.max_dc_list[ev]) <= 0:
        if CHARGER_DC[kind]:
            return f"E{ev + 1} has no DC inlet; {ChargerKind(kind).name} is DC"
        return f"E{ev + 1} cannot take AC charging"
    km = w.tables.road_km_rows[w.node_list[ev]][s]
    reach = w.range_km(ev)
    if km > reach:
        return (
            f"S{station} is {km:.1f} km away, beyond E{ev + 1}'s {reach:.1f} km range"
        )
    minutes = w.travel_minutes_to(ev, s)
    if minutes > w.config.max_travel_minutes:
        return f"S{station} is {minutes:.0f} min away (limit {w.config.max_travel_minutes:.0f})"
    arrive = w.tick + w.travel_ticks(minutes)
    if not w.station_open(s) or (arrive < w.n_ticks and not w.station_open(s, arrive)):
        return f"S{station} is closed"
    return None


def defer_problem(w: World, ev: int, minutes: int) -> str | None:
    return _defer_problem(w, ev, minutes, *_defer_inputs(w, ev))


def defer_options(w: World, ev: int) -> tuple[int, ...]:
    """The DEFER minutes ``defer_problem`` allows for ``ev`` now.

    Each of the rule's conditions, if it allows some minutes, allows every shorter
    option too, so the allowed options are the shortest ones: asked from the
    longest down, the first allowed one ends the search (most often at once).
    """
    inputs = _defer_inputs(w, ev)  # read once for all the options
    for i in range(len(DEFER_MINUTES) - 1, -1, -1):
        if _defer_problem(w, ev, DEFER_MINUTES[i], *inputs) is None:
            return DEFER_MINUTES[: i + 1]
    return ()


def _defer_inputs(w: World, ev: int) -> tuple[int, float, float]:
    """What the DEFER rule reads about ``ev``: defers so far, now, patience [min]."""
    return w.defers[ev], w.minute, w.patience_list[ev]


def _defer_problem(
    w: World, ev: int, minutes: int, defers: int, now: float, patience: float
) -> str | None:
    # A condition that allows some minutes must allow every shorter option too:
    # defer_options relies on it (tests check it against every option).
    cfg = w.config
    if defers >= cfg.max_defers:
        return f"E{ev + 1} was already deferred {cfg.max_defers} times"
    if now + minutes > patience:
        left = max(0.0, patience - now)
        return f"E{ev + 1} gives up in {left:.0f} min; cannot defer {minutes}"
    if w.tick + minutes // cfg.tick_minutes >= w.n_ticks:
        return "cannot defer past the end of the episode"
    return None


def shift_problem(w: World, station: int) -> str | None:
    n = w.tables.city.n_stations
    if not 1 <= station <= n:
        return f"no station S{station} (stations are S1..S{n})"
    if w.shift_until[station - 1] > w.tick:
        return f"S{station} is already load-shifted"
    if w.shifts_this_tick >= w.config.max_load_shifts_per_tick:
        return f"at most {w.config.max_load_shifts_per_tick} LOAD_SHIFTs per tick"
    return None


def route_mask(w: World) -> np.ndarray:
    """(S, 3) bool: which ROUTE (station, kind) the current request may take.

    Read-only while a request is pending: when every station is within the EV's
    range (the common case) it is the scenario table's own row.
    """
    S = w.tables.city.n_stations
    if w.finished or not w.pending:
        return np.zeros((S, 3), dtype=bool)
    ev = w.pending[0]
    node = w.node_list[ev]
    mask = w.tables.routable_by_inlet[w._t(), node, w.inlet[ev]]
    reach = w.range_km(ev)
    if reach >= w.tables.far_km[node]:
        return mask
    mask = mask & (w.tables.city.road_km[node] <= reach)[:, None]
    mask.flags.writeable = False
    return mask


def route_allowed(w: World, ev: int, station: int, kind: int) -> bool:
    """The route mask's answer for one pair, from the same tables (no reason given)."""
    if not 1 <= station <= w.tables.city.n_stations:
        return False
    node, s = w.node_list[ev], station - 1
    return bool(
        w.tables.routable_by_inlet[w._t(), node, w.inlet[ev], s, kind]
    ) and w.tables.road_km_rows[node][s] <= w.range_km(ev)
