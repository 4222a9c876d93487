"""Rendered frames (offscreen): size, and known pixels that come from the core's state."""

import os

os.environ.setdefault("SDL_VIDEODRIVER", "dummy")

import pygame  # noqa: E402
import pytest  # noqa: E402

from evgrid_render import theme  # noqa: E402
from evgrid_render.controller import Controller  # noqa: E402
from evgrid_render.view import CityView  # noqa: E402


@pytest.fixture(scope="module")
def screen():
    pygame.display.init()
    pygame.font.init()
    yield pygame.display.set_mode((1280, 720))
    pygame.display.quit()


def _pixel(surf, rect, dx=6):
    return tuple(surf.get_at((rect.x + dx, rect.centery)))[:3]


def test_frame_has_the_requested_size_and_is_not_blank(screen):
    ctrl = Controller("evening_peak", 0, "greedy_eta", threaded=False)
    surf = pygame.Surface((1024, 600))
    view = CityView(ctrl, (1024, 600))
    view.render(surf)
    assert surf.get_size() == (1024, 600)
    colours = {
        tuple(surf.get_at((x, y)))
        for x in range(0, 1024, 37)
        for y in range(0, 600, 29)
    }
    assert len(colours) > 10
    ctrl.close()


@pytest.mark.parametrize(
    ("util", "expected"),
    [
        (0.50, theme.OK),  # well below the soft limit
        (0.90, theme.OK),  # at the soft limit: not above it yet
        (0.91, theme.WARN),  # above the core's soft limit (0.90)
        (1.00, theme.WARN),  # at 100 %: stressed, not over
        (1.01, theme.OVER),  # above the hard limit
    ],
)
def test_stress_colour_uses_the_core_soft_limit(util, expected):
    from evgrid_core import SimConfig

    assert theme.stress_colour(util, SimConfig().soft_limit) == expected


def test_overloaded_feeder_gauge_is_drawn_in_the_overload_colour(screen):
    ctrl = Controller("evening_peak", 0, "greedy_eta", threaded=False)
    view = CityView(ctrl, (1280, 720))
    feeders = ctrl.state["feeders"]
    # A snapshot as the core would report it: F1 over 100 %, F2 stressed, F3 calm.
    for fid, util in ((1, 1.07), (2, 0.95), (3, 0.60)):
        feeders[fid - 1]["utilisation"] = util
    view.render(screen)
    gauges = view.panel.gauge_rects
    assert _pixel(screen, gauges[1]) == theme.OVER
    assert _pixel(screen, gauges[2]) == theme.WARN
    assert _pixel(screen, gauges[3]) == theme.OK
    ctrl.close()


def test_a_feeder_shedding_ev_load_shows_the_cut_past_its_limit(screen):
    import dataclasses

    import numpy as np

    ctrl = Controller("evening_peak", 0, "greedy_eta", threaded=False)
    view = CityView(ctrl, (1280, 720))
    # As the core reports it: F3's protection shed 200 kW of EV charging last tick.
    shed = np.zeros(len(ctrl.state["feeders"]))
    shed[2] = 200.0
    ctrl.obs = dataclasses.replace(ctrl.obs, feeder_shed_kw=shed)
    view.render(screen)
    gauges = view.panel.gauge_rects

    def past_the_limit(rect):  # a pixel just right of the 100 % mark (of 120 %)
        return tuple(screen.get_at((rect.x + int(rect.w / 1.2) + 4, rect.y + 5)))[:3]

    assert past_the_limit(gauges[3]) == theme.OVER
    assert past_the_limit(gauges[1]) != theme.OVER
    ctrl.close()


def test_gauges_follow_the_core_state_through_an_episode(screen):
    ctrl = Controller("evening_peak", 0, "greedy_eta", threaded=False)
    seen = set()
    for _ in range(25):  # 25 ticks of evening peak: feeders climb past the soft limit
        ctrl.display_minute = ctrl.env_minute
        ctrl.poll(block=True)
        view = CityView(ctrl, (1280, 720))
        view.render(screen)
        for f in ctrl.state["feeders"]:
            colour = theme.stress_colour(f["utilisation"], ctrl.soft_limit)
            assert _pixel(screen, view.panel.gauge_rects[f["id"]]) == colour
            seen.add(colour)
    assert theme.WARN in seen  # the test exercised a stressed feeder
    ctrl.close()


def test_station_marker_sits_where_the_projection_puts_it(screen):
    ctrl = Controller("evening_peak", 0, "greedy_eta", threaded=False)
    view = CityView(ctrl, (1280, 720))
    view.render(screen)
    st = ctrl.env.city.stations[4]  # S5 Koramangala, inside the view
    x, y = view.map.proj.to_px(st.lat, st.lon)
    assert view.map.station_px[4] == (x, y)
    g = view.map.glyph
    ring = tuple(screen.get_at((int(x) + g.r - 2, int(y))))[:3]
    assert ring == theme.feeder_colour(st.feeder)
    plain = screen.copy()
    assert view.click((round(x), round(y))) == 5
    view.render(screen)  # now with S5's details box, where the map has room
    box = view.overlay_rects["details"]
    assert box.w >= 280 and box.h >= 100
    changed = sum(
        plain.get_at((i, j)) != screen.get_at((i, j))
        for i in range(box.left, box.right, 7)
        for j in range(box.top, box.bottom, 5)
    )
    assert changed > 300
    assert view.click((view.map_rect.x + 2, view.map_rect.bottom - 2)) is None
    ctrl.close()


def test_offmap_airport_is_pinned_inside_the_map(screen):
    ctrl = Controller("evening_peak", 0, "greedy_eta", threaded=False)
    view = CityView(ctrl, (1280, 720))
    assert 18 in view.map.offmap  # the airport, ~29 km north
    assert view.map_rect.collidepoint(view.map.station_px[17])
    assert "km" in view.map.offmap[18]
    ctrl.close()


def test_feeder_history_is_the_core_per_tick_record(screen):
    ctrl = Controller("evening_peak", 0, "greedy_eta", threaded=False)
    while not ctrl.done:
        ctrl.display_minute = ctrl.env_minute
        ctrl.poll(block=True)
    core = ctrl.env.kpis.feeder_util_history
    assert len(ctrl.feeder_history) == len(core) == ctrl.env.scenario.n_ticks
    assert [m for m, _ in ctrl.feeder_history[:3]] == [5.0, 10.0, 15.0]
    assert ctrl.feeder_history[-1] == (ctrl.end_minute, tuple(core[-1]))
    ctrl.display_minute = ctrl.end_minute
    CityView(ctrl, (1280, 720)).render(screen)
    ctrl.close()


def test_the_renderer_loads_every_sprite_from_viz_sprites():
    """The committed PNGs sit in viz/sprites/ (the design card's folder), and each is
    what the renderer draws; none falls back to drawing for want of its file."""
    from pathlib import Path

    from evgrid_render import sprites

    folder = Path(__file__).resolve().parents[2] / "viz" / "sprites"
    assert folder == sprites.SPRITE_DIR
    for name in sprites.DRAWERS:
        png = folder / f"{name}.png"
        assert png.is_file(), png
        loaded = pygame.image.load(str(png))
        assert loaded.get_size() == (sprites.BASE, sprites.BASE)
