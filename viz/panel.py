"""The side panel and overlays: clock and signals, feeder gauges, the latest
decisions with their reward breakdown, running KPIs, manual composer, help.
"""

from __future__ import annotations

from dataclasses import dataclass

import pygame

from evgrid_core import CHARGERS, KPI_UNITS, format_action, get_scenario

from . import theme
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


@dataclass
class ViewFlags:
    """What the window adds on top of the controller (not simulation state)."""

    help: bool = False
    selected: int | None = None  # station id shown in detail
    recording: bool = False
    speed: float = 1.0  # [ticks per second] live
    fps: float = 0.0


class Panel:
    def __init__(self, rect: pygame.Rect, text: theme.TextCache) -> None:
        self.rect, self.text = rect, text
        self.gauge_rects: dict[int, pygame.Rect] = {}  # feeder id -> bar (tests)

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
        clock_min = int(sc.start_minute + minute) % 1440
        clock = f"{clock_min // 60:02d}:{clock_min % 60:02d}"
        self._t(surf, clock, (x, y - 4), 34, theme.TEXT, True)
        tick = min(int(minute // ctrl.tick_minutes), st["n_ticks"])
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
        if legend_y - y > 70:
            self._history(surf, ctrl, pygame.Rect(x, y + 6, w, legend_y - y - 20))
        self._legend(surf, x, legend_y, w)

    def _history(self, surf, ctrl, box: pygame.Rect) -> None:  # noqa: ANN001
        """Feeder utilisation over the episode so far (what the core reported per tick)."""
        self._t(
            surf, "Feeder load over the episode", (box.x, box.y), 13, theme.TEXT, True
        )
        plot = pygame.Rect(box.x + 30, box.y + 20, box.w - 34, box.h - 24)
        lo, hi = 0.7, 1.1
        pygame.draw.rect(surf, (22, 26, 36), plot)

        def py(u: float) -> float:
            return plot.bottom - (min(max(u, lo), hi) - lo) / (hi - lo) * plot.h

        for lim, col in ((ctrl.soft_limit, theme.WARN), (1.0, theme.OVER)):
            pygame.draw.line(surf, col, (plot.x, py(lim)), (plot.right, py(lim)), 1)
            label = self.text.get(f"{lim * 100:.0f}%", 9, col)
            surf.blit(label, (box.x, py(lim) - 6))
        end = max(ctrl.end_minute, 1.0)
        pts = [
            (m, u) for m, u in ctrl.feeder_history if m <= ctrl.display_minute + 1e-9
        ]
        if len(pts) < 2:
            return
        for f in range(len(pts[0][1])):
            line = [(plot.x + plot.w * m / end, py(u[f])) for m, u in pts]
            pygame.draw.lines(surf, theme.feeder_colour(f), False, line, 2)

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
            "H: keys · M: manual · click a station for details",
            (x, y),
            11,
            theme.TEXT_DIM,
        )

    def _feeders(self, surf, ctrl, x, y, w):  # noqa: ANN001, ANN202
        surf.blit(sprite("feeder", 18), (x, y))
        self._t(surf, "BESCOM 11 kV feeders", (x + 22, y + 1), 13, theme.TEXT, True)
        self._t(
            surf,
            f"soft {ctrl.soft_limit * 100:.0f} %",
            (x + w - 60, y + 2),
            11,
            theme.TEXT_DIM,
        )
        y += 22
        bar_x, bar_w = x + 92, w - 92 - 46
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
            self.gauge_rects[f["id"]] = pygame.Rect(bar_x, y + 1, bar_w, 12)
            pygame.draw.rect(
                surf, (44, 50, 64), (bar_x, y + 1, bar_w, 12), border_radius=3
            )
            fill = int(bar_w * min(u, full) / full)
            if fill > 0:
                pygame.draw.rect(
                    surf, colour, (bar_x, y + 1, fill, 12), border_radius=3
                )
            ev_frac = f["ev_kw"] / f["capacity_kw"] if f["capacity_kw"] else 0.0
            ev_w = int(bar_w * min(ev_frac, full) / full)
            if ev_w > 0:  # the EV share of the load, hatched on the right of the fill
                pygame.draw.rect(
                    surf, (255, 255, 255), (bar_x + fill - ev_w, y + 10, ev_w, 3)
                )
            if shed > 0:  # the EV load asked above capacity and cut: red past 100 %
                cut = shed / f["capacity_kw"] if f["capacity_kw"] else full
                cut_w = max(2, int(bar_w * min(cut, full - 1.0) / full))
                lx = bar_x + int(bar_w / full)
                pygame.draw.rect(surf, theme.OVER, (lx, y + 4, cut_w, 6))
            for lim, col in ((ctrl.soft_limit, theme.WARN), (1.0, theme.OVER)):
                lx = bar_x + int(bar_w * lim / full)
                pygame.draw.line(surf, col, (lx, y - 1), (lx, y + 14), 2)
            label = ("shed", theme.OVER) if shed > 0 else (f"{u * 100:.0f} %", colour)
            self._t(surf, label[0], (bar_x + bar_w + 6, y), 11, label[1], True)
            y += 17
        return y

    def _decisions(self, surf, ctrl, x, y, w):  # noqa: ANN001, ANN202
        self._t(surf, "Decisions and reward", (x, y), 13, theme.TEXT, True)
        y += 20
        if not ctrl.decisions:
            self._t(surf, "(none yet)", (x, y), 11, theme.TEXT_DIM)
            y += 16
        for i, d in enumerate(list(ctrl.decisions)[:4]):
            colour = theme.TEXT if d.valid else theme.BAD
            tw = self._t(surf, f"{d.clock} {d.action}", (x, y), 12, colour, i == 0)
            if d.source == "manual":
                self._t(surf, "manual", (x + tw + 6, y + 2), 10, theme.ACCENT)
            rw = self.text.get(
                f"{d.reward:+.2f}",
                12,
                theme.TEXT if d.reward > -0.5 else theme.WARN,
                True,
            )
            surf.blit(rw, (x + w - rw.get_width(), y))
            y += 16
            if i == 0:
                parts = [f"{k} {v:+.2f}" for k, v in d.parts.items() if abs(v) >= 0.005]
                line = "  ".join(parts) or "no cost"
                self._t(surf, line[:64], (x + 8, y), 10, theme.TEXT_DIM)
                y += 14
                if not d.valid:
                    self._t(surf, d.reason[:64], (x + 8, y), 10, theme.BAD)
                    y += 14
                if d.gave_up:
                    ids = " ".join(f"E{i}" for i in d.gave_up)
                    line = f"gave up (out of patience): {ids}"
                    self._t(surf, line[:64], (x + 8, y), 10, theme.WARN)
                    y += 14
                if d.debug:
                    dbg = d.debug
                    line = f"{dbg.get('source', '?')} · {dbg.get('latency_ms', 0):.0f} ms · {str(dbg.get('raw', ''))[:40]!r}"
                    self._t(surf, line[:64], (x + 8, y), 10, theme.ACCENT)
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


# --- Overlays on the map ----------------------------------------------------------
def _box(surf: pygame.Surface, rect: pygame.Rect) -> None:
    shade = pygame.Surface(rect.size, pygame.SRCALPHA)
    shade.fill((14, 17, 24, 226))
    surf.blit(shade, rect.topleft)
    pygame.draw.rect(surf, theme.PANEL_EDGE, rect, 1, border_radius=4)


def draw_help(
    surf: pygame.Surface, map_rect: pygame.Rect, text: theme.TextCache
) -> None:
    rect = pygame.Rect(0, 0, 420, 24 + 18 * len(KEYS_HELP))
    rect.center = map_rect.center
    _box(surf, rect)
    y = rect.y + 12
    for key, what in KEYS_HELP:
        surf.blit(text.get(key, 13, theme.ACCENT, True), (rect.x + 16, y))
        surf.blit(text.get(what, 13, theme.TEXT), (rect.x + 140, y))
        y += 18


def draw_station_details(surf, map_rect, text, ctrl, station: int) -> None:  # noqa: ANN001
    st = ctrl.state["stations"][station - 1]
    city_st = ctrl.env.city.stations[station - 1]
    f = ctrl.state["feeders"][st["feeder"] - 1]
    shed = float(ctrl.obs.feeder_shed_kw[f["id"] - 1])
    lines = [
        (f"S{st['id']} {st['name']}", theme.TEXT, True),
        (city_st.node, theme.TEXT_DIM, False),
        (
            f"feeder F{f['id']} {f['name']}  {f['utilisation'] * 100:.0f} %"
            + (f"  shed {shed:.0f} kW" if shed > 0 else ""),
            theme.OVER if shed > 0 else theme.TEXT,
            False,
        ),
        (
            "open" if st["open"] else "closed",
            theme.OK if st["open"] else theme.BAD,
            False,
        ),
        (f"load {st['load_kw']:.0f} / {st['cap_kw']:.0f} kW", theme.TEXT, False),
    ]
    for k, c in enumerate(CHARGERS):
        if st["plugs"][k]:
            lines.append(
                (
                    f"{c.name} {c.kw:g} kW: {st['busy'][k]}/{st['plugs'][k]} busy, "
                    f"queue {st['queue'][k]}",
                    theme.KIND_COLOURS[k],
                    False,
                )
            )
    if st.get("load_shift_until_tick") is not None:
        lines.append(
            (
                f"load-shifted until tick {st['load_shift_until_tick']}",
                theme.WARN,
                False,
            )
        )
    if ctrl.obs.request is not None:
        lines.append(
            (
                f"E{ctrl.obs.request.id}: {ctrl.obs.travel_min[station - 1]:.0f} min drive",
                theme.ACCENT,
                False,
            )
        )
    rect = pygame.Rect(map_rect.x + 12, map_rect.y + 12, 300, 14 + 17 * len(lines))
    _box(surf, rect)
    y = rect.y + 7
    for s, colour, bold in lines:
        surf.blit(text.get(s, 12, colour, bold), (rect.x + 10, y))
        y += 17


def draw_manual(surf, map_rect, text, ctrl) -> None:  # noqa: ANN001
    req = ctrl.obs.request
    lines = [("MANUAL CONTROL", theme.ACCENT, True)]
    if req is None:
        lines.append(("no request to decide", theme.TEXT_DIM, False))
    else:
        lines.append(
            (
                f"request E{req.id} {req.klass} at {req.node.split(' (')[0]}",
                theme.TEXT,
                False,
            )
        )
        lines.append(
            (
                f"SoC {req.soc * 100:.0f}% -> {req.target * 100:.0f}%  range {req.range_km:.0f} km"
                + ("  CRITICAL" if req.critical else ""),
                theme.TEXT_DIM,
                False,
            )
        )
        pending = ", ".join(f"E{e}" for e in ctrl.state["pending"])
        lines.append((f"pending: {pending}"[:60], theme.TEXT_DIM, False))
        lines.append((f"> {format_action(ctrl.manual_action())}", theme.ROUTE, True))
    if ctrl.message:
        lines.append(
            (
                ctrl.message[:70],
                theme.BAD if ctrl.message.startswith("not sent") else theme.OK,
                False,
            )
        )
    lines.append(
        (
            "A verb · Tab EV · Up/Down station · Left/Right value · Enter send",
            theme.TEXT_DIM,
            False,
        )
    )
    rect = pygame.Rect(0, 0, min(map_rect.w - 24, 520), 14 + 18 * len(lines))
    rect.bottomleft = (map_rect.x + 12, map_rect.bottom - 34)
    _box(surf, rect)
    y = rect.y + 7
    for s, colour, bold in lines:
        surf.blit(text.get(s, 12, colour, bold), (rect.x + 10, y))
        y += 18


def draw_message(surf, map_rect, text, message: str) -> None:  # noqa: ANN001
    img = text.get(message[:90], 12, theme.TEXT)
    rect = pygame.Rect(0, 0, img.get_width() + 20, 24)
    rect.midtop = (map_rect.centerx, map_rect.y + 8)
    _box(surf, rect)
    surf.blit(img, (rect.x + 10, rect.y + 4))
