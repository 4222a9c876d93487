"""Base-map geometry of Bengaluru (lat, lon), for drawing only.

Source: ``shared/reference/bangalore/basemap_approx.md`` ("Approximate base-map
geometry"), hand-placed from public place coordinates, good to a few hundred
metres, not survey data. Localities, the road graph and the stations are not
here: they come from ``evgrid_core.load_city()``.
"""

from __future__ import annotations

LatLon = tuple[float, float]

# The centre the radial roads start from (Majestic / KR Circle area).
CITY_CENTRE: LatLon = (12.9767, 77.5713)
# The view fits localities within this distance of the centre; farther ones (the
# airport, ~29 km out) are drawn at the map's edge with their distance.
FIT_RADIUS_KM = 20.0

# Outer Ring Road, a closed loop clockwise from Hebbal.
OUTER_RING_ROAD: tuple[LatLon, ...] = (
    (13.0358, 77.5970),
    (13.0450, 77.6200),
    (13.0230, 77.6680),
    (13.0076, 77.6950),
    (12.9569, 77.7011),
    (12.9260, 77.6762),
    (12.9170, 77.6230),
    (12.9166, 77.6101),
    (12.9063, 77.5857),
    (12.9180, 77.5500),
    (12.9420, 77.5230),
    (12.9700, 77.5100),
    (13.0050, 77.5250),
    (13.0280, 77.5400),
    (13.0358, 77.5970),
)

# Radial roads, from the centre outward (drawn on past their last point, along its
# heading, to the map's edge).
RADIAL_ROADS: dict[str, tuple[LatLon, ...]] = {
    "Bellary Rd (NH 44)": (
        (12.9767, 77.5713),
        (13.0358, 77.5970),
        (13.1007, 77.5963),
        (13.1990, 77.7070),
    ),
    "Tumkur Rd (NH 48)": ((12.9767, 77.5713), (13.0329, 77.5273), (13.0700, 77.4800)),
    "Mysore Rd": (
        (12.9767, 77.5713),
        (12.9500, 77.5350),
        (12.9081, 77.4827),
        (12.8700, 77.4600),
    ),
    "Hosur Rd (NH 44)": (
        (12.9600, 77.6000),
        (12.9175, 77.6242),
        (12.8452, 77.6602),
        (12.8300, 77.6800),
    ),
    "Old Airport Rd": (
        (12.9756, 77.6066),
        (12.9609, 77.6387),
        (12.9569, 77.7011),
        (12.9698, 77.7500),
    ),
    "Old Madras Rd (NH 75)": (
        (12.9756, 77.6066),
        (12.9900, 77.6500),
        (13.0076, 77.6950),
        (13.0200, 77.7800),
    ),
}

# The NICE peripheral road round the south-west, from Tumkur Road to Hosur Road
# through its Magadi, Mysore, Kanakapura and Bannerghatta Road interchanges.
# Not in the reference file: hand-placed here from the interchanges' public place
# coordinates, to the same few hundred metres; the ends lie on the radial roads
# above as drawn.
PERIPHERAL_ROADS: dict[str, tuple[LatLon, ...]] = {
    "NICE Rd": (
        (13.0637, 77.4880),
        (13.0200, 77.4700),
        (12.9750, 77.4600),
        (12.9115, 77.4870),
        (12.8700, 77.5400),
        (12.8560, 77.5900),
        (12.8560, 77.6548),
    ),
}

# Lakes: name -> (centre, rough radius [km]).
LAKES: dict[str, tuple[LatLon, float]] = {
    "Ulsoor": ((12.9833, 77.6200), 0.5),
    "Bellandur": ((12.9350, 77.6650), 1.5),
    "Hebbal": ((13.0450, 77.5900), 0.6),
    "Madiwala": ((12.9100, 77.6150), 0.6),
    "Sankey": ((13.0090, 77.5740), 0.3),
    "Varthur": ((12.9400, 77.7400), 0.9),
}

# Parks: name -> (centre, rough diameter [km]).
PARKS: dict[str, tuple[LatLon, float]] = {
    "Cubbon Park": ((12.9763, 77.5929), 1.0),
    "Lalbagh": ((12.9507, 77.5848), 0.9),
}


def all_points() -> list[LatLon]:
    """Every point of the base map (for fitting the view)."""
    pts = list(OUTER_RING_ROAD)
    for road in (*RADIAL_ROADS.values(), *PERIPHERAL_ROADS.values()):
        pts.extend(road)
    pts.extend(c for c, _ in LAKES.values())
    pts.extend(c for c, _ in PARKS.values())
    return pts
