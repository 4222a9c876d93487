"""What the validator asks of the state, as kernels: one rule each, in one place.

Whether a ROUTE pair is allowed (the scenario's route table, read for the EV's
inlets, and its range), which DEFER minutes and LOAD_SHIFTs are allowed, and the
whole step (``try_action``: judge, then apply) that ``EVGridEnv.step`` and a batch
of episodes (``batch.py``) run compiled. ``rules.py`` asks these and words the
answer (``rules.validate_action``'s reasons); it decides nothing itself.

Codes (``try_action``'s and the ``*_code`` kernels' answers): ``OK``; ``REFUSED_ROUTE``
(the pair is not allowed: ``rules.route_problem`` names which part fails);
``NOT_PENDING`` (the named EV is not waiting for a decision); the DEFER rule's
``TOO_MANY_DEFERS``, ``PAST_PATIENCE``, ``PAST_END``; the LOAD_SHIFT rule's
``NO_STATION``, ``ALREADY_SHIFTED``, ``SHIFTS_USED``.
"""

from __future__ import annotations

from . import decide
from .actions import DEFER_MINUTES
from .jit import kernel
from .state import (
    I_N_PENDING,
    I_SHIFTS,
    I_TICK,
    R_MAX_DEFERS,
    R_MAX_SHIFTS,
    R_TICK_MINUTES,
)  # fmt: skip

(OK, REFUSED_ROUTE, NOT_PENDING, TOO_MANY_DEFERS, PAST_PATIENCE, PAST_END, NO_STATION,
 ALREADY_SHIFTED, SHIFTS_USED) = range(9)  # fmt: skip
A_ROUTE, A_DEFER, A_LOAD_SHIFT = range(3)  # try_action's kinds of action


@kernel(inline=True)
def range_km(st, ev: int) -> float:  # noqa: ANN001
    """How far the EV can drive on its charge now [km]."""
    return st.soc[ev] * st.battery_kwh[ev] * st.km_per_kwh[ev]


@kernel(inline=True)
def _pair_allowed(allowed, road_km, reach_km: float, s: int, kind: int) -> bool:  # noqa: ANN001
    """The ROUTE rule's test of one pair: the scenario's table for the EV's locality,
    inlets and tick (``allowed``, (S, K)) and the drive within its range."""
    return allowed[s, kind] & (road_km[s] <= reach_km)  # no branch: the masks' loop


@kernel(inline=True)
def route_ok(st, rules, ev: int, station: int, kind: int) -> bool:  # noqa: ANN001
    """The ROUTE rule for one pair (``station`` 1-based): the scenario's table for
    the EV's locality and inlets now (drive within the radius, open on arrival, the
    kind there and taken by the EV), and the station within its range."""
    n_stations = rules.plugs.shape[0]
    if station < 1 or station > n_stations or kind < 0 or kind >= rules.plugs.shape[1]:
        return False
    node = st.node[ev]
    t = min(st.ints[I_TICK], rules.station_open.shape[0] - 1)
    return _pair_allowed(rules.routable[t, node, st.inlet[ev]], rules.road_km[node],
                         range_km(st, ev), station - 1, kind)  # fmt: skip


@kernel(inline=True)
def route_row(st, rules, ev: int, out) -> None:  # noqa: ANN001
    """``route_ok`` of every pair at once (the masks' and the views' loop), into
    ``out`` (S * K,: pair (s, k) at s * K + k, True or 1.0 where allowed)."""
    n_stations, n_kinds = rules.plugs.shape[0], rules.plugs.shape[1]
    node = st.node[ev]
    t = min(st.ints[I_TICK], rules.station_open.shape[0] - 1)
    allowed, road, reach = (
        rules.routable[t, node, st.inlet[ev]],
        rules.road_km[node],
        range_km(st, ev),
    )
    for s in range(n_stations):
        for k in range(n_kinds):
            out[s * n_kinds + k] = _pair_allowed(allowed, road, reach, s, k)


@kernel(inline=True)
def defer_code(st, rules, ev: int, minutes: int) -> int:  # noqa: ANN001
    """The DEFER rule. Each condition that allows some minutes allows every shorter
    option too (``defer_count`` relies on it)."""
    if st.defers[ev] >= rules.numbers[R_MAX_DEFERS]:
        return TOO_MANY_DEFERS
    tick, tm = st.ints[I_TICK], int(rules.numbers[R_TICK_MINUTES])
    if float(tick * tm) + minutes > st.patience_minute[ev]:
        return PAST_PATIENCE
    if tick + minutes // tm >= rules.station_open.shape[0]:
        return PAST_END
    return OK


@kernel(inline=True)
def defer_count(st, rules, ev: int) -> int:  # noqa: ANN001
    """How many of the (ascending) ``DEFER_MINUTES`` are allowed: the shortest ones,
    so asked from the longest down the first allowed one ends the search."""
    for i in range(len(DEFER_MINUTES) - 1, -1, -1):
        if defer_code(st, rules, ev, DEFER_MINUTES[i]) == OK:
            return i + 1
    return 0


@kernel(inline=True)
def shift_code(st, rules, station: int) -> int:  # noqa: ANN001
    """The LOAD_SHIFT rule (``station`` 1-based)."""
    if station < 1 or station > rules.plugs.shape[0]:
        return NO_STATION
    if st.shift_until[station - 1] > st.ints[I_TICK]:
        return ALREADY_SHIFTED
    if st.ints[I_SHIFTS] >= rules.numbers[R_MAX_SHIFTS]:
        return SHIFTS_USED
    return OK


@kernel(inline=True)
def is_pending(st, ev: int) -> bool:  # noqa: ANN001
    n = st.ints[I_N_PENDING]
    i = 0
    while i < n and st.pending[i] != ev:
        i += 1
    return i < n


@kernel(inline=True)
def try_action(st, rules, what: int, a: int, b: int, c: int, parts) -> int:  # noqa: ANN001
    """Judge an action whose fields are within the syntax and, if allowed, apply it.

    ``what``: A_ROUTE (ev id ``a``, station ``b``, kind ``c``), A_DEFER (ev id ``a``,
    ``b`` minutes), A_LOAD_SHIFT (station ``a``, ``b`` %, ``c`` minutes). Returns
    ``OK`` or the refusal's code, with the state untouched when refused.
    """
    if what == A_LOAD_SHIFT:
        code = shift_code(st, rules, a)
        if code == OK:
            decide.load_shift(st, rules, a, b, c, parts)
        return code
    ev = a - 1
    if not is_pending(st, ev):
        return NOT_PENDING
    if what == A_ROUTE:
        if not route_ok(st, rules, ev, b, c):
            return REFUSED_ROUTE
        decide.route(st, rules, ev, b, c, parts)
        return OK
    code = defer_code(st, rules, ev, b)
    if code == OK:
        decide.defer(st, rules, ev, b, parts)
    return code
