"""The static base map, rendered once per window size into a surface.

Lakes, parks, the Outer Ring Road and radial roads come from ``basemap_data``;
localities and the road graph from ``evgrid_core.load_city()``.
"""

from __future__ import annotations

import pygame

from . import basemap_data as bm
from . import theme
from .projection import Projection, fit


def fit_city(city, rect: tuple[int, int, int, int]) -> Projection:  # noqa: ANN001
    """The projection that shows the city's localities near the centre inside ``rect``."""
    from evgrid_core.city import haversine_km

    near = [
        ll
        for ll in city.coords.values()
        if haversine_km(ll, bm.CITY_CENTRE) <= bm.FIT_RADIUS_KM
    ]
    return fit(near or city.coords.values(), rect, margin=40.0)


def short_name(node: str) -> str:
    return node.split(" (")[0]


def render_basemap(
    city,  # noqa: ANN001 - evgrid_core.City
    proj: Projection,
    size: tuple[int, int],
    map_rect: pygame.Rect,
    text: theme.TextCache,
) -> pygame.Surface:
    surf = (
        pygame.Surface(size).convert()
        if pygame.display.get_surface()
        else pygame.Surface(size)
    )
    surf.fill(theme.BG)
    pygame.draw.rect(surf, theme.MAP_BG, map_rect)
    clip = surf.get_clip()
    surf.set_clip(map_rect)
    # Parks and lakes.
    for (lat, lon), diameter in bm.PARKS.values():
        r = max(3, int(proj.km_to_px(diameter / 2)))
        pygame.draw.circle(surf, theme.PARK, proj.to_px(lat, lon), r)
    for (lat, lon), radius in bm.LAKES.values():
        r = max(3, int(proj.km_to_px(radius)))
        c = proj.to_px(lat, lon)
        pygame.draw.circle(surf, theme.LAKE, c, r)
        pygame.draw.circle(surf, theme.LAKE_EDGE, c, r, 1)
    # The road graph the simulation drives on.
    for a, b in city.graph.edges():
        pygame.draw.aaline(
            surf,
            theme.ROAD_GRAPH,
            proj.to_px(*city.coords[a]),
            proj.to_px(*city.coords[b]),
        )
    # Major roads on top.
    width = max(2, int(proj.px_per_km * 0.28))
    for road in bm.RADIAL_ROADS.values():
        pygame.draw.lines(
            surf, theme.ROAD_MAJOR, False, [proj.to_px(*p) for p in road], width
        )
    pygame.draw.lines(
        surf,
        theme.ROAD_RING,
        True,
        [proj.to_px(*p) for p in bm.OUTER_RING_ROAD],
        width + 1,
    )
    # Labels of roads and water.
    for name, road in bm.RADIAL_ROADS.items():
        x, y = proj.to_px(*road[-2])
        label = text.get(name, 10, theme.TEXT_DIM)
        surf.blit(label, (x + 4, y - 12))
    for name, ((lat, lon), _) in bm.LAKES.items():
        x, y = proj.to_px(lat, lon)
        label = text.get(f"{name} Lake", 9, (110, 160, 210))
        surf.blit(label, (x - label.get_width() / 2, y + 2))
    x, y = proj.to_px(*bm.OUTER_RING_ROAD[4])
    surf.blit(text.get("Outer Ring Rd", 10, theme.ROAD_RING), (x + 6, y))
    # Localities that have no station (stations are drawn live, with their names).
    station_nodes = {st.node for st in city.stations}
    for node, (lat, lon) in city.coords.items():
        if node in station_nodes:
            continue
        x, y = proj.to_px(lat, lon)
        pygame.draw.circle(surf, theme.LOCALITY, (x, y), 2)
        surf.blit(text.get(short_name(node), 9, theme.LOCALITY), (x + 4, y - 6))
    _scale_bar(surf, proj, map_rect, text)
    surf.set_clip(clip)
    return surf


def _scale_bar(surf: pygame.Surface, proj: Projection, rect: pygame.Rect, text) -> None:  # noqa: ANN001
    km = 5
    w = proj.km_to_px(km)
    x0, y0 = rect.left + 16, rect.bottom - 18
    pygame.draw.line(surf, theme.TEXT_DIM, (x0, y0), (x0 + w, y0), 2)
    for x in (x0, x0 + w):
        pygame.draw.line(surf, theme.TEXT_DIM, (x, y0 - 4), (x, y0 + 2), 2)
    surf.blit(text.get(f"{km} km", 10, theme.TEXT_DIM), (x0 + w + 6, y0 - 8))
    nx, ny = rect.right - 24, rect.top + 20
    pygame.draw.polygon(
        surf, theme.TEXT_DIM, [(nx, ny - 10), (nx - 6, ny + 6), (nx + 6, ny + 6)]
    )
    surf.blit(text.get("N", 10, theme.TEXT_DIM), (nx - 4, ny + 7))
