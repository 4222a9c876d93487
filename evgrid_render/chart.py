"""The panel's chart of feeder load over the episode so far, as % of each
feeder's rating.

What it plots is the core's per-tick record (``Controller.feeder_history``: load /
the tick's usable limit) times that limit over the rating, so a faulted or
derated feeder's limit is a line of its own: drawn in the event colour from the
event's start, at the share of the rating it leaves (F3 at 60 % during
feeder_fault). Its vertical range grows to hold every value plotted (a faulted
feeder's 136 % is drawn, not clipped) and starts just below the lowest, in 5 %
steps; the soft limit and 100 % are always in range. A clock axis runs along
the bottom.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pygame

from evgrid_core import get_scenario

from . import theme

STEP = 0.05  # [utilisation] the range's rounding


def chart_range(values: list[float], soft_limit: float) -> tuple[float, float]:
    """(low, high) utilisation: every value inside, the soft limit and 100 % too."""
    lo = min([soft_limit - 0.05, *values])
    hi = max([1.0, *values])
    lo = math.floor((lo - 0.01) / STEP + 1e-9) * STEP
    hi = math.ceil((hi + 0.01) / STEP - 1e-9) * STEP
    return max(0.0, lo), hi


def hour_ticks(start_minute: float, span_minutes: float) -> list[tuple[float, str]]:
    """(minutes from the start, "HH:00") for the whole hours in the span; every
    hour up to 6 h, then every 2, 3, 4 or 6 h (at most 7 labels)."""
    step = next((h for h in (1, 2, 3, 4, 6) if span_minutes / 60 / h <= 6), 12)
    first = math.ceil(start_minute / 60)
    out = []
    hour = first
    while (hour * 60 - start_minute) <= span_minutes + 1e-9:
        if hour % step == 0 or step == 1:
            out.append((hour * 60 - start_minute, f"{hour % 24:02d}:00"))
        hour += 1
    return out


@dataclass
class Chart:
    """Where the chart drew (tests read it)."""

    plot: pygame.Rect
    lo: float
    hi: float
    limit_lines: dict[int, tuple[float, float, float]] | None = None  # feeder id ->
    # (x from, x to, share of the rating) of an event's limit, as drawn (tests)

    def y_of(self, u: float) -> float:
        return (
            self.plot.bottom
            - 1
            - (u - self.lo) / (self.hi - self.lo) * (self.plot.h - 1)
        )


def rated_share(ctrl, points) -> list[tuple[float, tuple[float, ...]]]:  # noqa: ANN001
    """(minute, load / rating per feeder) for the chart's points."""
    rated = ctrl.feeder_rated_kw
    limit = ctrl.feeder_limit_kw
    out = []
    for m, u in points:
        t = min(
            max(0, round(m / ctrl.tick_minutes) - 1), len(limit) - 1
        )  # tick i ends at m
        out.append((m, tuple(v * limit[t][f] / rated[f] for f, v in enumerate(u))))
    return out


def limit_steps(ctrl, now_tick: int) -> list[tuple[int, int, int, float]]:  # noqa: ANN001
    """(feeder id, first tick, end tick, share of the rating) for each event limit
    in force so far (its window cut at ``now_tick``, inclusive)."""
    out = []
    for e in ctrl.events:
        if e.feeder is not None and e.start_tick <= now_tick:
            out.append(
                (e.feeder, e.start_tick, min(e.end_tick, now_tick + 1), e.factor)
            )
    return out


def draw_feeder_chart(surf, text: theme.TextCache, box: pygame.Rect, ctrl) -> Chart:  # noqa: ANN001
    surf.blit(
        text.get("Feeder load, % of rating", 13, theme.TEXT, True), (box.x, box.y)
    )
    plot = pygame.Rect(box.x + 34, box.y + 20, box.w - 38, box.h - 20 - 14)
    pts = [(m, u) for m, u in ctrl.feeder_history if m <= ctrl.display_minute + 1e-9]
    pts = rated_share(ctrl, pts)
    n = ctrl.env.scenario.n_ticks
    now = min(int(ctrl.display_minute // ctrl.tick_minutes), n - 1)
    steps = limit_steps(ctrl, now)
    values = [v for _, u in pts for v in u] + [share for *_, share in steps]
    chart = Chart(plot, *chart_range(values, ctrl.soft_limit))
    pygame.draw.rect(surf, (22, 26, 36), plot)
    end = max(ctrl.end_minute, 1.0)
    tm = ctrl.tick_minutes

    def x_of(minute: float) -> float:
        return plot.x + (plot.w - 1) * minute / end

    chart.limit_lines = {}
    for _fid, t0, t1, _share in steps:  # the event's window, shaded, then its limit
        x0, x1 = x_of(t0 * tm), x_of(t1 * tm)
        pygame.draw.rect(surf, (48, 26, 52), (x0, plot.y, max(1, x1 - x0), plot.h))
    # Utilisation: the soft limit, 100 % and the range's ends, labelled.
    marks = [(ctrl.soft_limit, theme.WARN), (1.0, theme.OVER)]
    marks += [(chart.hi, theme.TEXT_DIM), (chart.lo, theme.TEXT_DIM)]
    used: list[pygame.Rect] = []
    for lim, col in marks:
        y = chart.y_of(lim)
        if col != theme.TEXT_DIM:
            pygame.draw.line(surf, col, (plot.x, y), (plot.right - 1, y), 1)
        label = text.get(f"{lim * 100:.0f}%", 9, col)
        rect = label.get_rect(midright=(plot.x - 3, round(y)))
        if rect.collidelist(used) == -1:
            surf.blit(label, rect)
            used.append(rect)
    for fid, t0, t1, share in steps:
        x0, x1, y = x_of(t0 * tm), x_of(t1 * tm), chart.y_of(share)
        pygame.draw.line(surf, theme.EVENT, (x0, y), (x1, y), 2)
        chart.limit_lines[fid] = (x0, x1, share)
        label = text.get(f"F{fid} limit {share * 100:.0f}%", 9, theme.EVENT)
        surf.blit(label, label.get_rect(bottomleft=(x0 + 2, y - 1)))
    # Time: the episode's clock along the bottom.
    start = get_scenario(ctrl.state["scenario"]).start_minute
    for minute, label in hour_ticks(start, end):
        x = x_of(minute)
        pygame.draw.line(surf, theme.PANEL_EDGE, (x, plot.y), (x, plot.bottom), 1)
        img = text.get(label, 9, theme.TEXT_DIM)
        lx = min(max(x - img.get_width() / 2, plot.x - 4), box.right - img.get_width())
        surf.blit(img, (lx, plot.bottom + 2))
    if len(pts) >= 2:
        for f in range(len(pts[0][1])):
            line = [(x_of(m), chart.y_of(u[f])) for m, u in pts]
            pygame.draw.lines(surf, theme.feeder_colour(f), False, line, 2)
    return chart
