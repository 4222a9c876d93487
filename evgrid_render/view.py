"""One frame of the city view: map layer + panel + overlays, at any size."""

from __future__ import annotations

import pygame

from . import theme
from .event_marks import draw_event_marks
from .events import active_events
from .overlays import (
    draw_help,
    draw_manual,
    draw_message,
    draw_station_details,
    draw_why,
)
from .panel import Panel, ViewFlags
from .scene import MapLayer


def display_tick(ctrl) -> int:  # noqa: ANN001
    """The tick the display clock is in (the last tick once the episode is over)."""
    n = ctrl.env.scenario.n_ticks
    return min(int(ctrl.display_minute // ctrl.tick_minutes), n - 1)


class CityView:
    """Draws the controller's snapshot into a surface of ``size``."""

    def __init__(self, ctrl, size: tuple[int, int]) -> None:  # noqa: ANN001
        self.ctrl, self.size = ctrl, size
        self.text = theme.TextCache()
        w, h = size
        panel_w = max(360, min(440, int(w * 0.32)))
        self.map_rect = pygame.Rect(0, 0, w - panel_w, h)
        self.panel = Panel(pygame.Rect(w - panel_w, 0, panel_w, h), self.text)
        self.map = MapLayer(ctrl.env.city, self.map_rect, size, self.text)
        self.flags = ViewFlags()
        self.overlay_rects: dict[str, pygame.Rect] = {}  # what each overlay covered
        self.why_cache: dict = {}  # the "why" box's lines, per decision (key W)

    def render(self, surf: pygame.Surface) -> None:
        ctrl = self.ctrl
        if ctrl.manual:
            ctrl.manual_sync()
        self.map.draw(surf, ctrl, self.flags.selected)
        self.panel.draw(surf, ctrl, self.flags)
        boxes = self.overlay_rects
        boxes.clear()
        events = draw_event_marks(
            surf, self.map, self.text, active_events(ctrl.events, display_tick(ctrl))
        )
        if events is not None:
            boxes["events"] = events
        if self.flags.selected is not None:
            boxes["details"] = draw_station_details(
                surf, self.map, self.text, ctrl, self.flags.selected
            )
        if self.flags.why:
            why = draw_why(
                surf, self.map, self.text, ctrl, self.why_cache, tuple(boxes.values())
            )
            if why is not None:
                boxes["why"] = why
        if ctrl.manual:
            boxes["manual"] = draw_manual(
                surf, self.map, self.text, ctrl, tuple(boxes.values())
            )
        elif ctrl.message:
            boxes["message"] = draw_message(
                surf, self.map, self.text, ctrl.message, tuple(boxes.values())
            )
        if ctrl.done and ctrl.display_minute >= ctrl.end_minute:
            boxes["over"] = draw_message(
                surf,
                self.map,
                self.text,
                "Episode over: final KPIs in the panel",
                tuple(boxes.values()),
                dy=30,
            )
        if self.flags.help:
            boxes["help"] = draw_help(surf, self.map_rect, self.text)

    def click(self, pos: tuple[int, int]) -> int | None:
        """Select the station under ``pos`` (or clear the selection)."""
        station = self.map.station_at(pos) if self.map_rect.collidepoint(pos) else None
        self.flags.selected = station
        if station is not None and self.ctrl.manual:
            self.ctrl.select_station(station)
        return station
