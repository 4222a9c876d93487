"""The validator: ``validate_action(world, action) -> (ok, reason)``.

Also the route mask (which (station, kind) pairs are valid for the current
request) and the valid DEFER options, computed with the same predicates for all
choices at once; tests check they agree with the validator on every choice.
A ROUTE is judged from the scenario's tables (``tables.py``: the trip rule, per
tick, locality and station) and the EV's inlets and range; a refused one is
named by the first of those parts that fails.
"""

from __future__ import annotations

import numpy as np

from .actions import DEFER_MINUTES, Action, Defer, LoadShift, Route, field_problem
from .chargers import CHARGER_DC, KIND_NAMES, KINDS_BY_INLET, N_KINDS
from .world import World


def validate_action(w: World, action: Action) -> tuple[bool, str]:
    """Is ``action`` allowed now? Returns (ok, reason); reason is "" when ok.

    The one validator, whichever way the action arrived (text, typed, an index, the
    wire): first its fields against the syntax (``field_problem``: a typed
    ``Defer(ev, -5)`` is refused as the line ``DEFER E1 -5`` is), then the state.
    """
    if w.finished or not w.pending:
        return False, "the episode is over"
    problem = field_problem(action)
    if problem is not None:
        return False, problem
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
        # The mask's tables judge the pair; their parts name a refused pair's problem.
        if route_allowed(w, ev, action.station, int(action.kind)):
            return True, ""
        return False, route_problem(w, ev, action.station, int(action.kind)) or ""
    if isinstance(action, Defer):
        problem = defer_problem(w, ev, action.minutes)
        return (False, problem) if problem else (True, "")
    if isinstance(action, LoadShift):
        problem = shift_problem(w, action.station)
        return (False, problem) if problem else (True, "")
    return False, f"not an action: {action!r}"


def route_problem(w: World, ev: int, station: int, kind: int) -> str | None:
    """Why ``route_allowed`` refuses the pair: its first failing part (None: allowed)."""
    tables = w.tables
    n = tables.city.n_stations
    if not 1 <= station <= n:
        return f"no station S{station} (stations are S1..S{n})"
    s, node, t = station - 1, w.evs.node[ev], w._t()
    name = KIND_NAMES[kind]
    if tables.plugs_rows[s][kind] == 0:
        return f"S{station} has no {name} charger"
    if not KINDS_BY_INLET[w.evs.inlet[ev], kind]:
        if CHARGER_DC[kind]:
            return f"E{ev + 1} has no DC inlet; {name} is DC"
        return f"E{ev + 1} cannot take AC charging"
    if not in_range(w, ev, s):
        km, reach = tables.road_km_rows[node][s], w.range_km(ev)
        return (
            f"S{station} is {km:.1f} km away, beyond E{ev + 1}'s {reach:.1f} km range"
        )
    if not tables.in_radius[t, node, s]:
        minutes, limit = tables.travel_min[t, node, s], w.config.max_travel_minutes
        return f"S{station} is {minutes:.0f} min away (limit {limit:.0f})"
    if not (tables.open_rows[t][s] and tables.open_on_arrival[t, node, s]):
        return f"S{station} is closed"
    return None


def in_range(w: World, ev: int, s: int) -> bool:
    """Whether station index ``s`` is within the EV's remaining range (road km)."""
    return w.tables.road_km_rows[w.evs.node[ev]][s] <= w.range_km(ev)


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
    return w.defers[ev], w.minute, w.evs.patience_minute[ev]


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
        return np.zeros((S, N_KINDS), dtype=bool)
    ev = w.pending[0]
    node = w.evs.node[ev]
    mask = w.tables.routable_by_inlet[w._t(), node, w.evs.inlet[ev]]
    reach = w.range_km(ev)
    if reach >= w.tables.far_km[node]:
        return mask
    # in_range for every station at once
    mask = mask & (w.tables.city.road_km[node] <= reach)[:, None]
    mask.flags.writeable = False
    return mask


def route_allowed(w: World, ev: int, station: int, kind: int) -> bool:
    """The route mask's answer for one pair, from the same tables (no reason given)."""
    if not 1 <= station <= w.tables.city.n_stations:
        return False
    s = station - 1
    return bool(
        w.tables.routable_by_inlet[w._t(), w.evs.node[ev], w.evs.inlet[ev], s, kind]
    ) and in_range(w, ev, s)
