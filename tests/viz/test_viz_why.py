"""Issue 34 item 5 (the desktop view): key W shows why the last decision was
made: the request's options with drive, wait and feeder headroom in MW, the
one chosen, and what greedy_eta would have answered in the same state."""

import os

os.environ.setdefault("SDL_VIDEODRIVER", "dummy")

import pygame  # noqa: E402
import pytest  # noqa: E402

from evgrid_core import format_action  # noqa: E402
from evgrid_core.candidates import candidates  # noqa: E402
from evgrid_core.policies import make_policy  # noqa: E402
from evgrid_render.controller import Controller  # noqa: E402
from evgrid_render.view import CityView  # noqa: E402
from evgrid_render.why import options  # noqa: E402
from viz.app import handle_key  # noqa: E402

SIZE = (1280, 720)


@pytest.fixture(scope="module")
def screen():
    pygame.display.init()
    pygame.font.init()
    yield pygame.display.set_mode(SIZE)
    pygame.display.quit()


def _run_to(ctrl, tick):
    while not ctrl.done and ctrl.env.tick < tick:
        ctrl.display_minute = ctrl.env_minute
        ctrl.poll(block=True)


def test_w_shows_the_options_the_choice_and_greedy_eta_s_answer(screen):
    ctrl = Controller("feeder_fault", 3, "distilled", threaded=False)
    _run_to(ctrl, 20)
    view = CityView(ctrl, SIZE)
    view.render(screen)
    assert "why" not in view.overlay_rects
    handle_key(pygame.K_w, ctrl, view)
    assert view.flags.why
    before = screen.copy()
    view.render(screen)
    assert "why" in view.overlay_rects
    box = view.overlay_rects["why"]
    assert any(
        before.get_at((x, y)) != screen.get_at((x, y))
        for x in range(box.left, box.right, 9)
        for y in range(box.top, box.bottom, 7)
    )
    d = ctrl.decisions[0]
    lines = dict(view.why_cache["lines"][::-1])  # text -> style
    # greedy_eta asked of the same observation, by the core's registry.
    greedy = make_policy("greedy_eta")
    greedy.reset(0)
    answer = greedy.act(d.obs)
    answer = answer if isinstance(answer, str) else format_action(answer)
    texts = [t for t, _ in view.why_cache["lines"]]
    assert texts[0].startswith(f"Why {d.clock} {d.action}")
    if answer == d.action:
        assert "greedy_eta would have answered the same" in texts
    else:
        assert f"greedy_eta would have answered {answer}" in texts
    chosen = [t for t, s in lines.items() if s == "chosen"]
    assert len(chosen) == 1 and "◀ chosen" in chosen[0]
    # The figures are the core's candidates' for that observation.
    c = candidates(d.obs)
    rows = options(d.obs, d.action, answer)
    assert [o.line for o in rows if o.chosen] == [d.action]
    for o in rows:
        i = c.lines.index(o.line)
        if o.drive_min is not None:
            assert o.drive_min == pytest.approx(c.column("travel_min")[i])
            assert o.wait_min == pytest.approx(c.column("wait_min")[i])
            assert o.headroom_mw == pytest.approx(
                c.column("feeder_headroom_kw")[i] / 1000.0
            )
    handle_key(pygame.K_w, ctrl, view)
    view.render(screen)
    assert "why" not in view.overlay_rects
    ctrl.close()


def test_the_box_says_when_no_valid_answer_was_left(screen):
    ctrl = Controller("feeder_fault", 3, "greedy_eta", threaded=False)
    _run_to(ctrl, 12)
    d = ctrl.forced[0]
    from evgrid_render.why import why_lines

    texts = [t for t, _ in why_lines(d)]
    assert any("no valid ROUTE or DEFER was left" in t for t in texts)
    ctrl.close()
