"""The panel's chart of feeder utilisation over the episode so far.

What it plots is the core's per-tick record (``Controller.feeder_history``). Its
vertical range grows to hold every value plotted (a faulted feeder's 136 % is
drawn, not clipped) and starts just below the lowest, in 5 % steps; the soft
limit and 100 % are always in range. A clock axis runs along the bottom.
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

    def y_of(self, u: float) -> float:
        return (
            self.plot.bottom
            - 1
            - (u - self.lo) / (self.hi - self.lo) * (self.plot.h - 1)
        )


def draw_feeder_chart(surf, text: theme.TextCache, box: pygame.Rect, ctrl) -> Chart:  # noqa: ANN001
    surf.blit(
        text.get("Feeder load over the episode", 13, theme.TEXT, True), (box.x, box.y)
    )
    plot = pygame.Rect(box.x + 34, box.y + 20, box.w - 38, box.h - 20 - 14)
    pts = [(m, u) for m, u in ctrl.feeder_history if m <= ctrl.display_minute + 1e-9]
    values = [v for _, u in pts for v in u]
    chart = Chart(plot, *chart_range(values, ctrl.soft_limit))
    pygame.draw.rect(surf, (22, 26, 36), plot)
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
    # Time: the episode's clock along the bottom.
    end = max(ctrl.end_minute, 1.0)
    start = get_scenario(ctrl.state["scenario"]).start_minute
    for minute, label in hour_ticks(start, end):
        x = plot.x + (plot.w - 1) * minute / end
        pygame.draw.line(surf, theme.PANEL_EDGE, (x, plot.y), (x, plot.bottom), 1)
        img = text.get(label, 9, theme.TEXT_DIM)
        lx = min(max(x - img.get_width() / 2, plot.x - 4), box.right - img.get_width())
        surf.blit(img, (lx, plot.bottom + 2))
    if len(pts) >= 2:
        for f in range(len(pts[0][1])):
            line = [(plot.x + (plot.w - 1) * m / end, chart.y_of(u[f])) for m, u in pts]
            pygame.draw.lines(surf, theme.feeder_colour(f), False, line, 2)
    return chart
