"""The side panel: clock and signals, feeder gauges, the latest decisions with
their reward breakdown, running KPIs, the feeder load chart, the legend.
"""

from __future__ import annotations

from dataclasses import dataclass

import pygame

from evgrid_core import CHARGERS, KPI_UNITS, get_scenario
from evgrid_core.observation import HT_FLOOR_PU

from . import theme
from .chart import Chart, draw_feeder_chart
from .sprites import sprite

KEYS_HELP = (
    ("Space", "pause / resume"),
    ("N", "one decision (single step)"),
    ("+ / -", "faster / slower"),
    ("P", "next policy"),
    ("M", "manual control on / off"),
    ("R", "record MP4 on / off"),
    ("S", "screenshot (PNG)"),
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
VOLT_COLUMN = 42  # [px] the feeders' lowest voltage, network grid models only


@dataclass
class ViewFlags:
    """What the window adds on top of the controller (not simulation state)."""

    help: bool = False
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
        self.gauge_rects: dict[int, pygame.Rect] = {}  # feeder id -> bar (tests)
        self.volt_rects: dict[int, pygame.Rect] = {}  # feeder id -> voltage (tests)
        self.breakdown_rects: list[pygame.Rect] = []  # the reward parts' lines
        self.chart: Chart | None = None

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
        y = self._feeders(surf, ctrl, x, y, w)
        y = self._decisions(surf, ctrl, x, y + 4, w)
        y = self._kpis(surf, st["kpis"], x, y + 4, w)
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
        self._t(
            surf,
            "number in a ring: station S#  ·  H keys  ·  M manual  ·  click: details",
            (x, y),
            11,
            theme.TEXT_DIM,
        )

    def _feeders(self, surf, ctrl, x, y, w):  # noqa: ANN001, ANN202
        surf.blit(sprite("feeder", 18), (x, y))
        self._t(surf, "BESCOM 11 kV feeders", (x + 22, y + 1), 13, theme.TEXT, True)
        # What the bars show: the EV share (lighter), the soft limit and 100 %.
        soft = f"{ctrl.soft_limit * 100:.0f} %"
        volts = ctrl.obs.feeder_min_voltage_pu  # the network grid models only
        volt_w = 0 if volts is None else VOLT_COLUMN
        self.volt_rects = {}
        cx = x + w
        if volts is not None:
            cx -= self.text.get("min p.u.", 10, theme.TEXT_DIM).get_width()
            self._t(surf, "min p.u.", (cx, y + 3), 10, theme.TEXT_DIM)
            cx -= 14
        for label, col in (("100 %", theme.OVER), (soft, theme.WARN)):
            cx -= self.text.get(label, 10, theme.TEXT_DIM).get_width()
            self._t(surf, label, (cx, y + 3), 10, theme.TEXT_DIM)
            _mark(surf, col, cx - 5, y + 3, y + 14)
            cx -= 14
        cx -= self.text.get("EV", 10, theme.TEXT_DIM).get_width()
        self._t(surf, "EV", (cx, y + 3), 10, theme.TEXT_DIM)
        pygame.draw.rect(surf, ev_tint(theme.OK), (cx - 12, y + 4, 9, 10))
        y += 22
        bar_x, bar_w = x + 92, w - 92 - 50 - volt_w
        shed_kw = ctrl.obs.feeder_shed_kw  # [kW] EV charging the protection shed
        for f in ctrl.state["feeders"]:
            u = f["utilisation"]
            shed = float(shed_kw[f["id"] - 1])
            colour = theme.stress_colour(u, ctrl.soft_limit)
            name = f["name"].split(" (")[0]
            pygame.draw.rect(
                surf,
                theme.feeder_colour(f["id"] - 1),
                (x, y + 3, 8, 8),
                border_radius=2,
            )
            self._t(surf, f"F{f['id']} {name}", (x + 12, y), 11, theme.TEXT)
            full = 1.2  # the bar spans 0..120 %
            bar = pygame.Rect(bar_x, y + 1, bar_w, 12)
            self.gauge_rects[f["id"]] = bar
            pygame.draw.rect(surf, (44, 50, 64), bar, border_radius=3)
            fill = int(bar_w * min(u, full) / full)
            if fill > 0:
                pygame.draw.rect(
                    surf, colour, (bar_x, bar.y, fill, 12), border_radius=3
                )
            ev_frac = f["ev_kw"] / f["capacity_kw"] if f["capacity_kw"] else 0.0
            ev_w = min(fill, int(bar_w * min(ev_frac, full) / full))
            if ev_w > 0:  # the EV share of the load: the fill's right part, lighter
                pygame.draw.rect(
                    surf, ev_tint(colour), (bar_x + fill - ev_w, bar.y, ev_w, 12)
                )
            if shed > 0:  # the EV load asked above capacity and cut: red past 100 %
                cut = shed / f["capacity_kw"] if f["capacity_kw"] else full
                cut_w = max(2, int(bar_w * min(cut, full - 1.0) / full))
                lx = bar_x + int(bar_w / full)
                pygame.draw.rect(surf, theme.OVER, (lx, y + 4, cut_w, 6))
            for lim, col in ((ctrl.soft_limit, theme.WARN), (1.0, theme.OVER)):
                _mark(surf, col, bar_x + int(bar_w * lim / full), bar.y, bar.bottom)
            label = (
                ("shed", theme.OVER)
                if shed > 0
                else (util_label(u, ctrl.soft_limit), colour)
            )
            self._t(surf, label[0], (bar_x + bar_w + 7, y), 11, label[1], True)
            if volts is not None:
                self._volt(surf, float(volts[f["id"] - 1]), x + w, y, f["id"])
            y += 17
        return y

    def _volt(
        self, surf: pygame.Surface, v: float, right: int, y: int, feeder: int
    ) -> None:
        """A feeder's lowest voltage, right-aligned at ``right``: red below the
        11 kV floor."""
        low = v < HT_FLOOR_PU
        img = self.text.get(f"{v:.3f}", 11, theme.OVER if low else theme.TEXT, low)
        surf.blit(img, (right - img.get_width(), y))
        self.volt_rects[feeder] = img.get_rect(topright=(right, y))

    def _decisions(self, surf, ctrl, x, y, w):  # noqa: ANN001, ANN202
        self._t(surf, "Decisions and reward", (x, y), 13, theme.TEXT, True)
        y += 20
        self.breakdown_rects = []
        if not ctrl.decisions:
            self._t(surf, "(none yet)", (x, y), 11, theme.TEXT_DIM)
            y += 16
        for i, d in enumerate(list(ctrl.decisions)[:4]):
            colour = theme.TEXT if d.valid else theme.BAD
            rw = self.text.get(
                f"{d.reward:+.2f}",
                12,
                theme.TEXT if d.reward > -0.5 else theme.WARN,
                True,
            )
            surf.blit(rw, (x + w - rw.get_width(), y))
            tw = self._t(surf, f"{d.clock} {d.action}", (x, y), 12, colour, i == 0)
            after = x + tw + 6
            if d.place:  # the station's name, as the map labels it
                self._t(surf, f"→ {d.place}", (after, y + 1), 11, theme.ROUTE)
                after += self.text.get(f"→ {d.place}", 11, theme.ROUTE).get_width() + 6
            tag = self.text.get("manual", 10, theme.ACCENT)
            if d.source == "manual" and after + tag.get_width() < x + w - 50:
                surf.blit(tag, (after, y + 2))
            y += 16
            if i:
                continue
            parts = [f"{k} {v:+.2f}" for k, v in d.parts.items() if abs(v) >= 0.005]
            notes = [("   ".join(parts) or "no cost", theme.TEXT_DIM, True)]
            if not d.valid:
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
                for line in theme.wrap(self.text, note, 10, w - 8):
                    img = self.text.get(line, 10, col)
                    surf.blit(img, (x + 8, y))
                    if breakdown:
                        self.breakdown_rects.append(img.get_rect(topleft=(x + 8, y)))
                    y += 14
        return y

    def _kpis(self, surf, kpis, x, y, w):  # noqa: ANN001, ANN202
        self._t(surf, "Episode KPIs", (x, y), 13, theme.TEXT, True)
        y += 20
        col_w = w // 2
        for i, (key, label, fmt) in enumerate(KPI_ROWS):
            cx = x + (i % 2) * col_w
            cy = y + (i // 2) * 17
            if cy > self.rect.bottom - 16:
                break
            value = float(kpis.get(key, 0.0))
            self._t(surf, label, (cx, cy), 11, theme.TEXT_DIM)
            v = self.text.get(fmt.format(value), 11, theme.TEXT, True)
            surf.blit(v, (cx + col_w - v.get_width() - 8, cy))
        return y + ((len(KPI_ROWS) + 1) // 2) * 17


def _mark(
    surf: pygame.Surface, colour: theme.Colour, x: int, top: int, bottom: int
) -> None:
    """A limit mark that shows on any fill: a dark line through the bar, notches
    of ``colour`` above and below it."""
    pygame.draw.line(surf, theme.PANEL_BG, (x, top), (x, bottom - 1), 2)
    pygame.draw.line(surf, colour, (x, top - 3), (x, top - 1), 2)
    pygame.draw.line(surf, colour, (x, bottom), (x, bottom + 2), 2)


def ev_tint(colour: theme.Colour) -> theme.Colour:
    """The lighter shade that marks the EV share of a feeder's load."""
    return tuple(round(c + (255 - c) * 0.55) for c in colour)  # type: ignore[return-value]


def util_label(u: float, soft_limit: float) -> str:
    """``u`` as a percentage with as many decimals as it takes for the number
    shown to fall on the same side of the soft limit and 100 % as ``u`` (so a
    green and an amber bar never both read "90 %")."""
    colour = theme.stress_colour(u, soft_limit)
    for decimals in (0, 1, 2, 3):
        shown = round(u * 100, decimals)
        if theme.stress_colour(shown / 100, soft_limit) == colour:
            break
    return f"{shown:.{decimals}f} %"
