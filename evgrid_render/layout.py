"""Where the map's fixed parts go at one size: each station's marker, plug grid,
name (with its id in the marker), and the base map's labels (localities, lakes,
roads), placed by one pass (``labels.place``) so that no label or plug grid
overlaps a station or another label. Built once per window size.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pygame

from . import basemap_data as bm
from . import theme
from .basemap import road_lines, scale_bar_rects, short_name
from .labels import Item, around, free_spot, place
from .projection import Projection

Point = tuple[float, float]


@dataclass(frozen=True)
class Glyph:
    """A station marker's sizes at one map size [px]."""

    r: int  # ring's outer radius
    ring_w: int  # ring width
    arc_r: int  # load arc's outer radius
    arc_w: int  # load arc width
    cell: int  # one plug's square
    gap: int  # between plug squares
    number_size: int  # [pt] the station id inside the ring
    label_size: int  # [pt] the station's name

    @classmethod
    def for_marker(cls, marker: int) -> Glyph:
        w = max(3, round(marker / 5))
        r = marker // 2 + 3
        return cls(
            r=r,
            ring_w=w,
            arc_r=r + w + 1,
            arc_w=w,
            cell=max(5, round(marker * 0.29)),
            gap=2,
            number_size=max(9, marker // 2),
            label_size=12 if marker >= 18 else 11,
        )

    @property
    def pitch(self) -> int:
        return self.cell + self.gap

    def marker_rect(self, x: float, y: float) -> pygame.Rect:
        rect = pygame.Rect(0, 0, 2 * self.arc_r + 2, 2 * self.arc_r + 2)
        rect.center = (round(x), round(y))
        return rect

    def badge_rect(self, x: float, y: float) -> pygame.Rect:
        """The queue badge's slot, hanging from the marker's bottom."""
        return pygame.Rect(round(x) - 14, round(y) + self.r - 1, 28, 15)

    def tag_rect(self, x: float, y: float) -> pygame.Rect:
        """The demand-response tag's slot, over the marker's upper left."""
        return pygame.Rect(round(x) - self.r - 8, round(y) - self.r - 6, 20, 13)

    def plug_size(self, plugs: tuple[int, ...]) -> tuple[int, int]:
        return max(plugs) * self.pitch - self.gap, len(plugs) * self.pitch - self.gap


@dataclass
class MapLayout:
    """The placed boxes; ``station_boxes`` is what overlays keep off."""

    glyph: Glyph
    station_px: list[Point]
    footprints: list[list[pygame.Rect]]  # per station: marker, badge and tag slots
    plug_rects: list[pygame.Rect]
    label_rects: list[pygame.Rect]
    label_lines: list[tuple[str, ...]]  # name (and, off the map, how far)
    base_labels: list[tuple[str, int, theme.Colour, pygame.Rect]] = field(
        default_factory=list
    )  # localities, lakes, roads: (text, size, colour, box)
    reserved: list[pygame.Rect] = field(default_factory=list)  # scale bar, north

    @property
    def station_boxes(self) -> list[pygame.Rect]:
        boxes = [r for fp in self.footprints for r in fp]
        return boxes + self.plug_rects + self.label_rects

    @property
    def all_label_boxes(self) -> list[pygame.Rect]:
        return self.label_rects + [b for *_, b in self.base_labels]


def _road_points(pts: list[Point], bounds: pygame.Rect, every: float) -> list[Point]:
    """Points every ``every`` px along a polyline, those inside ``bounds``."""
    out: list[Point] = []
    for (x0, y0), (x1, y1) in zip(pts, pts[1:], strict=False):
        n = max(1, int(((x1 - x0) ** 2 + (y1 - y0) ** 2) ** 0.5 / every))
        for i in range(n):
            t = (i + 0.5) / n
            p = (x0 + (x1 - x0) * t, y0 + (y1 - y0) * t)
            if bounds.collidepoint(p):
                out.append(p)
    return out


def _beside_point(p: Point, size: tuple[int, int], gap: int = 4) -> list:
    box = pygame.Rect(0, 0, 2, 2)
    box.center = (round(p[0]), round(p[1]))
    return list(around(box, size, gap))


def _plug_spots(marker: pygame.Rect, size: tuple[int, int]) -> tuple:
    """A plug grid's places: right of the marker, left, below, above, corners."""
    out: list = []
    slides = (0.0, -0.6, 0.6)
    for ring in (0, 6, 14):
        spots = around(marker, size, 3, (ring,), slides)
        sides = [spots[4 * i : 4 * i + 4] for i in range(len(slides))]
        for side in (2, 3, 0, 1):  # right, left, below, above
            out += [group[side] for group in sides]
        out += spots[4 * len(slides) :]
    return tuple(out)


def layout_map(
    city,  # noqa: ANN001 - evgrid_core.City
    proj: Projection,
    map_rect: pygame.Rect,
    station_px: list[Point],
    offmap: dict[int, str],
    marker: int,
    text: theme.TextCache,
) -> MapLayout:
    g = Glyph.for_marker(marker)
    bounds = map_rect.inflate(-8, -8)
    footprints = [
        [g.marker_rect(x, y), g.badge_rect(x, y), g.tag_rect(x, y)]
        for x, y in station_px
    ]
    reserved = scale_bar_rects(proj, map_rect)
    station_nodes = {st.node for st in city.stations}
    dots = {
        node: proj.to_px(*ll)
        for node, ll in city.coords.items()
        if node not in station_nodes
    }
    obstacles = [r for fp in footprints for r in fp] + reserved
    obstacles += [
        pygame.Rect(round(x) - 3, round(y) - 3, 6, 6) for x, y in dots.values()
    ]
    items: list[Item] = []
    lines: list[tuple[str, ...]] = []
    for s, st in enumerate(city.stations):
        marker_box = footprints[s][0]
        size = g.plug_size(st.plugs)
        items.append(Item(("plugs", s), size, _plug_spots(marker_box, size)))
        note = offmap.get(st.id)
        label = (st.name, note) if note else (st.name,)
        lines.append(label)
        w = max(text.get(t, g.label_size).get_width() for t in label)
        h = sum(text.get(t, g.label_size).get_height() for t in label)
        glyph_box = marker_box.union(footprints[s][1])
        items.append(
            Item(
                ("label", s),
                (w, h),
                around(glyph_box, (w, h), 1, (0, 6, 14, 24), (0.0, -0.6, 0.6)),
            )
        )
    # The base map's labels: optional, left out where there is no room.
    base: dict[tuple, tuple[str, int, theme.Colour]] = {}
    for node, p in dots.items():
        name = short_name(node)
        size = text.get(name, 9).get_size()
        base[("locality", node)] = (name, 9, theme.LOCALITY)
        items.append(
            Item(("locality", node), size, tuple(_beside_point(p, size)), False)
        )
    for name, ((lat, lon), radius) in bm.LAKES.items():
        s_ = f"{name} Lake"
        size = text.get(s_, 9).get_size()
        c = proj.to_px(lat, lon)
        r = max(3, int(proj.km_to_px(radius)))
        box = pygame.Rect(0, 0, 2 * r, 2 * r)
        box.center = (round(c[0]), round(c[1]))
        inside = (box.centerx - size[0] // 2, box.centery - size[1] // 2)
        base[("lake", name)] = (s_, 9, theme.LAKE_TEXT)
        items.append(Item(("lake", name), size, (inside, *around(box, size, 1)), False))
    roads = road_lines(proj)
    roads["Outer Ring Rd"] = [proj.to_px(*p) for p in bm.OUTER_RING_ROAD]
    for name, pts in roads.items():
        colour = theme.ROAD_RING if name == "Outer Ring Rd" else theme.TEXT_DIM
        size = text.get(name, 10).get_size()
        base[("road", name)] = (name, 10, colour)
        cands = [
            c for p in _road_points(pts, bounds, 40) for c in _beside_point(p, size)
        ]
        items.append(Item(("road", name), size, tuple(cands), False))
    placed = place(items, obstacles, bounds)
    n = len(city.stations)
    return MapLayout(
        glyph=g,
        station_px=station_px,
        footprints=footprints,
        plug_rects=[placed[("plugs", s)] for s in range(n)],
        label_rects=[placed[("label", s)] for s in range(n)],
        label_lines=lines,
        base_labels=[(*base[k], placed[k]) for k in base if k in placed],
        reserved=reserved,
    )


class OverlaySpots:
    """Where each overlay goes: clear of the stations, their names and the other
    overlays, nearest its preferred point. Cached: the answer only changes with
    the box's size."""

    def __init__(self, layout: MapLayout, map_rect: pygame.Rect) -> None:
        self.bounds = map_rect.inflate(-16, -16)
        self.avoid = layout.station_boxes  # the scale bar may go under a box
        self._cache: dict[tuple, pygame.Rect] = {}

    def spot(
        self,
        size: tuple[int, int],
        prefer: tuple[int, int],
        also_avoid: tuple[pygame.Rect, ...] = (),
    ) -> pygame.Rect:
        key = (size, prefer, tuple(tuple(r) for r in also_avoid))
        rect = self._cache.get(key)
        if rect is None:
            if len(self._cache) > 256:
                self._cache.clear()
            rect = free_spot(size, self.bounds, self.avoid + list(also_avoid), prefer)
            self._cache[key] = rect
        return rect.copy()

    def clear(
        self, rect: pygame.Rect, also_avoid: tuple[pygame.Rect, ...] = ()
    ) -> bool:
        """Whether ``rect`` is clear of every station box and of ``also_avoid``."""
        return rect.collidelist(self.avoid + list(also_avoid)) == -1
