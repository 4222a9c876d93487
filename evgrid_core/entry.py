"""The one compiled call Python makes into the world: ``call(op, state, rules, ...)``.

Every kernel call from Python pays for the arrays it is handed, so Python hands over
the packed state and rules (``state.Packed``: a dozen arrays, not fifty) and an
operation code; here they are unpacked into named views and the kernel named by the
code runs (``ticks.py``, ``decide.py``). A run of ticks under the feeder sum is one
call (``ADVANCE``); another grid model's tick is several (``world.py``).
"""

from __future__ import annotations

from . import decide, judge, ticks
from .features import encode_into
from .jit import kernel
from .state import I_N_GAVE_UP_NOW, I_N_PENDING, I_N_PLUGGED, unpack, unpack_rules

(ADVANCE, TICK_START, SETTLE_UNMET, REACH_AND_PLUG, CHARGE_ASK, CHARGE_SETTLE,
 CARRY_FEEDER_SUM, GRID_TERMS, WAIT_AND_PATIENCE, TICK_END, DEFER,
 STRAND, TRY_ROUTE, TRY_DEFER, TRY_SHIFT, STEP_ROUTE, STEP_DEFER, STEP_SHIFT,
 DEFER_CODE, SHIFT_CODE, REQUEST_VIEW, INBOUND_KW) = range(22)  # fmt: skip
# TRY_*: judge the action and apply it if allowed (``judge.try_action``); STEP_*: the
# same after clearing the step's give-ups, then the clock's run (feeder sum only)
# when no request is left. Both answer ``judge``'s code. REQUEST_VIEW: EV ``a``'s
# ROUTE rule for every (station, kind) pair written into ``parts`` (1.0 allowed, 0.0
# not; S * K long) and its count of allowed DEFER options answered. INBOUND_KW: the
# kW the EVs driving to each station and due within ``a`` ticks will draw, into
# ``parts`` (S long; ``decide.inbound_kw``).


@kernel
def call(op: int, packed, packed_rules, parts, a: int, b: int, c: int) -> int:  # noqa: ANN001, PLR0911, PLR0912
    """Run kernel ``op`` on the state with arguments (a, b, c); its answer or 0."""
    st, rules = unpack(packed), unpack_rules(packed_rules)
    n = st.ints[I_N_PLUGGED]
    out, clock = 0, op == ADVANCE  # the clock's run: one call site (it is inlined)
    if op == TICK_START:
        return ticks.tick_start(st, rules)
    elif op == SETTLE_UNMET:
        ticks.settle_unmet(st, rules, parts)
    elif op == REACH_AND_PLUG:
        ticks.reach_and_plug(st, rules, a)
        return st.ints[I_N_PLUGGED]
    elif op == CHARGE_ASK:
        ticks.charge_ask(st, rules, a, st.scratch_energy[:n], st.scratch_need[:n])
    elif op == CHARGE_SETTLE:
        ticks.charge_settle(st, rules, a, st.scratch_energy[:n], st.scratch_need[:n],
                            parts)  # fmt: skip
    elif op == CARRY_FEEDER_SUM:
        ticks.carry_feeder_sum(st, rules, a)
    elif op == GRID_TERMS:
        ticks.grid_terms(st, rules, a, parts)
    elif op == WAIT_AND_PATIENCE:
        ticks.wait_and_patience(st, rules, a, parts)
    elif op == TICK_END:
        ticks.tick_end(st)
    elif op == DEFER:
        decide.defer(st, rules, a, b, parts)
    elif op == STRAND:
        decide.strand(st, rules, a, parts)
    elif TRY_ROUTE <= op <= STEP_SHIFT:
        what = (op - TRY_ROUTE) % 3
        if op >= STEP_ROUTE:
            st.ints[I_N_GAVE_UP_NOW] = 0
        out = judge.try_action(st, rules, what, a, b, c, parts)
        clock = op >= STEP_ROUTE and out == judge.OK and st.ints[I_N_PENDING] == 0
    elif op == DEFER_CODE:
        return judge.defer_code(st, rules, a, b)
    elif op == SHIFT_CODE:
        return judge.shift_code(st, rules, a)
    elif op == REQUEST_VIEW:
        judge.route_row(st, rules, a, parts)
        return judge.defer_count(st, rules, a)
    elif op == INBOUND_KW:
        decide.inbound_kw(st, a, parts)
    if clock:
        ticks.advance_feeder_sum(st, rules, parts)
    return out


@kernel
def encode(
    packed, packed_rules, done: bool, v, mask, scratch, forecast_given: bool
) -> None:  # noqa: ANN001
    """The RL view of the state: ``features.encode_into``'s vector and mask."""
    encode_into(unpack(packed), unpack_rules(packed_rules), done, v, mask, scratch,
                forecast_given)  # fmt: skip
