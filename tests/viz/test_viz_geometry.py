"""Projection (one uniform scale, cos-latitude corrected) and EV interpolation."""

import math

import pytest

from evgrid_core import load_city
from evgrid_render import basemap_data as bm
from evgrid_render.motion import RouteBook, ev_position, travel_fraction
from evgrid_render.projection import KM_PER_DEG_LAT, fit


def test_one_km_is_the_same_length_east_and_north():
    proj = fit([(12.85, 77.45), (13.10, 77.75)], (0, 0, 800, 600))
    lat, lon = 12.97, 77.59
    x0, y0 = proj.to_px(lat, lon)
    # 1 km north and 1 km east (east shrinks in degrees by cos(latitude) at lat0).
    xn, yn = proj.to_px(lat + 1 / KM_PER_DEG_LAT, lon)
    dlon = 1 / (KM_PER_DEG_LAT * math.cos(math.radians(proj.lat0)))
    xe, ye = proj.to_px(lat, lon + dlon)
    assert (xn, y0 - yn) == pytest.approx((x0, proj.px_per_km))
    assert (xe - x0, ye) == pytest.approx((proj.px_per_km, y0))


def test_fit_keeps_points_inside_and_round_trips():
    pts = [(12.85, 77.45), (13.10, 77.75), (12.97, 77.59)]
    proj = fit(pts, (10, 20, 800, 600), margin=24)
    for lat, lon in pts:
        x, y = proj.to_px(lat, lon)
        assert 10 + 24 - 1e-6 <= x <= 810 - 24 + 1e-6
        assert 20 + 24 - 1e-6 <= y <= 620 - 24 + 1e-6
        assert proj.to_latlon(x, y) == pytest.approx((lat, lon))
    # Height binds here (28 km tall vs 33 km wide in 800x600): 552 px / 27.83 km.
    assert proj.px_per_km == pytest.approx(552 / (0.25 * KM_PER_DEG_LAT))


def test_basemap_geometry_is_bengaluru():
    assert bm.OUTER_RING_ROAD[0] == bm.OUTER_RING_ROAD[-1]  # a closed loop
    for lat, lon in bm.all_points():
        assert 12.8 < lat < 13.25 and 77.4 < lon < 77.8


def test_travel_fraction_is_clamped_linear_time():
    assert travel_fraction(10, 10, 30) == 0.0
    assert travel_fraction(20, 10, 30) == 0.5
    assert travel_fraction(40, 10, 30) == 1.0
    assert travel_fraction(5, 10, 10) == 1.0  # zero-length trip


def test_ev_moves_along_the_core_road_path_by_km():
    city = load_city()
    book = RouteBook(city)
    origin, station = "Whitefield (ITPL/TTMC)", 1  # across town to Majestic
    nodes = city.path(origin, station)
    assert len(nodes) >= 3
    km = [city.graph.edges[a, b]["km"] for a, b in zip(nodes, nodes[1:], strict=False)]
    ev = {
        "node": origin,
        "station": station,
        "depart_minute": 0.0,
        "arrive_minute": 60.0,
    }
    assert ev_position(ev, 0.0, book) == pytest.approx(city.coords[nodes[0]])
    # When the EV has covered the first edge's share of the km, it is at node 2.
    at_second = 60.0 * km[0] / sum(km)
    assert ev_position(ev, at_second, book) == pytest.approx(city.coords[nodes[1]])
    assert ev_position(ev, 60.0, book) is None  # arrived: drawn at the station
    routed_not = {"node": origin, "station": None, "depart_minute": float("nan")}
    assert ev_position(routed_not, 10.0, book) is None
