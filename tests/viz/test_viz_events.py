"""Issue 34 items 1, 2, 7 and 14: the feeders in MW against their limits, every
scenario event on the map, the panel, the chart and the log exactly while it is
in force, why an action is invalid where it happens, the small defects."""

import dataclasses
import os

os.environ.setdefault("SDL_VIDEODRIVER", "dummy")

import numpy as np  # noqa: E402
import pygame  # noqa: E402
import pytest  # noqa: E402

from evgrid_core import SCENARIOS, LoadShift  # noqa: E402
from evgrid_render import theme  # noqa: E402
from evgrid_render.controller import Controller  # noqa: E402
from evgrid_render.events import scenario_events  # noqa: E402
from evgrid_render.view import CityView  # noqa: E402

SIZE = (1280, 720)


@pytest.fixture(scope="module")
def screen():
    pygame.display.init()
    pygame.font.init()
    yield pygame.display.set_mode(SIZE)
    pygame.display.quit()


def _run_to(ctrl, tick):
    """Decide everything before ``tick``; the display clock at its start."""
    while not ctrl.done and ctrl.env.tick < tick:
        ctrl.display_minute = ctrl.env_minute
        ctrl.poll(block=True)
    ctrl.display_minute = tick * ctrl.tick_minutes


def _event_pixels(surf, rect):
    """How many pixels of ``rect`` are in the event colour."""
    rect = rect.clip(surf.get_rect())
    px = pygame.surfarray.pixels3d(surf)[rect.left : rect.right, rect.top : rect.bottom]
    return int(np.all(px == theme.EVENT, axis=-1).sum())


# --- Events: read from the scenario ---------------------------------------------------------
def test_every_scenario_field_becomes_an_event():
    from evgrid_core.city import load_city

    city = load_city()
    kinds = {}
    for name, sc in SCENARIOS.items():
        events = scenario_events(sc, city)
        kinds[name] = sorted(e.kind for e in events)
        n = len(sc.feeder_events) + len(sc.closures) + len(sc.transformer_events)
        surge = sc.arrival_scale > 1.0 and bool(sc.origin_boost)
        assert len(events) == n + surge, name
    assert kinds["feeder_fault"] == ["closure", "fault"]
    assert kinds["demand_response"] == ["derating", "derating"]
    assert kinds["dt_failure"] == ["dt_swap", "surge"]
    assert kinds["festival_surge"] == ["surge"]
    assert kinds["evening_peak"] == []
    fault = next(
        e for e in scenario_events(SCENARIOS["feeder_fault"], city) if e.feeder
    )
    # F3 South-East: 5.00 MW rated, 60 % left by the fault.
    assert "limit 3.00 of 5.00 MW" in fault.label


# (scenario, kind, the map spot that must show it, start tick, end tick)
CASES = [
    ("feeder_fault", "fault"),
    ("feeder_fault", "closure"),
    ("demand_response", "derating"),
    ("dt_failure", "dt_swap"),
    ("festival_surge", "surge"),
]


def _spots(view, event):
    """Where on the map ``event`` is drawn (and nothing else in its colour is)."""
    layer = view.map
    g = layer.glyph
    if event.feeder is not None:  # a dashed ring round each of its stations
        r = g.arc_r + 10
        return [
            pygame.Rect(round(x) - r, round(y) - r, 2 * r, 2 * r)
            for s, (x, y) in enumerate(layer.station_px)
            if layer.city.stations[s].feeder == event.feeder - 1
        ]
    if event.kind == "closure":  # a cross through the marker
        x, y = layer.station_px[event.station - 1]
        return [pygame.Rect(round(x) - g.r, round(y) - g.r, 2 * g.r, 2 * g.r)]
    if event.kind == "dt_swap":  # a tag under the marker
        x, y = layer.station_px[event.station - 1]
        return [pygame.Rect(round(x) - 40, round(y) + g.arc_r + 8, 80, 18)]
    return [  # surge: rings round the busiest localities
        pygame.Rect(round(x) - 12, round(y) - 12, 24, 24)
        for x, y in (layer.node_px[p] for p in event.localities)
    ]


@pytest.mark.parametrize(("scenario", "kind"), CASES)
def test_each_event_is_on_the_map_and_panel_exactly_while_in_force(
    screen, scenario, kind
):
    ctrl = Controller(scenario, 0, "greedy_eta", threaded=False)
    event = next(e for e in ctrl.events if e.kind == kind)
    n = ctrl.env.scenario.n_ticks
    ticks = sorted(
        {t for t in (event.start_tick - 1, event.start_tick, event.end_tick - 1)}
        | ({event.end_tick} if event.end_tick < n else set())
    )
    ticks = [t for t in ticks if 0 <= t < n]
    seen = {}
    for t in ticks:
        _run_to(ctrl, t)
        view = CityView(ctrl, SIZE)
        view.render(screen)
        on = event.active(t)
        seen[t] = on
        # The map: the event's marks at its spot(s), in its colour only while on.
        spots = [s for s in _spots(view, event) if view.map_rect.contains(s)]
        assert spots
        boxes = [b for k, b in view.overlay_rects.items() if k != "events"]
        counts = [_event_pixels(screen, s) for s in spots if s.collidelist(boxes) == -1]
        if on:
            assert sum(c > 0 for c in counts) >= max(1, len(counts) // 2), (t, counts)
        else:
            # Nothing in the event colour at the spot (another event, such as the
            # fault round a closed station, may still be in force there).
            others = [e for e in ctrl.events if e is not event and e.active(t)]
            if not others:
                assert sum(counts) == 0, (t, counts)
        # The list of events in force on the map.
        assert ("events" in view.overlay_rects) == bool(
            [e for e in ctrl.events if e.active(t)]
        )
        # The panel: the feeder's row says it, the chart draws the reduced limit.
        if event.feeder is not None:
            assert (event.feeder in view.panel.feeders.event_rects) == on
            assert (
                _event_pixels(
                    screen,
                    view.panel.feeders.event_rects.get(
                        event.feeder, pygame.Rect(0, 0, 0, 0)
                    ),
                )
                > 0
                or not on
            )
            lines = view.panel.chart.limit_lines if view.panel.chart else {}
            assert (event.feeder in lines) == (t >= event.start_tick)
        # The log: a line as it starts and as it ends, at that tick.
        log = " | ".join(view.panel.log_lines)
        if t == event.start_tick:
            assert f"starts: {event.label}" in log
        if t == event.end_tick:
            assert "ends:" in log
    assert True in seen.values()
    ctrl.close()


# --- Feeders in MW -----------------------------------------------------------------------------
def test_the_panel_shows_each_feeder_in_mw_against_the_core_s_limit(screen):
    ctrl = Controller("feeder_fault", 3, "greedy_eta", threaded=False)
    _run_to(ctrl, 12)  # 18:00, the fault in force
    view = CityView(ctrl, SIZE)
    view.render(screen)
    core = ctrl.env.state()["feeders"]  # asked of the core now, not the snapshot
    for f in core:
        load = (f["background_kw"] + f["ev_kw"]) / 1000.0
        mw, pct, ev = view.panel.feeders.figures[f["id"]]
        assert mw == f"{load:.2f}/{f['capacity_kw'] / 1000.0:.2f}"
        assert ev == f"EV {f['ev_kw'] / 1000.0:.2f}"
        assert pct.endswith(" %") and pct.strip("<> %").isdigit()
        assert abs(int(pct.strip("<> %")) - f["utilisation"] * 100) <= 1
    # F3 faulted: 60 % of its 5.00 MW rating.
    assert view.panel.feeders.figures[3][0].endswith("/3.00")
    ctrl.close()


def test_shed_power_is_shown_in_mw_only_where_there_is_some(screen):
    ctrl = Controller("evening_peak", 0, "greedy_eta", threaded=False)
    shed = np.zeros(len(ctrl.state["feeders"]))
    shed[2] = 215.0  # [kW] as the core reports it: F3's protection cut EV load
    ctrl.obs = dataclasses.replace(ctrl.obs, feeder_shed_kw=shed)
    view = CityView(ctrl, SIZE)
    view.render(screen)
    assert list(view.panel.feeders.shed_text) == [3]
    assert "shed 0.21 MW" in view.panel.feeders.shed_text[3]
    ctrl.close()


# --- Why an action is invalid, where it happens ------------------------------------------------
def test_an_invalid_action_with_no_valid_choice_left_says_so(screen):
    ctrl = Controller("feeder_fault", 3, "greedy_eta", threaded=False)
    _run_to(ctrl, 12)
    assert ctrl.forced, "seed 3 strands an EV that no action could serve"
    d = ctrl.forced[0]
    assert not d.valid
    view = CityView(ctrl, SIZE)
    view.render(screen)
    assert view.panel.kpi_text["invalid_action_pct"].endswith(
        f"({len(ctrl.forced)} forced)"
    )
    log = " ".join(view.panel.log_lines)
    assert f"E{d.ev} {d.clock} had no valid action left" in log
    ctrl.close()
    # Replayed on a bare env: at that decision the EV had no ROUTE and no DEFER.
    from evgrid_core import EVGridEnv, SimConfig, parse_action

    env = EVGridEnv(SimConfig())
    env.reset(seed=3, scenario="feeder_fault")
    history = list(reversed(ctrl.recent))  # oldest first: every decision so far
    assert len(history) == ctrl.env.steps
    for x in history:
        obs = env.observation()
        if x is d:
            assert obs.request.id == d.ev
            assert not obs.route_mask.any() and not obs.defer_options
            break
        env.step(parse_action(x.action) if x.valid else x.action)


# --- The small defects (item 14) ------------------------------------------------------------------
def test_kpis_that_mean_nothing_yet_show_a_dash(screen):
    ctrl = Controller("evening_peak", 0, "greedy_eta", threaded=False)
    view = CityView(ctrl, SIZE)
    view.render(screen)
    assert view.panel.kpi_text["critical_on_time_pct"] == "–"
    assert view.panel.kpi_text["renewable_share_pct"] == "–"
    _run_to(ctrl, 30)
    view.render(screen)
    assert view.panel.kpi_text["renewable_share_pct"].endswith(" %")
    ctrl.close()


def test_a_load_shift_is_not_drawn_as_a_route(screen):
    ctrl = Controller("evening_peak", 0, "greedy_eta", threaded=False)
    d = ctrl.apply(LoadShift(5, 50, 30), "manual")
    assert d.valid and d.verb == "LOAD_SHIFT"
    assert d.station is None  # no route on the map
    view = CityView(ctrl, SIZE)
    view.render(screen)
    assert not any("→" in line for line in view.panel.log_lines)
    ctrl.close()


def test_after_switching_policy_the_kpis_name_who_decided(screen):
    ctrl = Controller("evening_peak", 0, "greedy_eta", threaded=False)
    _run_to(ctrl, 4)
    ctrl.cycle_policy()
    _run_to(ctrl, 6)
    assert len(ctrl.sources) == 2
    assert sum(ctrl.sources.values()) == ctrl.env.steps
    ctrl.close()


def test_the_ring_road_is_not_the_route_colour():
    for route in (theme.ROUTE, theme.ROUTE_OLD):
        assert (
            sum(abs(a - b) for a, b in zip(theme.ROAD_RING, route, strict=True)) > 120
        )
    # The ring road reads as a road: bluish grey like the others.
    r, g, b = theme.ROAD_RING
    assert b >= r and b >= g


def test_a_car_never_covers_a_station_number(screen):
    """EVs on the road are drawn under the stations: at a station's centre the
    number's pixels are those of a frame without any EV."""
    ctrl = Controller("festival_surge", 0, "greedy_eta", threaded=False)
    _run_to(ctrl, 10)
    view = CityView(ctrl, SIZE)
    view.render(screen)
    with_evs = screen.copy()
    ctrl.state = dict(ctrl.state, evs=[])
    view.render(screen)
    for x, y in view.map.station_px:
        for dx in range(-3, 4):
            for dy in range(-3, 4):
                p = (round(x) + dx, round(y) + dy)
                assert with_evs.get_at(p) == screen.get_at(p)
    ctrl.close()


def test_the_station_pop_up_gives_its_feeder_in_mw_and_the_events_there(screen):
    from evgrid_render.overlays import station_lines

    ctrl = Controller("feeder_fault", 3, "greedy_eta", threaded=False)
    _run_to(ctrl, 12)  # S10 Bellandur closed, its feeder F3 faulted
    f = ctrl.env.state()["feeders"][2]
    load = (f["background_kw"] + f["ev_kw"]) / 1000.0
    texts = [t for t, _, _ in station_lines(ctrl, 10)]
    assert any(f"{load:.2f}/{f['capacity_kw'] / 1000.0:.2f} MW" in t for t in texts)
    assert any(t.startswith("⚡ S10 Bellandur closed") for t in texts)
    assert any(t.startswith("⚡ F3 South-East fault") for t in texts)
    _run_to(ctrl, 31)  # both over
    texts = [t for t, _, _ in station_lines(ctrl, 10)]
    assert not any(t.startswith("⚡") for t in texts)
    ctrl.close()
