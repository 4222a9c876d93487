"""The city view under the network grid models (issue 18): ``--grid``, each feeder's
lowest voltage beside its gauge (red below the 11 kV floor), a red halo round a
station whose distribution transformer is over its rating; the feeders' 11 kV lines
on the map in the colour of their voltage and each feeder's lowest point of supply
in kV (issue 34). Under the feeder sum the observation carries neither field, the
controller no network state, and the frame is the one drawn without them.
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
from evgrid_render.voltage import (  # noqa: E402
    VOLT_OK,
    VoltageMap,
    kv_label,
    voltage_colour,
)
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
    monkeypatch.setattr(VoltageMap, "draw", boom)
    monkeypatch.setattr("evgrid_render.feeder_rows.draw_voltage_block", boom)
    ctrl = Controller("dt_failure", 0, "greedy_eta", threaded=False)
    _run_to(ctrl, 17)
    assert ctrl.obs.feeder_min_voltage_pu is None
    assert ctrl.obs.station_transformer_loading is None
    assert ctrl.network is None
    view = CityView(ctrl, SIZE)
    _frame(ctrl, view)
    assert view.panel.volt_rects == {} and view.panel.feeders.kv == {}


def test_lindistflow_without_its_fields_is_the_feeder_sum_frame(screen):
    # At reset the two models' states are the same (no decision, no reward yet), so
    # with the network fields and state forced to None the frame is the feeder
    # sum's, pixel for pixel: they are the only thing the view reads differently.
    flat = Controller("dt_failure", 0, "greedy_eta", threaded=False)
    net = Controller("dt_failure", 0, "greedy_eta", threaded=False, grid="lindistflow")
    assert net.obs.feeder_min_voltage_pu is not None and net.network is not None
    with_fields = _frame(net)
    net.network = None
    net.obs = dataclasses.replace(
        net.obs, feeder_min_voltage_pu=None, station_transformer_loading=None
    )
    assert _same(_frame(net), _frame(flat))
    assert not _same(with_fields, _frame(flat))  # and with them, something shows


# --- Network models: what shows ------------------------------------------------------
@pytest.fixture(scope="module")
def evening(screen):
    # evening_peak seed 0 at 19:35 (tick 31): F4's tail (Yelahanka-Airport) is
    # below the 11 kV floor with its OLTC at tap 1; the other five are above it.
    ctrl = Controller(
        "evening_peak", 0, "greedy_eta", threaded=False, grid="lindistflow"
    )
    _run_to(ctrl, 31)
    return ctrl


def test_each_feeder_shows_its_lowest_voltage_red_below_the_floor(evening):
    ctrl = evening
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


# --- Voltages on the map and in kV (issue 34) ---------------------------------------
def _section_points(a, b):
    """Five points along a section's middle."""
    return [
        (round(a[0] + (b[0] - a[0]) * t), round(a[1] + (b[1] - a[1]) * t))
        for t in (0.3, 0.4, 0.5, 0.6, 0.7)
    ]


def test_the_map_colours_each_11kv_section_by_its_voltage_against_its_floor(evening):
    ctrl = evening
    view = CityView(ctrl, SIZE)
    surf = _frame(ctrl, view)
    state = ctrl.network
    vmap = view.map.voltage_map(state.network)
    net = state.network  # every feeder's sections between localities, on the map
    trunk = [br for br in net.branches if net.buses[br.to_bus].kind == "locality"]
    assert len(vmap.sections) == len(trunk) > 20
    want = vmap.colours(state)  # from the core's voltages and floors
    for bus, (v, floor) in enumerate(zip(state.vm_pu, net.v_floor_pu, strict=True)):
        assert want[bus] == voltage_colour(float(v), float(floor))
    shown, red = 0, []
    for a, b, bus in vmap.sections:
        pts = _section_points(a, b)
        hits = sum(tuple(surf.get_at(p))[:3] == want[bus] for p in pts)
        shown += hits > 0
        if want[bus] == theme.OVER:
            red.append((hits, state.network.buses[bus].name))
    # stations, EVs and other feeders' sections may cover a few
    assert shown >= 0.8 * len(vmap.sections)
    # the North feeder's Yelahanka-Airport tail, below its floor, is red
    assert [n for h, n in red if h >= 3] == ["F4 Kempegowda Intl Airport (Devanahalli)"]
    # and without the network state the same points are no longer drawn so
    ctrl.network, saved = None, ctrl.network
    try:
        plain = _frame(ctrl, view)
    finally:
        ctrl.network = saved
    for a, b, bus in vmap.sections:
        if want[bus] == theme.OVER:
            pts = _section_points(a, b)
            assert not any(tuple(plain.get_at(p))[:3] == theme.OVER for p in pts)
    assert VOLT_OK in want and theme.OVER in want


def test_each_feeders_lowest_point_of_supply_is_listed_in_kv(evening):
    ctrl = evening
    view = CityView(ctrl, SIZE)
    surf = _frame(ctrl, view)
    state, volts = ctrl.network, ctrl.obs.feeder_min_voltage_pu
    kv = view.panel.feeders.kv
    assert sorted(kv) == [1, 2, 3, 4, 5, 6]
    for f in range(6):
        bus = state.network.buses[int(state.min_supply_bus[f])]
        # the kV is the core's p.u. (the row's figure) times the bus's nominal kV
        assert state.min_supply_kv[f] == pytest.approx(volts[f] * bus.vn_kv, abs=1e-12)
        text, rect = kv[f + 1]
        assert text == f"F{f + 1} min {kv_label(volts[f] * bus.vn_kv)}"
        assert view.panel.rect.contains(rect)
        assert rect.top > view.panel.gauge_rects[6].bottom  # under the rows
    # F4's lowest is the Airport station's LV side (0.415 kV nominal); F6's an
    # 11 kV bus
    assert kv[4][0].endswith(" kV") and kv[4][0].split()[2].startswith("0.3")
    assert float(kv[6][0].split()[2]) > 10.0
    # the legend's three colours are drawn under the rows
    legend = pygame.Rect(view.panel.rect.x, view.panel.gauge_rects[6].bottom,
                         view.panel.rect.w, kv[1][1].top - view.panel.gauge_rects[6].bottom)  # fmt: skip
    for colour in (VOLT_OK, theme.WARN, theme.OVER):
        assert _has_colour(surf, legend, colour)
