"""The 66/11 kV substation transformer's on-load tap changer (OLTC) and the one
rule that sets it: every network grid model applies the taps ``tap_schedule``
gives, so LinDistFlow and the AC reference compare like with like.

The regulator (an automatic voltage control relay) holds the transformer's 11 kV
busbar near a target by stepping the tap when the busbar leaves a band round it:

* range and step: +-10 % in 1.25 % steps (taps -8..+8) [A]. IEEE C57.12.10 names
  +-10 % for an on-load tap changer (in 0.625 % steps) [V: IEEE tutorial "Taps",
  its Standards slide]; 1.25 % is the step common on Indian 66/11 kV transformers
  [A: no KPTCL specification was found]. The tap is modelled on the 11 kV side:
  tap n makes the no-load 11 kV voltage ``1 + n * TAP_STEP_PU`` times the 66 kV
  one (the ratio, whichever winding carries the taps physically) [A];
* target 1.00 p.u. (11 kV, the declared voltage) [A: no BESCOM/KPTCL setting was
  found]. Higher targets are common elsewhere ("for 11 kV networks the voltage
  target is typically set at 102.5 %" [V: UK practice, "Voltage control in
  distribution networks", ch. III 3.4.1, 1library.net]), but here the LT band
  caps it: a distribution transformer gives 433 V at no load for a declared 415 V
  (``network.DT_NO_LOAD_KV``), so a customer next to the substation at light load
  sees the busbar times 433/415, and rule 54's +6 % allows the busbar at most
  1.06 x 415/433 = 1.016 p.u. (``LT_CEILING_AT_BUSBAR_PU``); 1.025 would put such
  customers at 1.07. The target plus the band stays under that ceiling;
* band +-1 % (half-width), wider than half a step so one step always lands inside
  it and the tap does not hunt [A: the relay's bandwidth "is determined by the tap
  step", ibid.];
* the relay's time delay (typically 30-120 s [A]) is shorter than a 5-minute tick,
  so within a tick the tap reaches the band (as many steps as it takes) and holds
  while the busbar stays in it: a tick's tap starts from the previous tick's.

What it measures: the busbar voltage with the tick's **background load** (the
feeder's forecast load, known before the tick), not the EV load dispatch adds [A].
So the tap never depends on a decision: the network's voltages stay linear in the
stations' kW under LinDistFlow and the optimum's model stays exact
(``grid.LinearLimits``). The EV load moves the busbar little: 1 MW at pf 0.99
lowers it by about 0.0015 p.u. through the 12.5 MVA transformer, a sixth of the
band's half-width, so a regulator that saw it would step differently only at the
band's edge.

No line-drop compensation is modelled [A]: the relay regulates the busbar, not a
point down the feeder.
"""

from __future__ import annotations

import numpy as np

from .equipment import LV_KV
from .network import DT_NO_LOAD_KV, VOLTAGE_BANDS

TAP_STEP_PU = 0.0125  # [p.u.] per tap step [A]
TAP_MIN, TAP_MAX = -8, 8  # +-10 % [A]
TARGET_PU = 1.0  # [p.u.] the busbar's target, 11 kV [A]
BAND_PU = 0.01  # [p.u.] the band's half-width round the target [A]
# [p.u.] the highest busbar voltage that keeps a no-load LT customer within +6 %
LT_CEILING_AT_BUSBAR_PU = VOLTAGE_BANDS["lt"].high * LV_KV / DT_NO_LOAD_KV
assert TARGET_PU + BAND_PU <= LT_CEILING_AT_BUSBAR_PU


def tap_ratio(tap: np.ndarray) -> np.ndarray:
    """The no-load 11 kV voltage per 66 kV one [p.u./p.u.] at tap ``tap``."""
    return 1.0 + TAP_STEP_PU * np.asarray(tap, dtype=float)


def next_tap(tap: np.ndarray, busbar_pu: np.ndarray) -> np.ndarray:
    """The regulator's one move: a busbar within ``BAND_PU`` of ``TARGET_PU`` keeps
    its tap; one outside moves by the whole steps nearest to the target (half a step
    rounds up), within the range. Per feeder (F,)."""
    err = TARGET_PU - np.asarray(busbar_pu, dtype=float)
    steps = np.where(np.abs(err) > BAND_PU, np.floor(err / TAP_STEP_PU + 0.5), 0.0)
    return np.clip(tap + steps.astype(np.int64), TAP_MIN, TAP_MAX)


def busbar_pu(tap: np.ndarray, drop: np.ndarray) -> np.ndarray:
    """The busbar's voltage at ``tap`` when its squared voltage falls by ``drop``
    (F,) through the transformer (LinDistFlow's ``2 (r P + x Q)`` at its head)."""
    ratio = tap_ratio(tap)
    return np.sqrt(ratio * ratio - drop)


def tap_schedule(drop: np.ndarray) -> np.ndarray:
    """(T, F) every tick's tap, from the background's drop through each substation
    transformer ``drop`` (T, F) (``LinDistFlowSolver.head_drop``): the episode
    starts at the nominal tap 0; each tick the regulator moves from the previous
    tick's tap until the busbar is in the band (or the tap at its range's end)."""
    n_ticks, n_feeders = drop.shape
    out = np.zeros((n_ticks, n_feeders), dtype=np.int64)
    tap = np.zeros(n_feeders, dtype=np.int64)
    for t in range(n_ticks):
        for _ in range(TAP_MAX - TAP_MIN):  # a move lands in the band: one suffices
            moved = next_tap(tap, busbar_pu(tap, drop[t]))
            if (moved == tap).all():
                break
            tap = moved
        out[t] = tap
    out.flags.writeable = False
    return out
