"""The decisions, as kernels over the episode's arrays (``state.py``).

ROUTE, DEFER, LOAD_SHIFT and the stranding an invalid answer causes: what each
does to the state and the reward parts it charges; and the load the ROUTEs so far
commit to the stations (``inbound_kw``). They are applied only after
the validator (``rules.validate_action``) has accepted the action; ``World``
calls them, and a batch of episodes can call them from a kernel.
"""

from __future__ import annotations

from .charging import plug_kw
from .jit import kernel
from .state import (
    DEFERRED,
    I_HI,
    I_LO,
    I_N_PENDING,
    I_ORDER,
    I_SHIFTS,
    P_DEFER_ABUSE,
    P_LOAD_SHIFT,
    P_WAIT,
    R_TICK_MINUTES,
    STRANDED,
    TRAVELING,
)  # fmt: skip
from .ticks import leave_unserved


@kernel(inline=True)
def remove_pending(st, ev: int) -> None:  # noqa: ANN001
    """``ev`` is decided: out of the pending list, the others kept in order."""
    n = st.ints[I_N_PENDING]
    j = 0
    for i in range(n):
        if st.pending[i] != ev:
            st.pending[j] = st.pending[i]
            j += 1
    st.ints[I_N_PENDING] = j


@kernel(inline=True)
def route(st, rules, ev: int, station: int, kind: int, parts) -> None:  # noqa: ANN001
    """Send ``ev`` to ``station`` (1-based) on a ``kind`` charger: it drives now."""
    s, node, t = station - 1, st.node[ev], st.ints[0]
    km = rules.road_km[node, s]
    ticks = rules.travel_ticks[t, node, s]
    tm = rules.numbers[R_TICK_MINUTES]
    minute = float(t * tm)
    remove_pending(st, ev)
    st.status[ev] = TRAVELING
    st.station[ev], st.kind[ev] = s, kind
    st.soc[ev] -= km / st.km_per_kwh[ev] / st.battery_kwh[ev]
    st.depart_minute[ev] = minute
    st.arrive_minute[ev] = minute + ticks * tm
    st.due_tick[ev] = t + ticks
    st.order[ev] = st.ints[I_ORDER]  # reaching in ROUTE order
    st.ints[I_ORDER] += 1
    st.inbound[s, kind] += 1
    parts[P_WAIT] -= rules.weights[P_WAIT] * ticks * tm


@kernel(inline=True)
def inbound_kw(st, ticks: int, out) -> None:  # noqa: ANN001
    """``out`` (S,) [kW]: what the EVs driving to each station will draw there, those
    arriving within ``ticks`` ticks from now: the load the ROUTEs so far commit to
    its feeder, each EV at its plug kW (min(charger, vehicle)). One that will queue
    is counted too: it takes the next free plug."""
    out[:] = 0.0
    until = st.ints[0] + ticks
    for ev in range(st.ints[I_LO], st.ints[I_HI]):
        if st.status[ev] == TRAVELING and st.due_tick[ev] < until:
            out[st.station[ev]] += plug_kw(st.kind[ev], st.max_ac_kw[ev],
                                           st.max_dc_kw[ev])  # fmt: skip


@kernel(inline=True)
def defer(st, rules, ev: int, minutes: int, parts) -> None:  # noqa: ANN001
    """Ask ``ev`` to wait ``minutes``: it asks again at that tick."""
    w = rules.weights
    remove_pending(st, ev)
    st.status[ev] = DEFERRED
    parts[P_WAIT] -= w[P_WAIT] * minutes
    parts[P_DEFER_ABUSE] -= w[P_DEFER_ABUSE] * st.defers[ev]
    st.defers[ev] += 1
    st.due_tick[ev] = st.ints[0] + minutes // int(rules.numbers[R_TICK_MINUTES])


@kernel(inline=True)
def load_shift(st, rules, station: int, cap_pct: int, minutes: int, parts) -> None:  # noqa: ANN001
    """Cap ``station`` (1-based) at ``cap_pct`` % of its limit for ``minutes``."""
    s = station - 1
    st.shift_until[s] = st.ints[0] + minutes // int(rules.numbers[R_TICK_MINUTES])
    st.shift_cap_kw[s] = rules.limit_kw[s] * cap_pct / 100.0
    st.ints[I_SHIFTS] += 1
    parts[P_LOAD_SHIFT] -= rules.weights[P_LOAD_SHIFT]


@kernel(inline=True)
def strand(st, rules, ev: int, parts) -> None:  # noqa: ANN001
    """An invalid answer turns away the EV being decided."""
    if st.ints[I_N_PENDING] and st.pending[0] == ev:
        remove_pending(st, ev)
    leave_unserved(st, rules, ev, STRANDED, parts)
