"""The validator: ``validate_action(world, action) -> (ok, reason)``.

The rules themselves are kernels (``judge.py``: the ROUTE table and range, the
DEFER and LOAD_SHIFT conditions), run through the world; here they are asked and
their answers worded. Also the route mask (which (station, kind) pairs are valid
for the current request) and the valid DEFER options, from the same kernels; tests
check they agree with the validator on every choice. A refused ROUTE is named by
the first part of the scenario's tables (``tables.py``: the trip rule, per tick,
locality and station) or of the EV's inlets and range that fails.
"""

from __future__ import annotations

import numpy as np

from . import entry, judge
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
            return False, not_pending_problem(w, action.ev)
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


def refusal(w: World, action: Action, code: int) -> str:
    """The reason for ``judge``'s refusal ``code`` of ``action`` (state unchanged)."""
    if code == judge.NOT_PENDING:
        return not_pending_problem(w, action.ev)  # type: ignore[union-attr]
    if code == judge.REFUSED_ROUTE:
        assert isinstance(action, Route)
        return route_problem(w, action.ev - 1, action.station, int(action.kind)) or ""
    if isinstance(action, Defer):
        return _defer_reason(w, action.ev - 1, action.minutes, code)
    return _shift_reason(w, action.station, code)  # type: ignore[union-attr]


def not_pending_problem(w: World, ev_id: int) -> str:
    waiting = " ".join(f"E{i + 1}" for i in w.pending[:6]) + (
        " ..." if len(w.pending) > 6 else ""
    )
    return f"E{ev_id} is not waiting for a decision now (waiting: {waiting})"


def route_problem(w: World, ev: int, station: int, kind: int) -> str | None:
    """Why ``route_allowed`` refuses the pair: its first failing part (None: allowed)."""
    if route_allowed(w, ev, station, kind):
        return None
    tables = w.tables
    n = tables.city.n_stations
    if not 1 <= station <= n:
        return f"no station S{station} (stations are S1..S{n})"
    s, node, t = station - 1, w.evs.node[ev], w.table_row()
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
    # The table's last part: open now and on arrival (``tables.reachable``).
    return f"S{station} is closed"


def in_range(w: World, ev: int, s: int) -> bool:
    """Whether station index ``s`` is within the EV's remaining range (road km)."""
    return w.tables.road_km_rows[w.evs.node[ev]][s] <= w.range_km(ev)


def defer_problem(w: World, ev: int, minutes: int) -> str | None:
    code = w.ask(entry.DEFER_CODE, ev, minutes)
    return None if code == judge.OK else _defer_reason(w, ev, minutes, code)


def _defer_reason(w: World, ev: int, minutes: int, code: int) -> str:
    if code == judge.TOO_MANY_DEFERS:
        return f"E{ev + 1} was already deferred {w.config.max_defers} times"
    if code == judge.PAST_PATIENCE:
        left = max(0.0, w.evs.patience_minute[ev] - w.minute)
        return f"E{ev + 1} gives up in {left:.0f} min; cannot defer {minutes}"
    return "cannot defer past the end of the episode"


def defer_options(w: World, ev: int) -> tuple[int, ...]:
    """The DEFER minutes ``defer_problem`` allows for ``ev`` now: the shortest ones
    (``judge.defer_count``; tests check it against every option)."""
    return DEFER_MINUTES[: w.request_view(ev)[1]]


def shift_problem(w: World, station: int) -> str | None:
    code = w.ask(entry.SHIFT_CODE, station)
    return None if code == judge.OK else _shift_reason(w, station, code)


def _shift_reason(w: World, station: int, code: int) -> str:
    if code == judge.NO_STATION:
        n = w.tables.city.n_stations
        return f"no station S{station} (stations are S1..S{n})"
    if code == judge.ALREADY_SHIFTED:
        return f"S{station} is already load-shifted"
    return f"at most {w.config.max_load_shifts_per_tick} LOAD_SHIFTs per tick"


def route_mask(w: World) -> np.ndarray:
    """(S, 3) bool: which ROUTE (station, kind) the current request may take."""
    if w.finished or not w.pending:
        return np.zeros((w.tables.city.n_stations, N_KINDS), dtype=bool)
    return w.request_view(w.pending[0])[0]


def route_allowed(w: World, ev: int, station: int, kind: int) -> bool:
    """The route mask's answer for one pair (``judge.route_ok``; no reason given)."""
    S, K = w.tables.plugs.shape
    if not (1 <= station <= S and 0 <= kind < K):
        return False
    return bool(w.request_view(ev)[0][station - 1, kind])
