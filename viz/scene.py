"""The live map layer: stations, plugs, queues, EVs on the road, chosen routes.

Reads the controller's snapshot of ``env.state()`` and its display clock; draws,
decides nothing.
"""

from __future__ import annotations

import math

import pygame

from . import theme
from .basemap import fit_city, render_basemap
from .motion import RouteBook, ev_position
from .sprites import sprite

HIGHLIGHT_TICKS = 2.0  # a decision's route stays highlighted this many ticks


class MapLayer:
    """Everything drawn inside the map rectangle."""

    def __init__(
        self, city, map_rect: pygame.Rect, size: tuple[int, int], text
    ) -> None:  # noqa: ANN001
        self.city, self.rect, self.text = city, map_rect, text
        self.proj = fit_city(city, (map_rect.x, map_rect.y, map_rect.w, map_rect.h))
        self.background = render_basemap(city, self.proj, size, map_rect, text)
        self.routes = RouteBook(city)
        self.marker = max(14, int(min(map_rect.w, map_rect.h) / 34))
        self.station_px, self.offmap = self._place_stations(city)
        self.node_px = {
            n: self._pin(*self.proj.to_px(*ll)) for n, ll in city.coords.items()
        }
        self._ev_sprites: dict[int, pygame.Surface] = {}
        self._labels = self._place_labels(city)

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

    def _place_labels(self, city) -> list[tuple[float, float]]:  # noqa: ANN001
        """Greedy label placement: below, above, left or right, avoiding overlaps."""
        r = self.marker // 2 + 6
        taken = [
            pygame.Rect(x - r, y - r, 2 * r + 40, 2 * r) for x, y in self.station_px
        ]  # markers and their plug squares
        out = []
        for (x, y), st in zip(self.station_px, city.stations, strict=True):
            w, h = self.text.get(st.name, 11).get_size()
            candidates = (
                (x - w / 2, y + r - 2),
                (x - w / 2, y - r - h + 1),
                (x - r - w - 2, y - h / 2),
                (x - w / 2, y + r + 12),
                (x - w / 2, y - r - h - 10),
            )
            best = candidates[0]
            for cx, cy in candidates:
                rect = pygame.Rect(cx, cy, w, h)
                if rect.collidelist(taken) == -1 and self.rect.contains(rect):
                    best = (cx, cy)
                    break
            taken.append(pygame.Rect(best[0], best[1], w, h))
            out.append(best)
        return out

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
        self._draw_routes(surf, ctrl, minute)
        highlight = ctrl.choice.station if ctrl.manual else None
        for s, st in enumerate(ctrl.state["stations"]):
            self._draw_station(surf, s, st, s + 1 in (selected, highlight))
        self._draw_evs(surf, ctrl, minute)
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
        if ctrl.manual and ctrl.obs.request is not None:
            origin = ctrl.obs.request.node
            pts = [
                self.proj.to_px(*p)
                for p in self.routes.route(origin, ctrl.choice.station).points
            ]
            if len(pts) >= 2:
                pygame.draw.lines(surf, theme.ACCENT, False, pts, 3)

    def _draw_station(
        self, surf: pygame.Surface, s: int, st: dict, selected: bool
    ) -> None:
        x, y = self.station_px[s]
        r = self.marker // 2 + 3
        ring = theme.feeder_colour(st["feeder"] - 1) if st["open"] else (90, 90, 96)
        if selected:
            pygame.draw.circle(surf, theme.ACCENT, (x, y), r + 7, 3)
        pygame.draw.circle(surf, (12, 14, 20), (x, y), r + 3)
        # Load arc: station power against its limit (or its LOAD_SHIFT cap).
        frac = min(1.0, st["load_kw"] / st["cap_kw"]) if st["cap_kw"] > 0 else 0.0
        if frac > 0.005:
            arc = pygame.Rect(0, 0, 2 * r + 6, 2 * r + 6)
            arc.center = (int(x), int(y))
            pygame.draw.arc(
                surf, theme.ROUTE, arc, math.pi / 2 - 2 * math.pi * frac, math.pi / 2, 3
            )
        pygame.draw.circle(surf, ring, (x, y), r, 3)
        icon = sprite("station", 2 * r - 6) if st["open"] else None
        if icon is not None:
            surf.blit(icon, (x - icon.get_width() / 2, y - icon.get_height() / 2))
        else:
            pygame.draw.circle(surf, (70, 72, 80), (x, y), r - 3)
        # Plugs per kind: one square per plug, filled when busy.
        cell = max(3, self.marker // 5)
        bx = x + r + 4
        by = y - 1.5 * (cell + 1)
        for k in range(len(st["plugs"])):  # charger kinds
            plugs, busy = st["plugs"][k], st["busy"][k]
            for p in range(plugs):
                rect = (bx + p * (cell + 1), by + k * (cell + 1), cell, cell)
                if p < busy:
                    pygame.draw.rect(surf, theme.KIND_COLOURS[k], rect)
                else:
                    pygame.draw.rect(surf, (70, 78, 94), rect, 1)
        queue = sum(st["queue"])
        if queue:
            badge = self.text.get(f"+{queue}", 11, (255, 255, 255), bold=True)
            bw = badge.get_width() + 8
            qrect = pygame.Rect(0, 0, bw, 15)
            qrect.topleft = (int(bx), int(by + 3 * (cell + 1) + 1))
            pygame.draw.rect(surf, theme.BAD, qrect, border_radius=7)
            surf.blit(badge, (qrect.x + 4, qrect.y))
        if st.get("load_shift_until_tick") is not None:
            tag = self.text.get("DR", 10, (20, 20, 20), bold=True)
            pygame.draw.rect(
                surf, theme.WARN, (x - r - 18, y - r - 2, 18, 13), border_radius=3
            )
            surf.blit(tag, (x - r - 16, y - r - 2))
        lx, ly = self._labels[s]
        label = self.text.get(
            st["name"], 11, theme.TEXT if st["open"] else theme.TEXT_DIM
        )
        surf.blit(label, (lx, ly))
        note = self.offmap.get(st["id"])
        if note:
            img = self.text.get(note, 10, theme.TEXT_DIM)
            surf.blit(img, (lx + label.get_width() / 2 - img.get_width() / 2, ly + 14))

    def _ev_sprite(self, angle_step: int) -> pygame.Surface:
        spr = self._ev_sprites.get(angle_step)
        if spr is None:
            base = sprite("ev", max(12, self.marker - 6))
            spr = pygame.transform.rotate(base, angle_step * 22.5)
            self._ev_sprites[angle_step] = spr
        return spr

    def _draw_evs(self, surf: pygame.Surface, ctrl, minute: float) -> None:  # noqa: ANN001
        request = ctrl.state["request"]
        pulse = 0.5 + 0.5 * math.sin(
            minute * 2.4
        )  # from simulation time: deterministic
        for ev in ctrl.state["evs"]:
            status = ev["status"]
            if status in ("pending", "deferred"):
                x, y = self.node_px[ev["node"]]
                jitter = (ev["id"] * 7919) % 13 - 6, (ev["id"] * 104729) % 11 - 5
                p = (x + jitter[0], y + jitter[1])
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
