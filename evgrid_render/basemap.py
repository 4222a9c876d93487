"""The static base map, rendered once per window size into a surface.

Lakes, parks, the Outer Ring Road, radial and peripheral roads come from
``basemap_data``; localities and the road graph from ``evgrid_core.load_city()``.
The labels are placed by ``layout`` (clear of the stations) and drawn here.
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


SCALE_KM = 5  # [km] the scale bar's length


RUN_OFF_PX = 4000.0  # [px] a radial road goes on this far past its last point


def road_lines(proj: Projection) -> dict[str, list[tuple[float, float]]]:
    """Every named major road as screen points: the radial roads drawn on past
    their last point along its heading (they leave the map at its edge rather
    than stop in the open), then the peripheral roads as they are."""
    out: dict[str, list[tuple[float, float]]] = {}
    for name, road in bm.RADIAL_ROADS.items():
        pts = [proj.to_px(*p) for p in road]
        (x0, y0), (x1, y1) = pts[-2], pts[-1]
        d = max(1e-9, ((x1 - x0) ** 2 + (y1 - y0) ** 2) ** 0.5)
        pts.append((x1 + (x1 - x0) / d * RUN_OFF_PX, y1 + (y1 - y0) / d * RUN_OFF_PX))
        out[name] = pts
    for name, road in bm.PERIPHERAL_ROADS.items():
        out[name] = [proj.to_px(*p) for p in road]
    return out


def render_basemap(
    city,  # noqa: ANN001 - evgrid_core.City
    proj: Projection,
    size: tuple[int, int],
    map_rect: pygame.Rect,
    text: theme.TextCache,
    labels: list[tuple[pygame.Surface, pygame.Rect]],
) -> pygame.Surface:
    """The static map; ``labels`` (rendered text at its placed box) go on top."""
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
    for pts in road_lines(proj).values():
        pygame.draw.lines(surf, theme.ROAD_MAJOR, False, pts, width)
    pygame.draw.lines(
        surf,
        theme.ROAD_RING,
        True,
        [proj.to_px(*p) for p in bm.OUTER_RING_ROAD],
        width + 1,
    )
    # Localities that have no station (stations are drawn live, with their names).
    station_nodes = {st.node for st in city.stations}
    for node, (lat, lon) in city.coords.items():
        if node not in station_nodes:
            pygame.draw.circle(surf, theme.LOCALITY, proj.to_px(lat, lon), 2)
    for img, rect in labels:
        surf.blit(img, rect.topleft)
    _scale_bar(surf, proj, map_rect, text)
    surf.set_clip(clip)
    return surf


def scale_bar_rects(proj: Projection, rect: pygame.Rect) -> list[pygame.Rect]:
    """Where the scale bar and the north arrow are (nothing is placed on them)."""
    w = int(proj.km_to_px(SCALE_KM))
    return [
        pygame.Rect(rect.left + 12, rect.bottom - 28, w + 50, 24),
        pygame.Rect(rect.right - 34, rect.top + 6, 22, 36),
    ]


def _scale_bar(surf: pygame.Surface, proj: Projection, rect: pygame.Rect, text) -> None:  # noqa: ANN001
    km = SCALE_KM
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
