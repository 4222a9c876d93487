"""A tick of the world, as kernels over the episode's arrays (``state.py``).

The order of a tick's events: requests due now are collected (``collect_requests``)
and decided; then the EVs that reach their stations queue and free plugs are filled
first come, first served (``reach_and_plug``); the sessions draw (``charge_ask``),
the grid model carries the stations' load, the sessions get what it carried
(``charge_settle``); the reward's grid terms and the feeders' KPIs
(``grid_terms``); queue waits, give-ups and missed deadlines (``wait_and_patience``).
``advance`` runs ticks until one has a request, in one compiled call under the
feeder sum (``carry_feeder_sum``: ``grid.FeederSum``'s rule); other grid models
carry from Python between ``charge_ask`` and ``charge_settle`` (``world.py``).

Every reward part is charged into a parts array in ``REWARD_KEYS``'s order, in the
order the events happen, so the floats are the same compiled or not.
"""

from __future__ import annotations

import numpy as np

from .charging import need_kwh, plug_kw, reached, soc_after, tapered_kw, tick_energy_kwh
from .grid import feeder_sum
from .jit import array_sum, kernel
from .reward import fossil_kwh
from .state import (
    CHARGING,
    DEFERRED,
    F_COST,
    F_ENERGY,
    F_PEAK_UTIL,
    F_RENEWABLE,
    F_SHED_KWH,
    F_UNMET,
    GAVE_UP,
    I_FINISHED,
    I_GAVE_UP,
    I_HI,
    I_LO,
    I_N_GAVE_UP_NOW,
    I_N_PENDING,
    I_N_PLUGGED,
    I_N_WAITS,
    I_ON_TIME,
    I_ORDER,
    I_OVERLOAD_TICKS,
    I_SERVED,
    I_SHED,
    I_SHIFTS,
    I_STRANDED,
    I_STRESS_EVENTS,
    I_TICK,
    P_COST,
    P_GRID_STRESS,
    P_PEAK,
    P_RENEWABLE,
    P_STRANDED,
    P_UNMET,
    P_URGENCY,
    P_WAIT,
    PENDING,
    QUEUED,
    R_DT_H,
    R_EFFICIENCY,
    R_SOFT_LIMIT,
    R_TAPER_FLOOR,
    R_TICK_MINUTES,
    SERVED,
    TRAVELING,
    WAITING,
)  # fmt: skip


# --- Requests ----------------------------------------------------------------------
@kernel(inline=True)
def collect_requests(st, rules) -> None:  # noqa: ANN001
    """The EVs asking now (first requests and deferred ones back), in EV order."""
    t = st.ints[I_TICK]
    n = 0
    _window(st, t)
    for ev in range(st.ints[I_LO], st.ints[I_HI]):
        status = st.status[ev]
        if (status == WAITING and st.arrive_tick[ev] == t) or (
            status == DEFERRED and st.due_tick[ev] == t
        ):
            st.status[ev] = PENDING
            if st.critical[ev] and not st.late[ev]:
                st.waiting_critical[ev] = True
            st.pending[n] = ev
            n += 1
    st.ints[I_N_PENDING] = n


@kernel(inline=True)
def _window(st, t: int) -> None:  # noqa: ANN001
    """Move the window of EVs a tick can touch (``state.I_LO``, ``I_HI``) to tick t:
    the arrivals due by t in, the first EVs that have left out."""
    hi, n = st.ints[I_HI], len(st.status)
    while hi < n and st.arrive_tick[hi] <= t:
        hi += 1
    lo = st.ints[I_LO]
    while lo < hi and st.status[lo] >= SERVED:  # served, stranded, gave up
        lo += 1
    st.ints[I_LO], st.ints[I_HI] = lo, hi


# --- Leaving unserved ----------------------------------------------------------------
@kernel(inline=True)
def leave_unserved(st, rules, ev: int, status: int, parts) -> None:  # noqa: ANN001
    """The EV leaves without charging: the stranded cost, and a critical EV is late."""
    w = rules.weights
    st.status[ev] = status
    parts[P_STRANDED] -= w[P_STRANDED]
    st.ints[I_STRANDED] += 1
    if st.waiting_critical[ev]:
        st.waiting_critical[ev] = False
        if not st.late[ev]:
            st.late[ev] = True
            parts[P_URGENCY] -= w[P_URGENCY]


@kernel(inline=True)
def give_up(st, rules, ev: int, parts) -> None:  # noqa: ANN001
    """Its patience ran out before it plugged in: the EV leaves from where it is.

    Deferred, driving or queued; an EV that has plugged in (or left) stays.
    """
    status = st.status[ev]
    if status == QUEUED:
        st.queue_len[st.station[ev], st.kind[ev]] -= 1
    elif status == TRAVELING:
        st.inbound[st.station[ev], st.kind[ev]] -= 1
    elif status != DEFERRED:
        return
    leave_unserved(st, rules, ev, GAVE_UP, parts)
    st.ints[I_GAVE_UP] += 1
    st.gave_up_now[st.ints[I_N_GAVE_UP_NOW]] = ev
    st.ints[I_N_GAVE_UP_NOW] += 1


# --- Reaching stations and plugging in ----------------------------------------------
@kernel(inline=True)
def _by_order(st, status: int, due: int) -> int:  # noqa: ANN001
    """The EVs with ``status`` (and, when ``due`` >= 0, due at tick ``due``) sorted
    by ``order`` (ties: EV order), into ``st.scratch_evs``: their count. An insertion
    sort: a tick sorts a handful of EVs, and allocates nothing."""
    out = st.scratch_evs
    n = 0
    for ev in range(st.ints[I_LO], st.ints[I_HI]):
        if st.status[ev] != status or (due >= 0 and st.due_tick[ev] != due):
            continue
        key = st.order[ev]
        j = n
        while j > 0 and st.order[out[j - 1]] > key:
            out[j] = out[j - 1]
            j -= 1
        out[j] = ev
        n += 1
    return n


@kernel(inline=True)
def reach_and_plug(st, rules, t: int) -> None:  # noqa: ANN001
    """EVs reach their stations and queue; free plugs are filled first come, first served."""
    evs = st.scratch_evs
    for i in range(_by_order(st, TRAVELING, t)):  # in ROUTE order
        ev = evs[i]
        s, k = st.station[ev], st.kind[ev]
        st.status[ev] = QUEUED
        st.inbound[s, k] -= 1
        st.order[ev] = st.ints[I_ORDER]  # its place in the queue
        st.ints[I_ORDER] += 1
        st.queue_len[s, k] += 1
    n_queued = _by_order(st, QUEUED, -1)
    now = float(t * rules.numbers[R_TICK_MINUTES])
    S, K = st.queue_len.shape
    for s in range(S):
        if not rules.station_open[t, s]:
            continue
        for k in range(K):
            if st.queue_len[s, k] == 0:
                continue
            for i in range(n_queued):
                ev = evs[i]
                if st.busy[s, k] >= rules.plugs[s, k]:
                    break
                if st.station[ev] == s and st.kind[ev] == k:
                    _plug_in(st, rules, ev, s, k, now)
                    st.queue_len[s, k] -= 1


@kernel(inline=True)
def _plug_in(st, rules, ev: int, s: int, k: int, now: float) -> None:  # noqa: ANN001
    st.status[ev] = CHARGING
    st.plug_minute[ev] = now
    st.busy[s, k] += 1
    st.plugged[st.ints[I_N_PLUGGED]] = ev
    st.ints[I_N_PLUGGED] += 1
    st.plug_kw[ev] = plug_kw(k, st.max_ac_kw[ev], st.max_dc_kw[ev])
    st.taper_start[ev] = rules.taper_start[k]
    st.waiting_critical[ev] = False
    on_time = st.critical[ev] and not st.late[ev] and now <= st.deadline_minute[ev]
    st.waits[st.ints[I_N_WAITS]] = now - st.request_minute[ev]
    st.ints[I_N_WAITS] += 1
    st.ints[I_ON_TIME] += on_time


# --- Charging ------------------------------------------------------------------------
@kernel(inline=True)
def charge_ask(st, rules, t: int, energy, need) -> None:  # noqa: ANN001
    """Each session draws its tapered power; a station asked for more than its limit
    (or LOAD_SHIFT cap; 0 while closed) scales its sessions down together. Fills
    ``energy`` and ``need`` [kWh] per session (plug-in order) and ``station_kw``."""
    n = st.ints[I_N_PLUGGED]
    floor, eff, dt_h = (rules.numbers[R_TAPER_FLOOR], rules.numbers[R_EFFICIENCY],
                        rules.numbers[R_DT_H])  # fmt: skip
    # Work arrays without allocating: each station's demand in ``station_kw`` (which
    # ``_station_kw`` then writes), each session's power in ``energy`` until its
    # energy replaces it.
    demand, power = st.station_kw, energy
    demand[:] = 0.0
    for i in range(n):
        ev = st.plugged[i]
        power[i] = tapered_kw(st.plug_kw[ev], st.soc[ev], st.taper_start[ev], floor)
        demand[st.station[ev]] += power[i]
    for i in range(n):
        ev = st.plugged[i]
        s = st.station[ev]
        limit = st.shift_cap_kw[s] if st.shift_until[s] > t else rules.limit_kw[s]
        limit = limit * (1.0 if rules.station_open[t, s] else 0.0)
        p = power[i]
        if demand[s] > limit:
            p = p * (limit / max(demand[s], 1e-12))
        need[i] = need_kwh(st.soc[ev], st.target[ev], st.battery_kwh[ev], eff)
        energy[i] = tick_energy_kwh(p, dt_h, need[i])
    _station_kw(st, rules, energy, n)


@kernel(inline=True)
def _station_kw(st, rules, energy, n: int) -> None:  # noqa: ANN001
    st.station_kw[:] = 0.0
    for i in range(n):
        st.station_kw[st.station[st.plugged[i]]] += energy[i]
    st.station_kw[:] = st.station_kw / rules.numbers[R_DT_H]


@kernel(inline=True)
def charge_settle(st, rules, t: int, energy, need, parts) -> None:  # noqa: ANN001
    """The sessions get what the grid carried: energy, SoC, cost, renewables; the
    ones that reached their target leave."""
    n = st.ints[I_N_PLUGGED]
    w, eff = rules.weights, rules.numbers[R_EFFICIENCY]
    if st.ints[I_SHED]:  # the grid shed load: owed to its EVs
        for i in range(n):
            energy[i] = energy[i] * st.station_factor[st.station[st.plugged[i]]]
        _station_kw(st, rules, energy, n)
    for i in range(n):
        ev = st.plugged[i]
        if reached(energy[i], need[i]):
            st.soc[ev] = st.target[ev]
        else:
            st.soc[ev] = soc_after(st.soc[ev], energy[i], st.battery_kwh[ev], eff)
        st.energy_kwh[ev] += energy[i]
    total = array_sum(energy, n)
    cost = total * rules.tariff[t]
    fossil = fossil_kwh(total, rules.renewable[t])
    parts[P_COST] -= w[P_COST] * cost
    parts[P_RENEWABLE] -= w[P_RENEWABLE] * fossil
    st.floats[F_ENERGY] += total
    st.floats[F_RENEWABLE] += total - fossil
    st.floats[F_COST] += cost
    kept = 0
    unplug = (t + 1) * rules.numbers[R_TICK_MINUTES]
    for i in range(n):
        ev = st.plugged[i]
        if reached(energy[i], need[i]):  # as above: energy and need are unchanged
            st.status[ev] = SERVED
            st.unplug_minute[ev] = unplug
            st.busy[st.station[ev], st.kind[ev]] -= 1
            st.ints[I_SERVED] += 1
        else:
            st.plugged[kept] = ev
            kept += 1
    st.ints[I_N_PLUGGED] = kept


# --- The feeders ----------------------------------------------------------------------
@kernel(inline=True)
def carry_feeder_sum(st, rules, t: int) -> None:  # noqa: ANN001
    """``grid.FeederSum.carry`` on the state: the feeder sum's rule (``feeder_sum``)
    for the stations' asked load, the carried load and utilisation kept."""
    F = len(st.grid_ev_kw)
    # No allocation: the rule writes the carried load into ``grid_ev_kw`` and its
    # factors into ``grid_util`` (the utilisation replaces them below).
    ev_kw, factor = st.grid_ev_kw, st.grid_util
    ev_kw[:] = 0.0
    factor[:] = 1.0
    st.grid_shed_kw[:] = 0.0
    shed_any = feeder_sum(st.station_kw, rules.feeder_of, st.headroom_kw[t], ev_kw,
                          factor, st.grid_shed_kw)  # fmt: skip
    st.ints[I_SHED] = shed_any
    if shed_any:
        for s in range(len(st.station_factor)):
            st.station_factor[s] = factor[rules.feeder_of[s]]
    for f in range(F):
        bg, cap = st.background_kw[t, f], st.capacity_kw[t, f]
        st.grid_capacity_kw[f], st.grid_background_kw[f] = cap, bg
        st.grid_util[f] = (bg + ev_kw[f]) / cap


@kernel(inline=True)
def grid_terms(st, rules, t: int, parts) -> None:  # noqa: ANN001
    """The reward's grid terms and the feeders' KPIs for the tick just carried.

    Stress is charged on the EV load asked (carried + shed) above the soft limit,
    the peak part on the EV load asked above capacity: what the protection shed.
    """
    w, soft, dt_h = rules.weights, rules.numbers[R_SOFT_LIMIT], rules.numbers[R_DT_H]
    stress_kw = over_kw = 0.0
    n_new = n_over = 0
    peak = st.floats[F_PEAK_UTIL]
    for f in range(len(st.grid_ev_kw)):
        c, bg = st.grid_capacity_kw[f], st.grid_background_kw[f]
        shed = st.grid_shed_kw[f]
        asked = st.grid_ev_kw[f] + shed  # [kW] EV load asked of the feeder
        load = bg + asked
        if load / c > soft:
            stress_kw += min(asked, load - soft * c)
            n_new += not st.above_soft[f]
            st.above_soft[f] = True
        else:
            st.above_soft[f] = False
        if shed:
            over_kw += shed
            n_over += 1
        elif bg > c:  # the background alone above capacity: no EV load to shed
            n_over += 1
        st.util_history[t, f] = st.grid_util[f]
    st.floats[F_PEAK_UTIL] = max(peak, np.max(st.grid_util))
    stress_kwh, over_kwh = stress_kw * dt_h, over_kw * dt_h
    parts[P_GRID_STRESS] -= w[P_GRID_STRESS] * stress_kwh
    parts[P_PEAK] -= w[P_PEAK] * over_kwh
    st.ints[I_OVERLOAD_TICKS] += n_over
    st.ints[I_STRESS_EVENTS] += n_new
    st.floats[F_SHED_KWH] += over_kwh


# --- Queues, patience, deadlines ----------------------------------------------------
@kernel(inline=True)
def wait_and_patience(st, rules, t: int, parts) -> None:  # noqa: ANN001
    """Waiting in queues; patience and deadlines run out at the end of the tick.

    Patience runs from the first request until the EV plugs in, whatever it does
    meanwhile (deferred, driving, queued): see ``world.give_up_ticks``.
    """
    w, tm = rules.weights, rules.numbers[R_TICK_MINUTES]
    end = t * tm + tm
    queued = int(np.sum(st.queue_len))
    parts[P_WAIT] -= w[P_WAIT] * tm * queued
    # One pass in EV order: an EV's give-up, then its deadline. (Two passes, all the
    # give-ups first, gave the same: a deadline's test reads only its own EV's
    # fields, which no other EV's give-up writes, and the urgency costs are all the
    # same term, subtracted alike in any order.)
    for ev in range(st.ints[I_LO], st.ints[I_HI]):
        if st.give_up_tick[ev] == t:
            give_up(st, rules, ev, parts)
        if st.waiting_critical[ev] and st.deadline_minute[ev] < end:
            st.waiting_critical[ev] = False
            st.late[ev] = True
            parts[P_URGENCY] -= w[P_URGENCY]


# --- Ticks until a request ------------------------------------------------------------
@kernel(inline=True)
def tick_start(st, rules) -> int:  # noqa: ANN001
    """Before a tick's physics: 1 when the episode just ended (the unmet energy
    settled), 2 when a request is due now, 0 when the tick's physics should run."""
    t = st.ints[I_TICK]
    if t >= len(rules.tariff):  # the episode's ticks
        return 1
    if st.ints[I_N_PENDING] == 0:
        collect_requests(st, rules)
    return 2 if st.ints[I_N_PENDING] else 0


@kernel(inline=True)
def tick_end(st) -> None:  # noqa: ANN001
    st.ints[I_TICK] += 1
    st.ints[I_SHIFTS] = 0


@kernel(inline=True)
def settle_unmet(st, rules, parts) -> None:  # noqa: ANN001
    """At the end, energy still owed to EVs deferred, on their way, queued or
    charging costs: without this, charging slowly (or late) would be cheaper simply
    because part of the energy falls after the episode ends."""
    if st.ints[I_FINISHED]:
        return
    st.ints[I_FINISHED] = 1
    need = np.empty(len(st.status))
    n = 0
    eff = rules.numbers[R_EFFICIENCY]
    for ev in range(len(st.status)):
        if DEFERRED <= st.status[ev] <= CHARGING:
            need[n] = need_kwh(st.soc[ev], st.target[ev], st.battery_kwh[ev], eff)
            n += 1
    if n:
        kwh = array_sum(need, n)
        parts[P_UNMET] -= rules.weights[P_UNMET] * kwh
        st.floats[F_UNMET] += kwh


@kernel(inline=True)
def physics_feeder_sum(st, rules, t: int, parts) -> None:  # noqa: ANN001
    """One tick under the feeder sum: stations, sessions, feeders, patience."""
    reach_and_plug(st, rules, t)
    n = st.ints[I_N_PLUGGED]
    energy, need = st.scratch_energy[:n], st.scratch_need[:n]
    if n:
        charge_ask(st, rules, t, energy, need)
        carry_feeder_sum(st, rules, t)
        charge_settle(st, rules, t, energy, need, parts)
    else:
        st.station_kw[:] = 0.0
        carry_feeder_sum(st, rules, t)
    grid_terms(st, rules, t, parts)
    wait_and_patience(st, rules, t, parts)


@kernel(inline=True)
def advance_feeder_sum(st, rules, parts) -> None:  # noqa: ANN001
    """Run ticks until one has a request to decide, or the episode ends."""
    while True:
        now = tick_start(st, rules)
        if now == 1:
            settle_unmet(st, rules, parts)
            return
        if now == 2:
            return
        physics_feeder_sum(st, rules, st.ints[I_TICK], parts)
        tick_end(st)
