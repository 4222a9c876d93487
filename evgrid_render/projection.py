"""Lat/lon to pixels: one uniform scale, with the cos(latitude) correction."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

KM_PER_DEG_LAT = 111.32  # [km/deg] mean metres per degree of latitude / 1000


@dataclass(frozen=True)
class Projection:
    """An equirectangular projection fitted to a pixel rectangle.

    x grows east, y grows south. One scale (px per km) for both axes, so a km is
    the same length in every direction on screen.
    """

    lat0: float  # [deg] reference latitude (centre of the view)
    lon0: float  # [deg] reference longitude
    px_per_km: float
    cx: float  # [px] screen x of (lat0, lon0)
    cy: float  # [px] screen y of (lat0, lon0)

    @property
    def km_per_deg_lon(self) -> float:
        return KM_PER_DEG_LAT * math.cos(math.radians(self.lat0))

    def to_px(self, lat: float, lon: float) -> tuple[float, float]:
        x = self.cx + (lon - self.lon0) * self.km_per_deg_lon * self.px_per_km
        y = self.cy - (lat - self.lat0) * KM_PER_DEG_LAT * self.px_per_km
        return x, y

    def to_latlon(self, x: float, y: float) -> tuple[float, float]:
        lon = self.lon0 + (x - self.cx) / (self.km_per_deg_lon * self.px_per_km)
        lat = self.lat0 - (y - self.cy) / (KM_PER_DEG_LAT * self.px_per_km)
        return lat, lon

    def km_to_px(self, km: float) -> float:
        return km * self.px_per_km


def fit(
    points: Iterable[tuple[float, float]],
    rect: tuple[int, int, int, int],
    margin: float = 24.0,
) -> Projection:
    """The projection that fits ``points`` (lat, lon) inside ``rect`` (x, y, w, h)."""
    pts = list(points)
    lats = [p[0] for p in pts]
    lons = [p[1] for p in pts]
    lat0 = (min(lats) + max(lats)) / 2
    lon0 = (min(lons) + max(lons)) / 2
    kx = KM_PER_DEG_LAT * math.cos(math.radians(lat0))
    width_km = max((max(lons) - min(lons)) * kx, 1e-6)
    height_km = max((max(lats) - min(lats)) * KM_PER_DEG_LAT, 1e-6)
    x, y, w, h = rect
    scale = min((w - 2 * margin) / width_km, (h - 2 * margin) / height_km)
    return Projection(lat0, lon0, scale, x + w / 2, y + h / 2)
