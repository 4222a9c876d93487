"""Colours, the shipped font and a cache of rendered text.

Stress colours are chosen by comparing a feeder's utilisation with the core's
``SimConfig.soft_limit`` and 1.0 (the hard limit); the thresholds are the core's.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pygame

from evgrid_core import CHARGERS

FONT_PATH = Path(__file__).parent / "fonts" / "DejaVuSans.ttf"  # has ₹ ⚡ ☀ →

Colour = tuple[int, int, int]

# --- Palette (a dark map: bright data stands out) -----------------------------
BG: Colour = (16, 20, 28)
MAP_BG: Colour = (22, 28, 38)
PANEL_BG: Colour = (28, 33, 44)
PANEL_EDGE: Colour = (58, 66, 82)
TEXT: Colour = (226, 230, 238)
TEXT_DIM: Colour = (140, 150, 168)
LAKE: Colour = (34, 74, 112)
LAKE_EDGE: Colour = (52, 100, 146)
LAKE_TEXT: Colour = (110, 160, 210)
PARK: Colour = (30, 66, 46)
ROAD_MAJOR: Colour = (82, 90, 108)
ROAD_RING: Colour = (96, 106, 128)  # grey-blue: never read as a route (yellow)
ROAD_GRAPH: Colour = (50, 58, 74)
LOCALITY: Colour = (96, 106, 124)
ROUTE: Colour = (255, 214, 64)
ROUTE_OLD: Colour = (180, 150, 60)
ARC_TRACK: Colour = (52, 58, 72)  # the load arc's empty part
PLUG_FREE: Colour = (44, 50, 64)  # a free plug's square (outlined)
PLUG_EDGE: Colour = (104, 114, 134)
ACCENT: Colour = (90, 200, 250)
OK: Colour = (88, 204, 120)  # below the soft limit
WARN: Colour = (246, 176, 56)  # above the soft limit
OVER: Colour = (236, 72, 72)  # above the hard limit (100 %)
BAD: Colour = (236, 92, 92)
# A scenario event (fault, derating, closure, DT swap, surge): one colour used by
# nothing else, on the map, the gauges, the chart's limit lines and the log.
EVENT: Colour = (255, 60, 220)
KIND_COLOURS: tuple[Colour, ...] = tuple(c.colour for c in CHARGERS)  # by kind
FEEDER_COLOURS: tuple[Colour, ...] = (
    (255, 159, 67),
    (84, 160, 255),
    (95, 230, 160),
    (200, 130, 255),
    (255, 220, 90),
    (255, 110, 150),
)
EV_COLOURS: dict[str, Colour] = {
    "car": (235, 240, 250),
    "3w": (255, 208, 80),
    "cab": (120, 220, 255),
}


def stress_colour(utilisation: float, soft_limit: float) -> Colour:
    """Green below the soft limit, amber up to 100 %, red above."""
    if utilisation > 1.0:
        return OVER
    if utilisation > soft_limit:
        return WARN
    return OK


def feeder_colour(feeder_index: int) -> Colour:
    return FEEDER_COLOURS[feeder_index % len(FEEDER_COLOURS)]


# --- Text -----------------------------------------------------------------------
@cache
def font(size: int, bold: bool = False) -> pygame.font.Font:
    if not pygame.font.get_init():
        pygame.font.init()
    f = pygame.font.Font(str(FONT_PATH), size)
    f.bold = bold
    return f


class TextCache:
    """Rendered text surfaces, keyed by (text, size, colour, bold); bounded."""

    def __init__(self, max_items: int = 4000) -> None:
        self.max_items = max_items
        self._items: dict[tuple, pygame.Surface] = {}

    def get(
        self, text: str, size: int, colour: Colour = TEXT, bold: bool = False
    ) -> pygame.Surface:
        key = (text, size, colour, bold)
        surf = self._items.get(key)
        if surf is None:
            if len(self._items) >= self.max_items:
                self._items.clear()
            surf = font(size, bold).render(text, True, colour)
            self._items[key] = surf
        return surf


def wrap(
    cache: TextCache, text: str, size: int, width: int, bold: bool = False
) -> list[str]:
    """``text`` broken at spaces (or, for a long word such as a path, anywhere)
    into lines no wider than ``width`` px at ``size``; nothing is cut."""
    f = font(size, bold)
    lines: list[str] = []
    line = ""
    for word in text.split(" "):
        trial = f"{line} {word}" if line else word
        if f.size(trial)[0] <= width:
            line = trial
            continue
        if line:
            lines.append(line)
        while f.size(word)[0] > width and len(word) > 1:  # a path: break it anywhere
            cut = len(word)
            while cut > 1 and f.size(word[:cut])[0] > width:
                cut -= 1
            lines.append(word[:cut])
            word = word[cut:]
        line = word
    if line or not lines:
        lines.append(line)
    return lines
