"""The city view under the network grid models (issue 18): ``--grid``, each feeder's
lowest voltage beside its gauge (red below the 11 kV floor), a red halo round a
station whose distribution transformer is over its rating. Under the feeder sum the
observation carries neither field and the frame is the one drawn without them.
"""

import dataclasses
import math
import os

os.environ.setdefault("SDL_VIDEODRIVER", "dummy")

import numpy as np  # noqa: E402
import pygame  # noqa: E402
import pytest  # noqa: E402

from evgrid_core.observation import HT_FLOOR_PU  # noqa: E402
from evgrid_render import theme  # noqa: E402
from evgrid_render.controller import Controller  # noqa: E402
from evgrid_render.feeder_rows import FeederRows  # noqa: E402
from evgrid_render.scene import MapLayer  # noqa: E402
from evgrid_render.view import CityView  # noqa: E402
from viz.app import parse_args  # noqa: E402

SIZE = (1280, 720)


@pytest.fixture(scope="module")
def screen():
    pygame.display.init()
    pygame.font.init()
    yield pygame.display.set_mode(SIZE)
    pygame.display.quit()


def _run_to(ctrl, tick):
    while ctrl.env.tick < tick and not ctrl.done:
        ctrl.display_minute = ctrl.env_minute
        ctrl.poll(block=True)
    ctrl.display_minute = ctrl.env_minute


def _frame(ctrl, view=None) -> pygame.Surface:
    surf = pygame.Surface(SIZE)
    (view or CityView(ctrl, SIZE)).render(surf)
    return surf


def _same(a: pygame.Surface, b: pygame.Surface) -> bool:
    return pygame.image.tobytes(a, "RGB") == pygame.image.tobytes(b, "RGB")


def _has_colour(surf: pygame.Surface, rect: pygame.Rect, colour) -> bool:
    px = pygame.surfarray.pixels3d(surf.subsurface(rect))
    return bool(np.all(px == np.array(colour[:3]), axis=-1).any())


# --- The command line ----------------------------------------------------------------
def test_grid_option_defaults_to_the_feeder_sum_and_takes_a_network_model():
    assert parse_args([]).grid == "feeder_sum"
    assert parse_args(["--grid", "lindistflow"]).grid == "lindistflow"


def test_an_unknown_grid_model_is_a_one_line_error(capsys):
    with pytest.raises(SystemExit) as e:
        parse_args(["--grid", "dc_flow"])
    assert e.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert "--grid: unknown grid model 'dc_flow'" in err
    assert "lindistflow" in err  # the choices are named


# --- Feeder sum: nothing new ---------------------------------------------------------
def test_feeder_sum_draws_no_voltage_or_transformer(screen, monkeypatch):
    # The fields are None, so neither new drawing is reached.
    def boom(*_a, **_k):
        raise AssertionError("network drawing under the feeder sum")

    monkeypatch.setattr(FeederRows, "_volt", boom)
    ctrl = Controller("dt_failure", 0, "greedy_eta", threaded=False)
    _run_to(ctrl, 17)
    assert ctrl.obs.feeder_min_voltage_pu is None
    assert ctrl.obs.station_transformer_loading is None
    view = CityView(ctrl, SIZE)
    _frame(ctrl, view)
    assert view.panel.volt_rects == {}


def test_lindistflow_without_its_fields_is_the_feeder_sum_frame(screen):
    # At reset the two models' states are the same (no decision, no reward yet), so
    # with the network fields forced to None the frame is the feeder sum's, pixel
    # for pixel: the fields are the only thing the view reads differently.
    flat = Controller("dt_failure", 0, "greedy_eta", threaded=False)
    net = Controller("dt_failure", 0, "greedy_eta", threaded=False, grid="lindistflow")
    assert net.obs.feeder_min_voltage_pu is not None
    with_fields = _frame(net)
    net.obs = dataclasses.replace(
        net.obs, feeder_min_voltage_pu=None, station_transformer_loading=None
    )
    assert _same(_frame(net), _frame(flat))
    assert not _same(with_fields, _frame(flat))  # and with them, something shows


# --- Network models: what shows ------------------------------------------------------
def test_each_feeder_shows_its_lowest_voltage_red_below_the_floor(screen):
    # dt_failure at 10:00: F4's tail (Yelahanka-Airport) is below the 11 kV floor
    # from the background alone; the other five are above it.
    ctrl = Controller("dt_failure", 0, "greedy_eta", threaded=False, grid="lindistflow")
    volts = ctrl.obs.feeder_min_voltage_pu
    assert [v < HT_FLOOR_PU for v in volts] == [False, False, False, True, False, False]
    view = CityView(ctrl, SIZE)
    surf = _frame(ctrl, view)
    rects = view.panel.volt_rects
    assert sorted(rects) == [1, 2, 3, 4, 5, 6]
    for f, rect in rects.items():
        assert view.panel.rect.contains(rect)
        assert rect.left > view.panel.gauge_rects[f].right  # beside, not on, the bar
        assert _has_colour(surf, rect, theme.OVER) == (f == 4)


def test_an_overloaded_transformer_gets_a_red_halo(screen):
    # dt_failure at 11:25 (tick 17): Whitefield's 100 kVA stand-in DT is over its
    # rating (about 135 %); no other station's is.
    ctrl = Controller("dt_failure", 0, "greedy_eta", threaded=False, grid="lindistflow")
    _run_to(ctrl, 17)
    dt = ctrl.obs.station_transformer_loading
    over = [s for s in range(len(dt)) if dt[s] > 1.0]
    assert len(over) == 1
    s = over[0]
    assert "Whitefield" in ctrl.state["stations"][s]["name"]
    view = CityView(ctrl, SIZE)
    layer: MapLayer = view.map
    surf = _frame(ctrl, view)
    halo = _halo_points(layer, s)
    assert _red_points(surf, halo) >= 8  # of 12 (plugs, name, EVs may cover some)
    # The same frame with the loading under the rating has no halo.
    ctrl.obs = dataclasses.replace(
        ctrl.obs, station_transformer_loading=np.minimum(dt, 0.99)
    )
    assert _red_points(_frame(ctrl, view), halo) == 0


def _halo_points(layer: MapLayer, s: int) -> list[tuple[int, int]]:
    """12 points round station ``s`` on the halo's circle."""
    x, y = layer.station_px[s]
    r = layer.glyph.arc_r + 5
    return [
        (round(x + r * math.cos(a)), round(y - r * math.sin(a)))
        for a in np.radians(np.arange(0, 360, 30))
    ]


def _red_points(surf: pygame.Surface, points) -> int:
    return sum(tuple(surf.get_at(p))[:3] == theme.OVER[:3] for p in points)
