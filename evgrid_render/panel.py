"""The side panel: clock and signals, feeder gauges, the latest decisions with
their reward breakdown, running KPIs, the feeder load chart, the legend.
"""

from __future__ import annotations

from dataclasses import dataclass

import pygame

from evgrid_core import CHARGERS, KPI_UNITS, get_scenario

from . import theme
from .chart import Chart, draw_feeder_chart
from .feeder_rows import FeederRows, ev_tint, util_label
from .sprites import sprite

__all__ = ["KPI_ROWS", "Panel", "ViewFlags", "display_clock", "ev_tint", "util_label"]

KEYS_HELP = (
    ("Space", "pause / resume"),
    ("N", "one decision (single step)"),
    ("+ / -", "faster / slower"),
    ("P", "next policy"),
    ("M", "manual control on / off"),
    ("R", "record MP4 on / off"),
    ("S", "screenshot (PNG)"),
    ("W", "why the last decision: its options, greedy_eta's"),
    ("H", "this help"),
    ("click", "station details"),
    ("Q / Esc", "quit"),
    ("", ""),
    ("manual:", ""),
    ("A", "action: ROUTE / DEFER / LOAD_SHIFT"),
    ("Tab", "next pending EV"),
    ("Up / Down", "station"),
    ("Left / Right", "charger kind, minutes or cap %"),
    ("[ / ]", "LOAD_SHIFT minutes"),
    ("Enter", "validate with the core and send"),
)

KPI_ROWS = (
    ("evs_served", "served", "{:.0f}"),
    ("mean_wait_min", "mean wait", "{:.1f} min"),
    ("stranded", "stranded", "{:.0f}"),  # two columns: these two share a line
    ("gave_up", "of them gave up", "{:.0f}"),
    ("p95_wait_min", "p95 wait", "{:.0f} min"),
    ("energy_kwh", "energy", "{:,.0f} kWh"),
    ("peak_feeder_util_pct", "peak feeder", "{:.0f} %"),
    ("shed_kwh", "shed by feeders", "{:,.0f} kWh"),
    ("renewable_share_pct", "renewable", "{:.0f} %"),
    ("energy_cost_inr", "cost", "₹{:,.0f}"),
    ("critical_on_time_pct", "critical on time", "{:.0f} %"),
    ("invalid_action_pct", "invalid actions", "{:.0f} %"),
    ("return", "return", "{:+.1f}"),
)
assert all(k in KPI_UNITS for k, _, _ in KPI_ROWS)
# KPIs that mean nothing yet: shown as a dash until the episode has what they
# divide by (no EV plugged in, no energy delivered).
NOT_YET = {
    "critical_on_time_pct": "evs_plugged_in",
    "renewable_share_pct": "energy_kwh",
}


@dataclass
class ViewFlags:
    """What the window adds on top of the controller (not simulation state)."""

    help: bool = False
    why: bool = False  # the last decision's options and greedy_eta's answer (key W)
    selected: int | None = None  # station id shown in detail
    recording: bool = False
    speed: float = 1.0  # [ticks per second] live
    fps: float = 0.0


def display_clock(ctrl) -> tuple[str, int]:  # noqa: ANN001
    """The clock the view shows (HH:MM of the display clock) and its tick."""
    minute = ctrl.display_minute
    clock_min = int(get_scenario(ctrl.scenario).start_minute + minute) % 1440
    tick = min(int(minute // ctrl.tick_minutes), ctrl.env.scenario.n_ticks)
    return f"{clock_min // 60:02d}:{clock_min % 60:02d}", tick


class Panel:
    def __init__(self, rect: pygame.Rect, text: theme.TextCache) -> None:
        self.rect, self.text = rect, text
        self.feeders = FeederRows(text)
        self.log_lines: list[str] = []  # the decision log's lines, as drawn (tests)
        self.kpi_text: dict[str, str] = {}  # KPI key -> its value as drawn (tests)
        self.breakdown_rects: list[pygame.Rect] = []  # the reward parts' lines
        self.chart: Chart | None = None

    @property
    def gauge_rects(self) -> dict[int, pygame.Rect]:  # feeder id -> bar (tests)
        return self.feeders.gauge_rects

    @property
    def volt_rects(self) -> dict[int, pygame.Rect]:  # feeder id -> voltage (tests)
        return self.feeders.volt_rects

    def _t(self, surf, s: str, pos, size=13, colour=theme.TEXT, bold=False):  # noqa: ANN001, ANN202
        img = self.text.get(s, size, colour, bold)
        surf.blit(img, pos)
        return img.get_width()

    def draw(self, surf: pygame.Surface, ctrl, flags: ViewFlags) -> None:  # noqa: ANN001
        r = self.rect
        pygame.draw.rect(surf, theme.PANEL_BG, r)
        pygame.draw.line(surf, theme.PANEL_EDGE, r.topleft, r.bottomleft, 2)
        x, y, w = r.x + 14, r.y + 10, r.w - 28
        st = ctrl.state
        sc = get_scenario(st["scenario"])
        self._t(surf, "EV Grid Oracle · Bengaluru", (x, y), 18, theme.TEXT, True)
        y += 26
        self._t(surf, f"{sc.title}  ·  seed {st['seed']}", (x, y), 12, theme.TEXT_DIM)
        y += 18
        mode = "MANUAL" if ctrl.manual else ctrl.policy_name
        status = (
            "paused"
            if ctrl.paused
            else ("deciding…" if ctrl.deciding else f"{flags.speed:g} tick/s")
        )
        self._t(surf, f"policy {mode}  ·  {status}", (x, y), 12, theme.ACCENT)
        if flags.recording:
            pygame.draw.circle(surf, theme.OVER, (r.right - 52, y + 8), 6)
            self._t(surf, "REC", (r.right - 42, y), 12, theme.OVER, True)
        y += 24
        # Clock, tariff, renewable share.
        minute = ctrl.display_minute
        clock, tick = display_clock(ctrl)
        self._t(surf, clock, (x, y - 4), 34, theme.TEXT, True)
        self._t(
            surf, f"tick {tick}/{st['n_ticks']}", (x + 2, y + 38), 11, theme.TEXT_DIM
        )
        cx = x + 132
        surf.blit(sprite("bolt", 18), (cx, y + 2))
        self._t(surf, f"₹{st['tariff_inr']:.2f}/kWh", (cx + 22, y + 2), 15)
        surf.blit(sprite("sun", 18), (cx, y + 26))
        self._t(
            surf,
            f"{st['renewable_share'] * 100:.0f} % renewable",
            (cx + 22, y + 26),
            15,
        )
        y += 58
        # Progress through the episode.
        pygame.draw.rect(surf, (50, 56, 70), (x, y, w, 4), border_radius=2)
        frac = min(1.0, minute / max(1.0, ctrl.end_minute))
        pygame.draw.rect(surf, theme.ACCENT, (x, y, int(w * frac), 4), border_radius=2)
        y += 12
        y = self.feeders.draw(surf, ctrl, x, y, w, min(tick, st["n_ticks"] - 1))
        y = self._decisions(surf, ctrl, x, y + 4, w)
        y = self._kpis(surf, ctrl, x, y + 4, w)
        legend_y = r.bottom - 58
        self.chart = None
        if legend_y - y > 80:
            box = pygame.Rect(x, y + 6, w, legend_y - y - 14)
            self.chart = draw_feeder_chart(surf, self.text, box, ctrl)
        self._legend(surf, x, legend_y, w)

    def _legend(self, surf, x, y, w):  # noqa: ANN001, ANN202
        pygame.draw.line(surf, theme.PANEL_EDGE, (x, y - 6), (x + w, y - 6), 1)
        cx = x
        for k, c in enumerate(CHARGERS):
            name = f"{c.name.lower()} {c.kw:g} kW"
            pygame.draw.rect(surf, theme.KIND_COLOURS[k], (cx, y + 3, 8, 8))
            cx += 12 + self._t(surf, name, (cx + 12, y), 11, theme.TEXT_DIM) + 14
        self._t(surf, "busy plug ■  free □", (cx, y), 11, theme.TEXT_DIM)
        y += 17
        pygame.draw.circle(surf, theme.FEEDER_COLOURS[0], (x + 5, y + 7), 6, 2)
        cx = (
            x
            + 16
            + self._t(surf, "ring = feeder", (x + 16, y), 11, theme.TEXT_DIM)
            + 12
        )
        pygame.draw.arc(surf, theme.ROUTE, (cx, y + 1, 12, 12), 0, 4, 2)
        cx += 16 + self._t(surf, "load / limit", (cx + 16, y), 11, theme.TEXT_DIM) + 12
        pygame.draw.rect(surf, theme.BAD, (cx, y + 1, 18, 13), border_radius=6)
        cx += 22 + self._t(surf, "queue", (cx + 22, y), 11, theme.TEXT_DIM) + 12
        pygame.draw.line(surf, theme.ROUTE, (cx, y + 7), (cx + 14, y + 7), 3)
        self._t(surf, "route chosen", (cx + 18, y), 11, theme.TEXT_DIM)
        y += 17
        cx = x + self._t(
            surf,
            "ring number: S#  ·  H keys  ·  click: details",
            (x, y),
            11,
            theme.TEXT_DIM,
        )
        pygame.draw.circle(surf, theme.EVENT, (cx + 14, y + 7), 6, 2)
        self._t(surf, "event (fault…)", (cx + 24, y), 11, theme.TEXT_DIM)

    def _decisions(self, surf, ctrl, x, y, w):  # noqa: ANN001, ANN202
        """The log, newest first: decisions, and the scenario's events as they
        start and end (in the event colour). The newest decision gets its reward
        parts and notes."""
        self._t(surf, "Decisions, events and reward", (x, y), 13, theme.TEXT, True)
        y += 20
        self.breakdown_rects, self.log_lines = [], []
        entries: list[tuple[float, int, object]] = [
            (m, 0, line) for m, line in ctrl.logged_events(ctrl.display_minute)
        ]
        entries += [(d.minute, 1, d) for d in ctrl.decisions]
        entries.sort(key=lambda e: (e[0], e[1]), reverse=True)
        if not entries:
            self._t(surf, "(none yet)", (x, y), 11, theme.TEXT_DIM)
            y += 16
        newest = ctrl.decisions[0] if ctrl.decisions else None
        for _, _, entry in entries[:4]:
            if isinstance(entry, str):  # an event's start or end
                self.log_lines.append(f"⚡ {entry}")
                for line in theme.wrap(self.text, f"⚡ {entry}", 11, w):
                    self._t(surf, line, (x, y), 11, theme.EVENT)
                    y += 15
                continue
            y = self._decision(surf, entry, entry is newest, x, y, w)
        return y

    def _decision(self, surf, d, newest: bool, x, y, w):  # noqa: ANN001, ANN202
        colour = theme.TEXT if d.valid else theme.BAD
        rw = self.text.get(
            f"{d.reward:+.2f}", 12, theme.TEXT if d.reward > -0.5 else theme.WARN, True
        )
        surf.blit(rw, (x + w - rw.get_width(), y))
        tw = self._t(surf, f"{d.clock} {d.action}", (x, y), 12, colour, newest)
        self.log_lines.append(f"{d.clock} {d.action}")
        after = x + tw + 6
        if d.place:  # the station's name, as the map labels it
            # A ROUTE sends the EV there (the route's arrow); a LOAD_SHIFT caps it.
            place = f"→ {d.place}" if d.verb == "ROUTE" else f"at {d.place}"
            col = theme.ROUTE if d.verb == "ROUTE" else theme.WARN
            img = self.text.get(place, 11, col)
            if (
                after + img.get_width() < x + w - rw.get_width() - 6
            ):  # never over the reward
                surf.blit(img, (after, y + 1))
                after += img.get_width() + 6
        tag = self.text.get("manual", 10, theme.ACCENT)
        if d.source == "manual" and after + tag.get_width() < x + w - 50:
            surf.blit(tag, (after, y + 2))
        y += 16
        if not newest:
            return y
        parts = [f"{k} {v:+.2f}" for k, v in d.parts.items() if abs(v) >= 0.005]
        notes = [("   ".join(parts) or "no cost", theme.TEXT_DIM, True)]
        if d.forced:
            notes.append((forced_note(d), theme.WARN, False))
        elif not d.valid:
            notes.append((d.reason, theme.BAD, False))
        if d.gave_up:
            ids = " ".join(f"E{e}" for e in d.gave_up)
            notes.append((f"gave up (out of patience): {ids}", theme.WARN, False))
        if d.debug:
            dbg = d.debug
            raw = str(dbg.get("raw", ""))[:40]
            line = f"{dbg.get('source', '?')} · {dbg.get('latency_ms', 0):.0f} ms · {raw!r}"
            notes.append((line, theme.ACCENT, False))
        for note, col, breakdown in notes:
            self.log_lines.append(note)
            for line in theme.wrap(self.text, note, 10, w - 8):
                img = self.text.get(line, 10, col)
                surf.blit(img, (x + 8, y))
                if breakdown:
                    self.breakdown_rects.append(img.get_rect(topleft=(x + 8, y)))
                y += 14
        return y

    def _kpis(self, surf, ctrl, x, y, w):  # noqa: ANN001, ANN202
        kpis = ctrl.state["kpis"]
        head = "Episode KPIs"
        if len(ctrl.sources) > 1:  # after P: say who made the decisions
            total = sum(ctrl.sources.values())
            mix = ", ".join(
                f"{name} {100 * n / total:.0f} %"
                for name, n in ctrl.sources.most_common(3)
            )
            head += f" · {mix}"
        for line in theme.wrap(self.text, head, 13, w, True)[:1]:
            self._t(surf, line, (x, y), 13, theme.TEXT, True)
        y += 20
        col_w = w // 2
        self.kpi_text = {}
        for i, (key, label, fmt) in enumerate(KPI_ROWS):
            cx = x + (i % 2) * col_w
            cy = y + (i // 2) * 17
            if cy > self.rect.bottom - 58 - 20:  # the legend's top
                break
            value = float(kpis.get(key, 0.0))
            shown = fmt.format(value)
            if key in NOT_YET and not kpis.get(NOT_YET[key]):
                shown = "–"
            elif key == "invalid_action_pct" and ctrl.forced:
                shown += f" ({len(ctrl.forced)} forced)"
            self.kpi_text[key] = shown
            self._t(surf, label, (cx, cy), 11, theme.TEXT_DIM)
            v = self.text.get(shown, 11, theme.TEXT, True)
            surf.blit(v, (cx + col_w - v.get_width() - 8, cy))
        y += ((len(KPI_ROWS) + 1) // 2) * 17
        room = (self.rect.bottom - 58 - 10 - y) // 13
        if ctrl.forced and room > 0:  # why the invalid share is not zero, here
            ids = ", ".join(f"E{d.ev} {d.clock}" for d in ctrl.forced[-3:])
            note = (
                f"invalid: {ids} had no valid action left (no station in range, "
                "DEFERs used up): counted invalid, turned away"
            )
            self.log_lines.append(note)
            for line in theme.wrap(self.text, note, 10, w)[: min(2, room)]:
                self._t(surf, line, (x, y - 2), 10, theme.WARN)
                y += 13
        return y


def forced_note(d) -> str:  # noqa: ANN001
    """Why a forced decision is invalid, in the log."""
    return (
        f"E{d.ev} had no valid action left (no station in range, DEFERs used up): "
        "any answer is invalid and turns it away"
    )
