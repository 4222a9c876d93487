"""Keys drive pause / step / manual routing, and the core's state changes accordingly.

Keys go through ``viz.app.handle_key``, the function the window's event loop calls.
"""

import os
import threading
import time

os.environ.setdefault("SDL_VIDEODRIVER", "dummy")

import pygame  # noqa: E402
import pytest  # noqa: E402

import evgrid_core.policies as policies  # noqa: E402
from evgrid_core import ChargerKind, Route  # noqa: E402
from evgrid_core.baselines import GreedyETA  # noqa: E402
from evgrid_render.controller import Controller  # noqa: E402
from evgrid_render.view import CityView  # noqa: E402
from viz.app import handle_key  # noqa: E402


@pytest.fixture
def app():
    pygame.display.init()
    pygame.font.init()
    screen = pygame.display.set_mode((1280, 720))
    ctrl = Controller("evening_peak", 0, "greedy_eta", threaded=False)
    view = CityView(ctrl, (1280, 720))
    yield ctrl, view, screen
    ctrl.close()
    pygame.display.quit()


def press(ctrl, view, *keys):
    return [handle_key(k, ctrl, view) for k in keys]


def test_pause_stops_decisions_and_n_makes_exactly_one(app):
    ctrl, view, _ = app
    press(ctrl, view, pygame.K_SPACE)
    assert ctrl.paused
    ctrl.advance_display(100.0)
    assert ctrl.poll() == 0 and ctrl.env.steps == 0  # paused: nothing decided
    press(ctrl, view, pygame.K_n)
    assert ctrl.poll() == 1 and ctrl.env.steps == 1
    assert ctrl.poll() == 0 and ctrl.env.steps == 1  # still paused after the step
    press(ctrl, view, pygame.K_SPACE)
    assert not ctrl.paused and ctrl.poll() == 1 and ctrl.env.steps == 2


def test_speed_help_quit_record_screenshot_keys(app):
    ctrl, view, _ = app
    speed = view.flags.speed
    press(ctrl, view, pygame.K_EQUALS)
    assert view.flags.speed == 2 * speed
    press(ctrl, view, pygame.K_MINUS, pygame.K_MINUS)
    assert view.flags.speed == speed / 2
    press(ctrl, view, pygame.K_h)
    assert view.flags.help
    assert press(ctrl, view, pygame.K_q, pygame.K_r, pygame.K_s) == [
        "quit",
        "record",
        "screenshot",
    ]


def test_p_cycles_to_the_next_registered_policy(app):
    ctrl, view, _ = app
    from evgrid_core.policies import policy_names

    names = policy_names()
    press(ctrl, view, pygame.K_p)
    assert ctrl.policy_name == names[(names.index("greedy_eta") + 1) % len(names)]


def test_manual_route_by_keyboard_goes_through_the_validator_to_the_core(app):
    ctrl, view, screen = app
    press(ctrl, view, pygame.K_m)
    assert ctrl.manual and ctrl.poll() == 0  # manual: the policy is not asked
    view.render(screen)  # preselects the request's EV and nearest valid station
    req = ctrl.obs.request
    action = ctrl.manual_action()
    assert isinstance(action, Route) and action.ev == req.id
    assert ctrl.env.validate(action) == (True, "")
    before = ctrl.env.steps
    press(ctrl, view, pygame.K_RETURN)
    assert ctrl.env.steps == before + 1
    d = ctrl.decisions[0]
    assert (d.source, d.valid, d.action) == (
        "manual",
        True,
        f"ROUTE E{req.id} S{action.station} {action.kind.name}",
    )
    # The EV is now travelling to that station in the core's state.
    ev = next(e for e in ctrl.state["evs"] if e["id"] == req.id)
    assert (ev["status"], ev["station"]) == ("traveling", action.station)


def test_manual_invalid_choice_shows_the_core_reason_and_is_not_sent(app):
    ctrl, view, screen = app
    press(ctrl, view, pygame.K_m)
    view.render(screen)
    # S2 (BESCOM HQ) has no ULTRA charger: move to S2, pick ULTRA.
    while ctrl.choice.station != 2:
        press(ctrl, view, pygame.K_DOWN)
    while ctrl.choice.kind != ChargerKind.ULTRA:
        press(ctrl, view, pygame.K_RIGHT)
    before = ctrl.env.steps
    press(ctrl, view, pygame.K_RETURN)
    assert ctrl.env.steps == before  # not sent
    assert "S2 has no ULTRA charger" in ctrl.message
    assert ctrl.message.startswith("not sent")


def test_manual_defer_and_load_shift_reach_the_core(app):
    ctrl, view, screen = app
    press(ctrl, view, pygame.K_m)
    view.render(screen)
    req = ctrl.obs.request
    press(ctrl, view, pygame.K_a)  # ROUTE -> DEFER
    assert ctrl.choice.verb == "DEFER"
    press(ctrl, view, pygame.K_RETURN)
    ev = next(e for e in ctrl.state["evs"] if e["id"] == req.id)
    assert ev["status"] == "deferred"
    assert ctrl.decisions[0].action == f"DEFER E{req.id} 15"
    press(ctrl, view, pygame.K_a)  # DEFER -> LOAD_SHIFT
    view.flags.selected = None
    ctrl.select_station(5)
    press(ctrl, view, pygame.K_RETURN)
    assert ctrl.decisions[0].action == "LOAD_SHIFT S5 50 30"
    assert ctrl.state["stations"][4]["load_shift_until_tick"] is not None


def test_tab_selects_another_pending_ev_and_the_core_decides_it(app):
    ctrl, view, screen = app
    press(ctrl, view, pygame.K_m)
    view.render(screen)
    pending = list(ctrl.state["pending"])
    assert len(pending) >= 2  # evening_peak seed 0: 3 requests at tick 0
    press(ctrl, view, pygame.K_a)  # ROUTE -> DEFER
    press(ctrl, view, pygame.K_TAB, pygame.K_RETURN)
    assert ctrl.env.steps == 1
    assert ctrl.decisions[0].action == f"DEFER E{pending[1]} 15"
    assert ctrl.state["pending"][0] == pending[0]  # the named request still waits
    assert pending[1] not in ctrl.state["pending"]


class _Gate:
    """A policy that waits for a gate, as a slow LLM would; it reports last_debug."""

    name = "gate_test"
    gate = threading.Event()

    def reset(self, seed):
        pass

    def act(self, obs):
        self.gate.wait(10)
        self.last_debug = {"raw": "DEFER", "source": "fallback", "latency_ms": 12.0}
        return f"DEFER E{obs.request.id} 5"


def test_policy_runs_in_a_worker_thread_and_the_view_keeps_drawing(monkeypatch):
    # Registered for this test only (the registry is restored afterwards).
    monkeypatch.setitem(policies._REGISTRY, "gate_test", _Gate)
    pygame.display.init()
    pygame.font.init()
    screen = pygame.display.set_mode((1280, 720))
    ctrl = Controller("evening_peak", 0, "gate_test", threaded=True)
    view = CityView(ctrl, (1280, 720))
    try:
        assert ctrl.poll() == 0 and ctrl.deciding
        for _ in range(3):  # frames keep rendering while the decision is pending
            view.render(screen)
            assert ctrl.poll() == 0
        assert ctrl.env.steps == 0
        _Gate.gate.set()
        deadline = time.time() + 10
        while ctrl.poll() == 0 and time.time() < deadline:
            time.sleep(0.01)
        assert ctrl.env.steps == 1
        assert ctrl.decisions[0].debug == {
            "raw": "DEFER",
            "source": "fallback",
            "latency_ms": 12.0,
        }
        view.render(screen)
    finally:
        ctrl.close()
        pygame.display.quit()


def test_a_decision_names_the_evs_that_gave_up_as_the_clock_ran(app):
    """The viewer shows who gave up from what the core's step says, no rule of its own."""
    ctrl, view, screen = app
    ctrl.close()
    ctrl = Controller("festival_surge", 0, "greedy_eta", threaded=False)
    policy = policies.make_policy("greedy_eta")
    named = []
    while not ctrl.env.done:
        d = ctrl.apply(policy.act(ctrl.env.observation()), "greedy_eta")
        named += d.gave_up
        if d.gave_up:
            cost = ctrl.env.config.weights.stranded
            assert d.parts["stranded"] <= -len(d.gave_up) * cost
            CityView(ctrl, (1280, 720)).render(screen)  # the line draws
    assert named and len(named) == ctrl.env.kpi_summary()["gave_up"]
    assert all(ctrl.env.world.status_name(i - 1) == "gave_up" for i in named)
    ctrl.close()


class _AnswersNone(GreedyETA):
    name = "answers_none"

    def act(self, obs):  # noqa: ANN001, ANN201
        return None


def test_a_policy_answering_a_non_action_pauses_the_view_and_changes_nothing(
    monkeypatch,
):
    monkeypatch.setitem(policies._REGISTRY, "answers_none", _AnswersNone)
    pygame.display.init()
    ctrl = Controller("evening_peak", 0, "answers_none", threaded=False)
    try:
        before = ctrl.env.state()
        assert ctrl.poll(block=True) == 0
        assert ctrl.paused and "got NoneType" in ctrl.message
        assert ctrl.env.state() == before and ctrl.env.steps == 0
    finally:
        ctrl.close()
        pygame.display.quit()
