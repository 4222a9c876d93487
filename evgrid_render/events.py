"""A scenario's events as the view shows them: what, where, from when to when.

Read from the scenario's public fields (``Scenario.feeder_events``, ``closures``,
``transformer_events``, ``arrival_scale`` and ``origin_boost``); the core has no
"events active at tick t" of its own, so this is the one place the view derives
it. No pygame here: the controller, the panel, the map and the replay's
timeline all read these.
"""

from __future__ import annotations

from dataclasses import dataclass

KINDS = ("fault", "derating", "closure", "dt_swap", "surge")


@dataclass(frozen=True)
class GridEvent:
    """One scenario event: active for ticks ``start_tick <= t < end_tick``."""

    kind: str  # one of KINDS
    start_tick: int
    end_tick: int
    label: str  # one line: what it is and what it leaves
    short: str  # a tag for the map and the gauges ("FAULT 60 %")
    feeder: int | None = None  # feeder id (1-based), fault and derating
    station: int | None = None  # station id, closure and DT swap
    localities: tuple[str, ...] = ()  # the busier localities, surge
    factor: float = 1.0  # [0-1] capacity left (fault, derating)

    def active(self, tick: int) -> bool:
        return self.start_tick <= tick < self.end_tick


def scenario_events(scenario, city) -> tuple[GridEvent, ...]:  # noqa: ANN001
    """Every event of ``scenario`` in the ``city``, in order of start. A DT swap
    says it acts under the network grid models only (the feeder sum has no
    transformers), so the map never claims an effect the model lacks."""
    out: list[GridEvent] = []
    feeders = {f.id: f for f in city.feeders}
    stations = {s.id: s for s in city.stations}
    for ev in scenario.feeder_events:
        f = feeders[ev.feeder]
        rated = f.capacity_kw / 1000.0
        left = rated * ev.capacity_factor
        kind = "fault" if ev.kind == "fault" else "derating"
        what = "fault" if kind == "fault" else "demand-response hold"
        label = f"F{f.id} {_short(f.name)} {what}: limit {left:.2f} of {rated:.2f} MW"
        if ev.background_factor < 1.0:
            label += f", {ev.background_factor * 100:.0f} % of its customers on"
        tag = "FAULT" if kind == "fault" else "DR"
        out.append(
            GridEvent(
                kind,
                ev.start_tick,
                ev.end_tick,
                label,
                f"{tag} {ev.capacity_factor * 100:.0f} %",
                feeder=f.id,
                factor=ev.capacity_factor,
            )
        )
    for c in scenario.closures:
        s = stations[c.station]
        out.append(
            GridEvent(
                "closure",
                c.start_tick,
                c.end_tick,
                f"S{s.id} {s.name} closed (dark)",
                "CLOSED",
                station=s.id,
            )
        )
    for t in scenario.transformer_events:
        s = stations[t.station]
        out.append(
            GridEvent(
                "dt_swap",
                t.start_tick,
                t.end_tick,
                f"S{s.id} {s.name}: {t.kva:.0f} kVA stand-in transformer "
                "(network grid models)",
                f"DT {t.kva:.0f} kVA",
                station=s.id,
            )
        )
    if scenario.arrival_scale > 1.0 and scenario.origin_boost:
        places = tuple(name for name, _ in scenario.origin_boost)
        busy = ", ".join(_short(p) for p in places[:3])
        out.append(
            GridEvent(
                "surge",
                0,
                scenario.n_ticks,
                f"surge: EV arrivals x{scenario.arrival_scale:g}, busiest {busy}",
                f"SURGE x{scenario.arrival_scale:g}",
                localities=places,
            )
        )
    return tuple(sorted(out, key=lambda e: (e.start_tick, KINDS.index(e.kind))))


def active_events(events: tuple[GridEvent, ...], tick: int) -> list[GridEvent]:
    """The events in force at ``tick``."""
    return [e for e in events if e.active(tick)]


def event_log(
    events: tuple[GridEvent, ...], tick_minutes: int, start_minute: int, n_ticks: int
) -> list[tuple[float, str]]:
    """(minute since start, line) for each event's start and end, in time order:
    the decision log's lines. An event that runs to the episode's end has no end
    line."""
    lines: list[tuple[float, str]] = []
    for e in events:
        lines.append(
            (
                e.start_tick * tick_minutes,
                f"{_clock(e.start_tick, tick_minutes, start_minute)} starts: {e.label}",
            )
        )
        if e.end_tick < n_ticks:
            lines.append(
                (
                    e.end_tick * tick_minutes,
                    f"{_clock(e.end_tick, tick_minutes, start_minute)} ends: {_ended(e)}",
                )
            )
    return sorted(lines, key=lambda x: x[0])


def feeder_limit_factor(events: tuple[GridEvent, ...], feeder: int, tick: int) -> float:
    """[0-1] the share of feeder ``feeder``'s rating usable at ``tick`` by the
    events (1.0 with none)."""
    f = 1.0
    for e in events:
        if e.feeder == feeder and e.active(tick):
            f *= e.factor
    return f


def _ended(e: GridEvent) -> str:
    if e.kind in ("fault", "derating"):
        return f"F{e.feeder} {e.short.split()[0].lower()} over, full limit back"
    if e.kind == "closure":
        return f"S{e.station} open again"
    if e.kind == "dt_swap":
        return f"S{e.station}'s own transformer back"
    return "surge over"


def _clock(tick: int, tick_minutes: int, start_minute: int) -> str:
    m = int(start_minute + tick * tick_minutes) % 1440
    return f"{m // 60:02d}:{m % 60:02d}"


def _short(name: str) -> str:
    return name.split(" (")[0]
