"""KPIs per episode and their aggregation over seeds (mean and 95 % CI)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

import numpy as np

from .config import REWARD_KEYS
from .state import (
    F_COST,
    F_ENERGY,
    F_PEAK_UTIL,
    F_RENEWABLE,
    F_SHED_KWH,
    F_UNMET,
    GAVE_UP,
    I_GAVE_UP,
    I_N_WAITS,
    I_ON_TIME,
    I_OVERLOAD_TICKS,
    I_SERVED,
    I_STRANDED,
    I_STRESS_EVENTS,
    I_TICK,
    STRANDED,
)  # fmt: skip

if TYPE_CHECKING:
    from .distflow import NetworkState
    from .world import World

# Stable KPI keys, in display order, with their units. Waits count every EV that
# asked (see ``waits_min``); stranded counts every EV that left without charging,
# gave_up those of them whose patience ran out (the rest got an invalid answer).
# The network grid models add feeder-minutes with a point of supply below its
# voltage floor, station-minutes with a DT above its rating, and the network's
# series losses; under the feeder sum they are 0.
KPI_UNITS: dict[str, str] = {
    "mean_wait_min": "min",
    "p95_wait_min": "min",
    "mean_wait_plugged_in_min": "min",
    "evs_requested": "EVs",
    "evs_plugged_in": "EVs",
    "evs_served": "EVs",
    "energy_kwh": "kWh",
    "unmet_kwh": "kWh",
    "critical_on_time_pct": "%",
    "stranded": "EVs",
    "gave_up": "EVs",
    "peak_feeder_util_pct": "%",
    "overload_feeder_min": "min",
    "shed_kwh": "kWh",
    "stress_events": "events",
    "undervoltage_feeder_min": "min",
    "transformer_overload_min": "min",
    "losses_kwh": "kWh",
    "renewable_share_pct": "%",
    "energy_cost_inr": "INR",
    "cost_per_kwh_inr": "INR/kWh",
    "invalid_action_pct": "%",
    "load_shifts": "actions",
    "steps": "steps",
    "return": "",
}


def _int(i: int) -> property:
    return property(lambda self: int(self.world.state.ints[i]))


def _float(i: int) -> property:
    return property(lambda self: float(self.world.state.floats[i]))


class KPITracker:
    """Counts what happens in one episode; ``summary()`` gives the KPI dict.

    What the world's ticks count is read from its state (the kernels count it);
    the decisions' counts (steps, invalid answers, LOAD_SHIFTs), the return and the
    network models' figures are counted here.
    """

    served = _int(I_SERVED)
    stranded = _int(I_STRANDED)  # every EV that left without charging
    gave_up = _int(I_GAVE_UP)  # those of them whose patience ran out
    critical_on_time = _int(I_ON_TIME)
    overload_ticks = _int(I_OVERLOAD_TICKS)  # feeder-ticks over a limit
    stress_events = _int(I_STRESS_EVENTS)  # feeders newly above the soft limit
    energy = _float(F_ENERGY)  # [kWh] grid energy delivered
    renewable_energy = _float(F_RENEWABLE)
    cost = _float(F_COST)  # [INR]
    unmet_kwh = _float(F_UNMET)  # [kWh] still owed at the end to EVs in the system
    shed_kwh = _float(F_SHED_KWH)  # [kWh] EV charging shed by feeder protection
    peak_util = _float(F_PEAK_UTIL)

    def __init__(self, world: World) -> None:
        self.world = world
        self.invalid = self.steps = self.load_shifts = 0
        self.total_return = 0.0
        # The network grid models only (0 under the feeder sum):
        self.undervoltage_ticks = (
            0  # feeder-ticks with a point of supply below its floor
        )
        self.dt_overload_ticks = 0  # station-ticks with a DT above its rating
        self.losses_kwh = 0.0  # [kWh] series losses of lines and transformers
        self._parts = np.zeros(len(REWARD_KEYS))  # the reward parts so far

    @property
    def parts_total(self) -> dict[str, float]:
        """The return so far by reward part (``REWARD_KEYS``)."""
        return dict(zip(REWARD_KEYS, self._parts.tolist(), strict=True))

    @property
    def waits(self) -> list[float]:
        """[min] of the EVs that plugged in, in order."""
        st = self.world.state
        return st.waits[: st.ints[I_N_WAITS]].tolist()

    @property
    def feeder_util_history(self) -> list[list[float]]:
        """[tick][feeder] utilisation, one row per tick run."""
        st = self.world.state
        return st.util_history[: st.ints[I_TICK]].tolist()  # a tick's physics ran

    def on_network(self, state: NetworkState, dt_h: float) -> None:
        """One tick of the network (the network grid models)."""
        self.undervoltage_ticks += int(state.undervoltage.sum())
        self.dt_overload_ticks += int(np.count_nonzero(state.dt_overload_kva))
        self.losses_kwh += float(state.losses_kw.sum()) * dt_h

    def on_energy(self, kwh: float, renewable_kwh: float, cost_inr: float) -> None:
        self.energy += kwh
        self.renewable_energy += renewable_kwh
        self.cost += cost_inr

    def add_reward(self, reward: float, parts: np.ndarray) -> None:
        """One step's reward and its parts (``REWARD_KEYS``'s order)."""
        self.total_return += reward
        self._parts += parts

    # --- Summary ---------------------------------------------------------------------
    def waits_min(self) -> np.ndarray:
        """[min] Every EV that asked so far: from its first request until it plugged in.

        One that left without charging (it gave up, or an invalid answer turned it
        away) counts its whole patience, even past the episode's end, so turning EVs
        away can never shorten the waits; one still waiting counts until now.
        """
        w = self.world
        asked = w.status > 0
        status = w.status[asked]
        gone = (status == STRANDED) | (status == GAVE_UP)
        plugged_or_now = np.fmin(w.plug_minute[asked], w.minute)  # plug: NaN until
        a = w.arrivals
        until = np.where(gone, (a.minute + a.patience_min)[asked], plugged_or_now)
        return until - a.minute[asked]

    def summary(self) -> dict[str, float]:
        w = self.world
        requested = int(np.count_nonzero(w.status > 0))
        critical = int(np.count_nonzero(w.arrivals.critical & (w.status > 0)))
        waits = self.waits_min() if requested else np.zeros(1)
        waits_plugged = self.waits
        plugged = np.array(waits_plugged) if waits_plugged else np.zeros(1)
        tm = w.config.tick_minutes
        return {
            "mean_wait_min": float(waits.mean()),
            "p95_wait_min": float(np.percentile(waits, 95)),
            "mean_wait_plugged_in_min": float(plugged.mean()),
            "evs_requested": requested,
            "evs_plugged_in": len(waits_plugged),
            "evs_served": self.served,
            "energy_kwh": self.energy,
            "unmet_kwh": self.unmet_kwh,
            "critical_on_time_pct": 100.0 * self.critical_on_time / critical
            if critical
            else 100.0,
            "stranded": self.stranded,
            "gave_up": self.gave_up,
            "peak_feeder_util_pct": 100.0 * self.peak_util,
            "overload_feeder_min": float(self.overload_ticks * tm),
            "shed_kwh": self.shed_kwh,
            "stress_events": self.stress_events,
            "undervoltage_feeder_min": float(self.undervoltage_ticks * tm),
            "transformer_overload_min": float(self.dt_overload_ticks * tm),
            "losses_kwh": self.losses_kwh,
            "renewable_share_pct": 100.0 * self.renewable_energy / self.energy
            if self.energy
            else 0.0,
            "energy_cost_inr": self.cost,
            "cost_per_kwh_inr": self.cost / self.energy if self.energy else 0.0,
            "invalid_action_pct": 100.0 * self.invalid / self.steps
            if self.steps
            else 0.0,
            "load_shifts": self.load_shifts,
            "steps": self.steps,
            "return": self.total_return,
        }


def aggregate(episodes: Iterable[Mapping[str, float]]) -> dict[str, dict[str, float]]:
    """Mean, standard deviation and 95 % CI half-width (Student t) of each KPI."""
    rows = list(episodes)
    out: dict[str, dict[str, float]] = {}
    for key in rows[0] if rows else ():
        x = np.array([float(r[key]) for r in rows])
        n = len(x)
        sd = float(x.std(ddof=1)) if n > 1 else 0.0
        out[key] = {
            "mean": float(x.mean()),
            "sd": sd,
            "ci95": _t95(n) * sd / math.sqrt(n) if n > 1 else 0.0,
            "n": n,
        }
    return out


def _t95(n: int) -> float:
    """Two-sided 95 % Student-t quantile for n-1 degrees of freedom (table, no scipy)."""
    table = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262,
             10: 2.228, 12: 2.179, 15: 2.131, 20: 2.086, 25: 2.060, 30: 2.042, 40: 2.021, 60: 2.000, 120: 1.980}  # fmt: skip
    df = n - 1
    if df > 120:
        return 1.960
    return table[max(k for k in table if k <= df)]  # the next smaller df: conservative
