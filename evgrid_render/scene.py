"""The live map layer: stations, plugs, queues, EVs on the road, chosen routes.

Reads the controller's snapshot of ``env.state()`` and its display clock; draws,
decides nothing.
"""

from __future__ import annotations

import math

import pygame

from . import theme
from .basemap import fit_city, render_basemap
from .layout import OverlaySpots, layout_map
from .motion import RouteBook, ev_position
from .sprites import sprite
from .voltage import VoltageMap

HIGHLIGHT_TICKS = 2.0  # a decision's route stays highlighted this many ticks


def dt_overloaded(loading: float) -> bool:
    """A station's distribution transformer above its nameplate kVA (its loading
    is kVA / rating; the limit in ``docs/grid.md``)."""
    return loading > 1.0


class MapLayer:
    """Everything drawn inside the map rectangle."""

    def __init__(
        self, city, map_rect: pygame.Rect, size: tuple[int, int], text
    ) -> None:  # noqa: ANN001
        self.city, self.rect, self.text = city, map_rect, text
        self.proj = fit_city(city, (map_rect.x, map_rect.y, map_rect.w, map_rect.h))
        self.routes = RouteBook(city)
        self.marker = max(14, int(min(map_rect.w, map_rect.h) / 34))
        self.station_px, self.offmap = self._place_stations(city)
        self.node_px = {
            n: self._pin(*self.proj.to_px(*ll)) for n, ll in city.coords.items()
        }
        self.layout = layout_map(
            city, self.proj, map_rect, self.station_px, self.offmap, self.marker, text
        )
        self.glyph = self.layout.glyph
        labels = [
            (text.get(s, size, colour), box)
            for s, size, colour, box in self.layout.base_labels
        ]
        self.background = render_basemap(city, self.proj, size, map_rect, text, labels)
        self._draw_leaders(self.background)
        self.overlays = OverlaySpots(self.layout, map_rect)
        # Each station's drawing covers its marker (and selection ring), plugs,
        # badges and name; it is drawn once per change and blitted.
        g = self.glyph
        self._station_boxes = [
            g.marker_rect(x, y)
            .inflate(12, 12)
            .unionall([*fp[1:], self.layout.plug_rects[s], self.layout.label_rects[s]])
            for s, ((x, y), fp) in enumerate(
                zip(self.station_px, self.layout.footprints, strict=True)
            )
        ]
        self._station_images: dict[tuple, pygame.Surface] = {}
        self._station_nodes = {st.node for st in city.stations}
        self._ev_sprites: dict[int, pygame.Surface] = {}
        self._voltage_map: VoltageMap | None = None  # built on the first network

    def voltage_map(self, network) -> VoltageMap:  # noqa: ANN001
        """The network's sections and buses on this map (built once)."""
        if self._voltage_map is None:
            self._voltage_map = VoltageMap(network, self.node_px)
        return self._voltage_map

    def _draw_leaders(self, surf: pygame.Surface) -> None:
        """A thin line from a station to its name when the name sits apart."""
        g = self.glyph
        for (x, y), box in zip(self.station_px, self.layout.label_rects, strict=True):
            near = self.layout.glyph.marker_rect(x, y).inflate(12, 12)
            if box.colliderect(near):
                continue
            tx = min(max(x, box.left), box.right)
            ty = min(max(y, box.top), box.bottom)
            d = math.hypot(tx - x, ty - y)
            if d > g.arc_r:
                start = (x + (tx - x) * g.arc_r / d, y + (ty - y) * g.arc_r / d)
                pygame.draw.aaline(surf, theme.TEXT_DIM, start, (tx, ty))

    @property
    def _inner(self) -> pygame.Rect:
        return self.rect.inflate(-2 * self.marker - 40, -2 * self.marker - 20)

    def _pin(self, x: float, y: float) -> tuple[float, float]:
        """A point outside the view, moved to the view's edge (off-map localities)."""
        inner = self._inner
        return min(max(x, inner.left), inner.right), min(
            max(y, inner.top), inner.bottom
        )

    def _place_stations(self, city) -> tuple[list[tuple[float, float]], dict[int, str]]:  # noqa: ANN001
        """Screen positions; a station outside the view sits at its edge, labelled."""
        from evgrid_core.city import haversine_km

        inner = self._inner
        pts, offmap = [], {}
        centre = self.proj.to_latlon(*self.rect.center)
        for st in city.stations:
            x, y = self.proj.to_px(st.lat, st.lon)
            if not inner.collidepoint(x, y):
                cx, cy = self._pin(x, y)
                km = haversine_km((st.lat, st.lon), centre)
                arrow = ("↑" if y < inner.top else "↓" if y > inner.bottom else "") + (
                    "→" if x > inner.right else "←" if x < inner.left else ""
                )
                offmap[st.id] = f"{arrow} {km:.0f} km from centre"
                x, y = cx, cy
            pts.append((x, y))
        return pts, offmap

    def station_at(self, pos: tuple[int, int]) -> int | None:
        """The station (1-based) whose marker is under ``pos``."""
        best, best_d = None, (self.marker + 4) ** 2
        for i, (x, y) in enumerate(self.station_px):
            d = (x - pos[0]) ** 2 + (y - pos[1]) ** 2
            if d <= best_d:
                best, best_d = i + 1, d
        return best

    # --- Drawing ----------------------------------------------------------------------
    def draw(self, surf: pygame.Surface, ctrl, selected: int | None) -> None:  # noqa: ANN001
        surf.blit(self.background, (0, 0))
        clip = surf.get_clip()
        surf.set_clip(self.rect)
        minute = ctrl.display_minute
        state = getattr(ctrl, "network", None)  # the network grid models only
        if state is not None:  # the feeders' 11 kV lines by voltage, under the rest
            self.voltage_map(state.network).draw(surf, state)
        self._draw_routes(surf, ctrl, minute)
        highlight = ctrl.choice.station if ctrl.manual else None
        dt = ctrl.obs.station_transformer_loading  # the network grid models only
        # EVs on the road first: a car arriving at a station passes under its
        # marker and never hides the station's number.
        self._draw_evs(surf, ctrl, minute)
        for s, st in enumerate(ctrl.state["stations"]):
            over = dt is not None and dt_overloaded(float(dt[s]))
            self._draw_station(surf, s, st, s + 1 in (selected, highlight), over)
        surf.set_clip(clip)

    def _draw_routes(self, surf: pygame.Surface, ctrl, minute: float) -> None:  # noqa: ANN001
        tick = ctrl.tick_minutes
        for d in ctrl.recent:
            age = (minute - d.minute) / tick
            if (
                d.station is None
                or d.origin is None
                or age < 0
                or age > HIGHLIGHT_TICKS
            ):
                continue
            pts = [
                self.proj.to_px(*p)
                for p in self.routes.route(d.origin, d.station).points
            ]
            fresh = age < 1.0
            colour = theme.ROUTE if fresh else theme.ROUTE_OLD
            if len(pts) >= 2:
                pygame.draw.lines(surf, colour, False, pts, 4 if fresh else 2)
            pygame.draw.circle(surf, colour, pts[0], 4)
        chosen = ctrl.selected_ev() if ctrl.manual else None
        if chosen is not None:  # the route the composer would send the selected EV
            origin = chosen["node"]
            pts = [
                self.proj.to_px(*p)
                for p in self.routes.route(origin, ctrl.choice.station).points
            ]
            if len(pts) >= 2:
                pygame.draw.lines(surf, theme.ACCENT, False, pts, 3)

    def _draw_station(
        self,
        surf: pygame.Surface,
        s: int,
        st: dict,
        selected: bool,
        dt_over: bool = False,
    ) -> None:
        """One station, drawn once per change of what it shows (cached image)."""
        frac = min(1.0, st["load_kw"] / st["cap_kw"]) if st["cap_kw"] > 0 else 0.0
        key = (
            s,
            st["open"],
            round(frac * 360),
            tuple(st["busy"]),
            sum(st["queue"]),
            st.get("load_shift_until_tick") is not None,
            selected,
            dt_over,
        )
        img = self._station_images.get(key)
        if img is None:
            if len(self._station_images) > 1000:
                self._station_images.clear()
            img = self._station_image(s, st, frac, selected, dt_over)
            self._station_images[key] = img
        surf.blit(img, self._station_boxes[s].topleft)

    def _station_image(
        self, s: int, st: dict, frac: float, selected: bool, dt_over: bool = False
    ) -> pygame.Surface:
        g, lay = self.glyph, self.layout
        box = self._station_boxes[s]
        img = pygame.Surface(box.size, pygame.SRCALPHA)
        x, y = self.station_px[s]
        ox, oy = box.topleft
        c = (round(x) - ox, round(y) - oy)
        ring = theme.feeder_colour(st["feeder"] - 1) if st["open"] else (90, 90, 96)
        if dt_over:  # its distribution transformer above its rating: a red halo
            pygame.draw.circle(img, theme.OVER, c, g.arc_r + 6, 3)
        if selected:
            pygame.draw.circle(img, theme.ACCENT, c, g.arc_r + 5, 3)
        pygame.draw.circle(img, (12, 14, 20), c, g.arc_r + 1)
        # Load arc: station power against its limit (or its LOAD_SHIFT cap), on a
        # track that shows the whole limit.
        arc = pygame.Rect(0, 0, 2 * g.arc_r, 2 * g.arc_r)
        arc.center = c
        pygame.draw.circle(img, theme.ARC_TRACK, c, g.arc_r, g.arc_w)
        if frac > 0.005:
            start = math.pi / 2 - 2 * math.pi * frac
            pygame.draw.arc(img, theme.ROUTE, arc, start, math.pi / 2, g.arc_w)
        pygame.draw.circle(img, ring, c, g.r, g.ring_w)
        number = self.text.get(
            str(st["id"]),
            g.number_size,
            (255, 255, 255) if st["open"] else theme.TEXT_DIM,
            bold=True,
        )
        img.blit(number, number.get_rect(center=c))
        # Plugs per kind (a row each): one square per plug, filled when busy.
        plug = lay.plug_rects[s].move(-ox, -oy)
        for k, (plugs, busy) in enumerate(zip(st["plugs"], st["busy"], strict=True)):
            for p in range(plugs):
                rect = (plug.x + p * g.pitch, plug.y + k * g.pitch, g.cell, g.cell)
                if p < busy:
                    pygame.draw.rect(img, theme.KIND_COLOURS[k], rect)
                else:
                    pygame.draw.rect(img, theme.PLUG_FREE, rect)
                    pygame.draw.rect(img, theme.PLUG_EDGE, rect, 1)
        queue = sum(st["queue"])
        if queue:
            badge = self.text.get(f"+{queue}", 10, (255, 255, 255), bold=True)
            slot = g.badge_rect(x, y).move(-ox, -oy)
            pill = pygame.Rect(0, 0, min(slot.w, badge.get_width() + 8), slot.h)
            pill.center = slot.center
            pygame.draw.rect(img, theme.BAD, pill, border_radius=7)
            img.blit(badge, badge.get_rect(center=pill.center))
        if st.get("load_shift_until_tick") is not None:
            tag = self.text.get("DR", 9, (20, 20, 20), bold=True)
            slot = g.tag_rect(x, y).move(-ox, -oy)
            pygame.draw.rect(img, theme.WARN, slot, border_radius=3)
            img.blit(tag, tag.get_rect(center=slot.center))
        lx, ly = lay.label_rects[s].move(-ox, -oy).topleft
        colour = theme.TEXT if st["open"] else theme.TEXT_DIM
        for i, line in enumerate(lay.label_lines[s]):
            text = self.text.get(
                line, g.label_size, colour if i == 0 else theme.TEXT_DIM
            )
            img.blit(text, (lx, ly))
            ly += text.get_height()
        return img

    def waiting_px(self, ev: dict) -> tuple[float, float]:
        """Where a waiting EV's dot goes: by its locality, spread a little; at a
        station's locality, round the marker's left side (its id stays readable)."""
        x, y = self.node_px[ev["node"]]
        if ev["node"] in self._station_nodes:
            a = math.radians(130 + (ev["id"] * 37) % 100)  # left side, 130..230 deg
            d = self.glyph.arc_r + 6
            return x + d * math.cos(a), y - d * math.sin(a)
        return x + (ev["id"] * 7919) % 13 - 6, y + (ev["id"] * 104729) % 11 - 5

    def _ev_sprite(self, angle_step: int) -> pygame.Surface:
        spr = self._ev_sprites.get(angle_step)
        if spr is None:
            base = sprite("ev", max(12, self.marker - 6))
            spr = pygame.transform.rotate(base, angle_step * 22.5)
            self._ev_sprites[angle_step] = spr
        return spr

    def _draw_evs(self, surf: pygame.Surface, ctrl, minute: float) -> None:  # noqa: ANN001
        # The EV being decided: the core's request, or the one manual control selected.
        chosen = ctrl.selected_ev() if ctrl.manual else None
        request = chosen["id"] if chosen is not None else ctrl.state["request"]
        pulse = 0.5 + 0.5 * math.sin(
            minute * 2.4
        )  # from simulation time: deterministic
        for ev in ctrl.state["evs"]:
            status = ev["status"]
            if status in ("pending", "deferred"):
                p = self.waiting_px(ev)
                colour = theme.EV_COLOURS.get(ev["class"], theme.TEXT)
                if ev["id"] == request:
                    pygame.draw.circle(surf, theme.ACCENT, p, 7 + 4 * pulse, 2)
                if status == "deferred":
                    pygame.draw.circle(surf, (120, 120, 130), p, 3)
                else:
                    pygame.draw.circle(surf, colour, p, 4)
                    if ev["critical"]:
                        pygame.draw.circle(surf, theme.BAD, p, 6, 1)
                continue
            pos = ev_position(ev, minute, self.routes)
            if pos is None:
                continue
            x, y = self.proj.to_px(*pos)
            ahead = ev_position(ev, minute + 0.5, self.routes)
            angle = 0.0
            if ahead is not None:
                ax, ay = self.proj.to_px(*ahead)
                if abs(ax - x) + abs(ay - y) > 1e-6:
                    angle = math.degrees(math.atan2(-(ay - y), ax - x))
            spr = self._ev_sprite(round(angle / 22.5) % 16)
            surf.blit(spr, (x - spr.get_width() / 2, y - spr.get_height() / 2))
            if ev["critical"]:
                pygame.draw.circle(surf, theme.BAD, (x, y), spr.get_width() / 2 + 1, 2)
