"""The reward: named cost parts, their weights, and the terms that need more than a weight.

Every part is a cost (reward <= 0) and travels with every step as
``info["reward_parts"]``, keyed by ``REWARD_KEYS``: the fields of
``RewardWeights``, in their order. Adding a part is adding a weight here and
charging it where it happens (``World``; the optimum's plan costs where its plans
can incur it).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import TYPE_CHECKING

import numpy as np

from .jit import kernel

if TYPE_CHECKING:
    from .distflow import NetworkState

Value = float | np.ndarray  # a number, or one per tick / session


@dataclass(frozen=True, slots=True)
class RewardWeights:
    """Weights of the named reward parts. Every part is a cost (reward <= 0).

    Costs only, so no tick can pay more than nothing: an invalid action (which
    strands its EV and pays ``invalid`` on top: 5.0) is always worse than any valid
    one, whose own costs are at most 90 min of travel or 60 min of defer plus abuse
    (1.8) and, in the last step, the energy the EV is still owed (52 kWh: 1.04).
    """

    wait: float = 0.02  # [per EV-minute] defer + travel + queue time before plug-in
    grid_stress: float = 0.01  # [per kWh] EV energy asked above the feeder's soft limit
    peak: float = 0.05  # [per kWh] EV energy asked above capacity (shed, still owed)
    renewable: float = 0.002  # [per kWh] non-renewable share of charged energy
    cost: float = 0.0005  # [per INR] energy bought by the operator
    urgency: float = 2.0  # [per EV] critical EV not plugged in by its deadline
    stranded: float = 4.0  # [per EV] EV that gave up (patience, or rejected)
    invalid: float = 1.0  # [per action] unparsable or invalid action
    defer_abuse: float = (
        0.25  # [per defer] times the number of earlier defers of that EV
    )
    load_shift: float = 0.1  # [per action] each demand-response cap issued
    unmet: float = 0.02  # [per kWh] owed at the end to EVs routed, queued or charging
    # The network grid models only (``network_terms``; 0 under the feeder sum):
    undervoltage: float = 50.0  # [per p.u.-hour] voltage deficit the EV load adds
    transformer_overload: float = 0.05  # [per kVAh] apparent power above a DT's rating


REWARD_KEYS: tuple[str, ...] = tuple(f.name for f in fields(RewardWeights))


# --- Terms ------------------------------------------------------------------------
def defer_abuse_count(defers: int) -> int:
    """What ``defer_abuse`` is paid on over an EV's ``defers`` DEFERs: each DEFER
    pays for the earlier ones (0 + 1 + ... + defers - 1)."""
    return defers * (defers - 1) // 2


@kernel
def fossil_kwh(kwh: Value, renewable_share: Value) -> Value:
    """[kWh] the non-renewable part of charged energy (what ``renewable`` is paid on)."""
    return kwh * (1.0 - renewable_share)


def network_terms(n: NetworkState | None) -> tuple[float, float]:
    """One tick's network terms: ([p.u.] the voltage deficit the EV load adds,
    summed over the points of supply, [kVA] the DTs' load above their ratings).

    The deficit is each point of supply's distance below its voltage floor
    (``NetworkState.voltage_deficit_pu``) less what the background alone leaves
    there, so only what dispatch changes is charged; the weight (50 per p.u.-hour)
    makes 1 kWh charged at the airport hub, whose tail is below its floor, cost
    about what 1 kWh above a feeder's soft limit does (``grid_stress``). Both are
    convex piecewise-linear in the stations' kW under LinDistFlow, so the optimum
    charges them exactly. ``n``: the tick's ``GridTick.network``; (0.0, 0.0)
    without one (the feeder sum).
    """
    if n is None:
        return 0.0, 0.0
    added = n.voltage_deficit_pu
    if n.background_deficit_pu is not None:
        added = np.maximum(added - n.background_deficit_pu, 0.0)
    return float(added.sum()), float(n.dt_overload_kva.sum())
