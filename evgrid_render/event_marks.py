"""A scenario's events on the map, while they are in force.

A fault or demand-response hold: a dashed ring round every station of the
feeder; a closure: a cross through the station; a DT swap: a tag under it; a
surge: rings round its busiest localities. A box lists what is in force. All in
``theme.EVENT``, a colour nothing else uses.
"""

from __future__ import annotations

import math

import pygame

from . import theme
from .events import GridEvent

LINE = 16  # [px] a banner line


def draw_event_marks(
    surf: pygame.Surface,
    layer,  # noqa: ANN001 - scene.MapLayer
    text: theme.TextCache,
    active: list[GridEvent],
    avoid: tuple[pygame.Rect, ...] = (),
) -> pygame.Rect | None:
    """Draw ``active`` onto the map; returns the list box's rect (None if none)."""
    if not active:
        return None
    clip = surf.get_clip()
    surf.set_clip(layer.rect)
    g, col = layer.glyph, theme.EVENT
    for e in active:
        if e.feeder is not None:
            for s, st in enumerate(layer.city.stations):
                if st.feeder == e.feeder - 1:
                    _dashed_ring(surf, col, layer.station_px[s], g.arc_r + 9)
        elif e.kind == "closure" and e.station is not None:
            x, y = layer.station_px[e.station - 1]
            d = g.r + 2
            pygame.draw.line(surf, col, (x - d, y - d), (x + d, y + d), 4)
            pygame.draw.line(surf, col, (x - d, y + d), (x + d, y - d), 4)
        elif e.kind == "dt_swap" and e.station is not None:
            x, y = layer.station_px[e.station - 1]
            img = text.get(e.short, 10, (20, 20, 24), True)
            # Below the marker, clear of the DT-overload halo (arc_r + 6).
            tag = img.get_rect(midtop=(round(x), round(y) + g.arc_r + 10)).inflate(6, 2)
            pygame.draw.rect(surf, col, tag, border_radius=3)
            surf.blit(img, img.get_rect(center=tag.center))
        elif e.kind == "surge":
            for place in e.localities:
                if place in layer.node_px:
                    pygame.draw.circle(surf, col, layer.node_px[place], 11, 2)
    box = _banner(surf, layer, text, active, avoid)
    surf.set_clip(clip)
    return box


def _dashed_ring(
    surf: pygame.Surface, col: theme.Colour, centre: tuple[float, float], r: int
) -> None:
    rect = pygame.Rect(0, 0, 2 * r, 2 * r)
    rect.center = (round(centre[0]), round(centre[1]))
    for k in range(12):  # 12 dashes, each half its slot
        a = k * math.pi / 6
        pygame.draw.arc(surf, col, rect, a, a + math.pi / 12, 3)


def _banner(surf, layer, text, active, avoid) -> pygame.Rect:  # noqa: ANN001
    """The list of events in force, where the map has room (top left first)."""
    lines = [f"⚡ {e.label}" for e in active]
    w = min(layer.rect.w - 32, max(text.get(s, 11).get_width() for s in lines) + 28)
    wrapped = [ln for s in lines for ln in theme.wrap(text, s, 11, w - 20)]
    size = (w, 8 + LINE * len(wrapped))
    rect = layer.overlays.spot(
        size, (layer.rect.x + 16 + w // 2, layer.rect.y + 16), tuple(avoid)
    )
    shade = pygame.Surface(rect.size, pygame.SRCALPHA)
    shade.fill((14, 17, 24, 230))
    surf.blit(shade, rect.topleft)
    pygame.draw.rect(surf, theme.EVENT, rect, 1, border_radius=4)
    y = rect.y + 4
    for s in wrapped:
        surf.blit(text.get(s, 11, theme.TEXT), (rect.x + 10, y))
        y += LINE
    return rect
