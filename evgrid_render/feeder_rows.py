"""The panel's feeder rows: each feeder's load in MW against its limit, the %
beside it, the EV share, and the power shed when there is any.

A row: the feeder (or, while an event holds it, ``F3 FAULT 60 %`` in the event
colour), a bar of the load against the limit (0-120 %; the EV share the lighter
right part; notches at the soft limit and 100 %; red past 100 % for the EV load
shed), then ``2.31/2.70`` [MW], the % and ``EV 0.42`` [MW]. A shedding feeder gets
a second line with the shed MW. The figures are the core's state's, as reported.
"""

from __future__ import annotations

import math

import pygame

from evgrid_core.observation import HT_FLOOR_PU

from . import theme
from .events import active_events
from .sprites import sprite
from .voltage import draw_voltage_block

FULL = 1.2  # the bar spans 0..120 % of the limit
VOLT_COLUMN = 42  # [px] the feeders' lowest voltage, network grid models only
NAME_W = 92  # [px]
MW_W, PCT_W, EV_W = 66, 48, 44  # [px] the figure columns (">100 %" fits)


def ev_tint(colour: theme.Colour) -> theme.Colour:
    """The lighter shade that marks the EV share of a feeder's load."""
    return tuple(round(c + (255 - c) * 0.55) for c in colour)  # type: ignore[return-value]


def util_label(u: float, soft_limit: float) -> str:
    """``u`` as a whole percentage; when rounding would put the number on the
    other side of the soft limit or 100 % than ``u`` (and its colour), ``>90 %``
    instead: a green and an amber bar never both read "90 %", and every row
    shows whole numbers."""
    colour = theme.stress_colour(u, soft_limit)
    shown = round(u * 100)
    if theme.stress_colour(shown / 100, soft_limit) == colour:
        return f"{shown:.0f} %"
    edge = 100 if u > 1.0 else round(soft_limit * 100)
    return f">{edge} %" if u > edge / 100 else f"<{math.ceil(u * 100):.0f} %"


def feeder_figures(f: dict) -> tuple[str, str]:
    """(load/limit, EV) [MW] of one feeder of the core's state, as the row shows."""
    load = (f["background_kw"] + f["ev_kw"]) / 1000.0
    return (
        f"{load:.2f}/{f['capacity_kw'] / 1000.0:.2f}",
        f"EV {f['ev_kw'] / 1000.0:.2f}",
    )


def mark(
    surf: pygame.Surface, colour: theme.Colour, x: int, top: int, bottom: int
) -> None:
    """A limit mark that shows on any fill: a dark line through the bar, notches
    of ``colour`` above and below it."""
    pygame.draw.line(surf, theme.PANEL_BG, (x, top), (x, bottom - 1), 2)
    pygame.draw.line(surf, colour, (x, top - 3), (x, top - 1), 2)
    pygame.draw.line(surf, colour, (x, bottom), (x, bottom + 2), 2)


class FeederRows:
    """Draws the rows; keeps where (tests) and what (the figures) it drew."""

    def __init__(self, text: theme.TextCache) -> None:
        self.text = text
        self.gauge_rects: dict[int, pygame.Rect] = {}  # feeder id -> bar
        self.volt_rects: dict[int, pygame.Rect] = {}  # feeder id -> voltage
        self.figures: dict[int, tuple[str, str, str]] = {}  # id -> (MW, %, EV)
        self.shed_text: dict[int, str] = {}  # id -> the shed line
        self.event_rects: dict[int, pygame.Rect] = {}  # id -> the event's tag
        # id -> its lowest point of supply in kV, and where (network models only)
        self.kv: dict[int, tuple[str, pygame.Rect]] = {}

    def _t(self, surf, s, pos, size=11, colour=theme.TEXT, bold=False) -> int:  # noqa: ANN001
        img = self.text.get(s, size, colour, bold)
        surf.blit(img, pos)
        return img.get_width()

    def _right(self, surf, s, right, y, size, colour, bold=False) -> pygame.Rect:  # noqa: ANN001
        img = self.text.get(s, size, colour, bold)
        rect = img.get_rect(topright=(right, y))
        surf.blit(img, rect)
        return rect

    def draw(self, surf, ctrl, x: int, y: int, w: int, tick: int) -> int:  # noqa: ANN001
        surf.blit(sprite("feeder", 18), (x, y))
        self._t(surf, "BESCOM 11 kV feeders", (x + 22, y + 1), 13, theme.TEXT, True)
        volts = ctrl.obs.feeder_min_voltage_pu  # the network grid models only
        right = x + w - (0 if volts is None else VOLT_COLUMN)
        heads = (
            ("EV MW", right),
            ("%", right - EV_W),
            ("MW/limit", right - EV_W - PCT_W),
        )
        for label, r in heads:
            self._right(surf, label, r, y + 4, 10, theme.TEXT_DIM)
        if volts is not None:
            self._right(surf, "min p.u.", x + w, y + 4, 10, theme.TEXT_DIM)
        y += 22
        self.volt_rects, self.figures, self.shed_text, self.event_rects = {}, {}, {}, {}
        bar_x = x + NAME_W
        bar_w = right - MW_W - PCT_W - EV_W - 6 - bar_x
        shed_kw = ctrl.obs.feeder_shed_kw  # [kW] EV charging the protection shed
        events = {
            e.feeder: e
            for e in active_events(ctrl.events, tick)
            if e.feeder is not None
        }
        for f in ctrl.state["feeders"]:
            fid, u = f["id"], f["utilisation"]
            shed = float(shed_kw[fid - 1])
            colour = theme.stress_colour(u, ctrl.soft_limit)
            pygame.draw.rect(
                surf, theme.feeder_colour(fid - 1), (x, y + 3, 8, 8), border_radius=2
            )
            event = events.get(fid)
            if event is None:
                self._t(surf, f"F{fid} {f['name'].split(' (')[0]}", (x + 12, y))
            else:  # the event in force, in its colour
                tag = f"F{fid} {event.short.split()[0]}"  # F3 FAULT, F2 DR
                tw = self._t(surf, tag, (x + 12, y), 11, theme.EVENT, True)
                self.event_rects[fid] = pygame.Rect(x + 12, y, tw, 14)
            bar = pygame.Rect(bar_x, y + 1, bar_w, 12)
            self.gauge_rects[fid] = bar
            self._bar(surf, ctrl, f, bar, colour, shed, event is not None)
            mw, ev = feeder_figures(f)
            pct = util_label(u, ctrl.soft_limit)
            self.figures[fid] = (mw, pct, ev)
            load_mw, limit_mw = mw.split("/")
            r = right - EV_W - PCT_W
            lim = self._right(
                surf, limit_mw, r, y, 11, theme.EVENT if event else theme.TEXT
            )
            self._right(surf, f"{load_mw}/", lim.x, y, 11, theme.TEXT)
            self._right(surf, pct, right - EV_W, y, 11, colour, True)
            self._right(surf, ev, right, y, 10, ev_tint(theme.OK))
            if volts is not None:
                self._volt(surf, float(volts[fid - 1]), x + w, y, fid)
            y += 17
            if shed > 0:
                line = f"shed {shed / 1000.0:.2f} MW of EV charging (protection)"
                self.shed_text[fid] = line
                self._t(surf, line, (x + 12, y - 2), 10, theme.OVER)
                y += 12
        self.kv = {}
        state = getattr(ctrl, "network", None)  # the network grid models only
        if volts is not None and state is not None:
            y, self.kv = draw_voltage_block(surf, self.text, state, x, y, w)
        return y

    def _bar(self, surf, ctrl, f, bar, colour, shed, event) -> None:  # noqa: ANN001
        u, bar_x, bar_w = f["utilisation"], bar.x, bar.w
        pygame.draw.rect(surf, (44, 50, 64), bar, border_radius=3)
        fill = int(bar_w * min(u, FULL) / FULL)
        if fill > 0:
            pygame.draw.rect(surf, colour, (bar_x, bar.y, fill, 12), border_radius=3)
        ev_frac = f["ev_kw"] / f["capacity_kw"] if f["capacity_kw"] else 0.0
        ev_w = min(fill, int(bar_w * min(ev_frac, FULL) / FULL))
        if ev_w > 0:  # the EV share of the load: the fill's right part, lighter
            pygame.draw.rect(
                surf, ev_tint(colour), (bar_x + fill - ev_w, bar.y, ev_w, 12)
            )
        if shed > 0:  # the EV load asked above capacity and cut: red past 100 %
            cut = shed / f["capacity_kw"] if f["capacity_kw"] else FULL
            cut_w = max(6, int(bar_w * min(cut, FULL - 1.0) / FULL))  # visible
            pygame.draw.rect(
                surf, theme.OVER, (bar_x + int(bar_w / FULL), bar.y + 3, cut_w, 6)
            )
        for lim, col in ((ctrl.soft_limit, theme.WARN), (1.0, theme.OVER)):
            mark(surf, col, bar_x + int(bar_w * lim / FULL), bar.y, bar.bottom)
        if event:  # the limit itself is reduced: the bar's end in the event colour
            end = bar_x + int(bar_w / FULL)
            pygame.draw.line(
                surf, theme.EVENT, (end, bar.y - 3), (end, bar.bottom + 2), 2
            )

    def _volt(
        self, surf: pygame.Surface, v: float, right: int, y: int, feeder: int
    ) -> None:
        """A feeder's lowest voltage, right-aligned at ``right``: red below the
        11 kV floor."""
        low = v < HT_FLOOR_PU
        img = self.text.get(f"{v:.3f}", 11, theme.OVER if low else theme.TEXT, low)
        surf.blit(img, (right - img.get_width(), y))
        self.volt_rects[feeder] = img.get_rect(topright=(right, y))
