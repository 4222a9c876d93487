"""Each core step's reward parts split among the agents, exactly in sum.

The core charges a step's costs as totals per named part (``info["reward_parts"]``);
it does not say whose EV or which feeder each came from. This layer splits every
part by a share rule read from what the env shows (the step's info, the public
``env.state()`` before and after the step, and the decision itself). A rule that
can be exact is (the decision's own costs, give-ups, LOAD_SHIFTs); the others are
shares of the tick's state after the step and say so below. Whatever the shares,
each part's pieces add up to the core's part (the last share takes the remainder),
so the agents' rewards add up to the single-agent reward.

| part | to whom | how exact |
|---|---|---|
| ``invalid``, ``defer_abuse`` | the deciding fleet | exact (only a decision pays them) |
| ``load_shift`` | the operator that issued it | exact (its own core step) |
| ``stranded`` | the deciding fleet for an invalid answer, each EV that gave up to its fleet | exact (counts) |
| ``wait`` | the decision's own minutes (drive or defer) to the deciding fleet; the rest (queueing while the clock ran) to fleets by their queued EVs | decision exact, queue share of the state after |
| ``urgency`` | fleets by their critical EVs not yet plugged in (before the step) | share |
| ``grid_stress``, ``peak`` | operators by their feeders' EV load on feeders above the soft limit (all feeders if none is); fleets by charging load with no operators | share |
| ``cost``, ``renewable`` | fleets by their charging EVs' share of station load | share |
| ``unmet`` | fleets by the energy their EVs are still owed | share |

A share with nothing to share by (no queued EV, say, when the cost came from a tick
in between) goes to the deciding agent.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from evgrid_core import REWARD_KEYS, SimConfig

from .agents import Roster

NOT_PLUGGED = ("pending", "deferred", "traveling", "queued")
OWED = ("traveling", "queued", "charging")


@dataclass(frozen=True)
class CoreStep:
    """What one core step was, for attribution."""

    decider: str  # the agent whose action this core step applied
    parts: Mapping[str, float]  # the core's info["reward_parts"]
    valid: bool
    decision_wait: float  # [reward] the decision's own wait part (drive or defer)
    gave_up: tuple[int, ...]  # EV ids that gave up as the clock ran
    before: Mapping[str, Any]  # env.state() before the step
    after: Mapping[str, Any]  # env.state() after the step


def split(
    total: float, weights: Mapping[str, float], fallback: str
) -> dict[str, float]:
    """``total`` in proportion to ``weights`` (> 0 ones); the last takes the remainder
    so the pieces add up to ``total``. No positive weight: all to ``fallback``."""
    if total == 0.0:
        return {}
    w = {a: v for a, v in weights.items() if v > 0.0}
    if not w:
        return {fallback: total}
    names, W = list(w), sum(w.values())
    out = {a: total * w[a] / W for a in names[:-1]}
    out[names[-1]] = total - sum(out.values())
    return out


def _fleet_weights(
    roster: Roster, evs: list[dict[str, Any]], statuses: tuple[str, ...], value: Any
) -> dict[str, float]:
    out: dict[str, float] = defaultdict(float)
    for ev in evs:
        if ev["status"] in statuses:
            out[roster.fleet_of_class(ev["class"])] += float(value(ev))
    return out


def _charging_kw(state: Mapping[str, Any]) -> dict[int, float]:
    """[kW] per charging EV: its station's load shared equally by its sessions."""
    by_station: dict[int, list[int]] = defaultdict(list)
    for ev in state["evs"]:
        if ev["status"] == "charging" and ev["station"] is not None:
            by_station[ev["station"]].append(ev["id"])
    out = {}
    for s, ids in by_station.items():
        kw = state["stations"][s - 1]["load_kw"]
        for i in ids:
            out[i] = kw / len(ids)
    return out


def _fleets_by_charging(roster: Roster, state: Mapping[str, Any]) -> dict[str, float]:
    kw = _charging_kw(state)
    out: dict[str, float] = defaultdict(float)
    for ev in state["evs"]:
        if ev["id"] in kw:
            out[roster.fleet_of_class(ev["class"])] += kw[ev["id"]]
    return out


def _operators_by_stress(
    roster: Roster, state: Mapping[str, Any], soft_limit: float
) -> dict[str, float]:
    feeders = state["feeders"]
    hot = [f for f in feeders if f["utilisation"] > soft_limit] or feeders
    out: dict[str, float] = defaultdict(float)
    for f in hot:
        op = roster.operator_of_feeder(f["id"] - 1)
        if op is not None:
            out[op] += f["ev_kw"]
    return out


def attribute(
    step: CoreStep, roster: Roster, config: SimConfig
) -> dict[str, dict[str, float]]:
    """agent -> {part: value} for one core step; each part's values add up to the
    core's part (agents and parts with nothing are left out)."""
    out: dict[str, dict[str, float]] = defaultdict(dict)

    def give(part: str, pieces: Mapping[str, float]) -> None:
        for agent, v in pieces.items():
            out[agent][part] = out[agent].get(part, 0.0) + v

    d, before, after = step.decider, step.before, step.after
    evs_before = {ev["id"]: ev for ev in before["evs"]}
    for part in REWARD_KEYS:
        total = float(step.parts.get(part, 0.0))
        if total == 0.0:
            continue
        if part in ("invalid", "defer_abuse", "load_shift"):
            give(part, {d: total})
        elif part == "stranded":
            counts: dict[str, float] = defaultdict(float)
            if not step.valid:
                counts[d] += 1.0
            for i in step.gave_up:
                if i in evs_before:
                    counts[roster.fleet_of_class(evs_before[i]["class"])] += 1.0
            give(part, split(total, counts, d))
        elif part == "wait":
            own = step.decision_wait
            give(part, {d: own} if own else {})
            rest = total - own
            queued = _fleet_weights(roster, after["evs"], ("queued",), lambda e: 1)
            if not queued:
                queued = _fleet_weights(roster, before["evs"], ("queued",), lambda e: 1)
            give(part, split(rest, queued, d))
        elif part == "urgency":
            crit = _fleet_weights(
                roster, before["evs"], NOT_PLUGGED, lambda e: e["critical"]
            )
            give(part, split(total, crit, d))
        elif part in ("grid_stress", "peak"):
            w = (
                _operators_by_stress(roster, after, config.soft_limit)
                if roster.operators
                else _fleets_by_charging(roster, after)
            )
            give(part, split(total, w, d))
        elif part in ("cost", "renewable"):
            w = _fleets_by_charging(roster, after) or _fleets_by_charging(
                roster, before
            )
            give(part, split(total, w, d))
        elif part == "unmet":
            owed = _fleet_weights(
                roster,
                after["evs"],
                OWED,
                lambda e: max(0.0, e["target"] - e["soc"]) * e["battery_kwh"],
            )
            give(part, split(total, owed, d))
        else:  # a part added to the core since: to the decider until it has a rule
            give(part, {d: total})
    return dict(out)
