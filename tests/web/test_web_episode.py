"""The page's episodes and sessions without a browser: the same driver and renderer
as the desktop view, manual lines judged by the core, the MP4 replayed from the
log, tabs bounded and isolated."""

from __future__ import annotations

import base64
import io
import time

import numpy as np
import pytest

pygame = pytest.importorskip("pygame")
pytest.importorskip("PIL")

from evgrid_core import EVGridEnv, format_action  # noqa: E402
from evgrid_core.candidates import candidates  # noqa: E402
from evgrid_core.policies import make_policy  # noqa: E402
from evgrid_core.rollout import play_episode  # noqa: E402
from evgrid_render.view import CityView  # noqa: E402
from evgrid_web.episode import (  # noqa: E402
    FRAME_SIZE,
    FRAMES_PER_TICK,
    HEURISTICS,
    SEED_MAX,
    InputError,
    PageEpisode,
    check_start,
    page_policies,
)
from evgrid_web.sessions import PageFull, TabSessions  # noqa: E402

SCENARIO = "quiet_night"  # the shortest episode: 32 decisions with greedy_eta


# --- Inputs ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    "scenario, policy, seed, why",
    [
        ("nowhere", "nearest", 0, "unknown scenario"),  # not in the registry
        (["evening_peak"], "nearest", 0, "unknown scenario"),  # not a name at all
        (
            "quiet_night",
            "always_invalid",
            0,
            "unknown policy",
        ),  # adversarial: not offered
        ("quiet_night", "../../etc", 0, "unknown policy"),
        ("quiet_night", "nearest", -1, "seed"),  # below the range
        ("quiet_night", "nearest", SEED_MAX + 1, "seed"),  # above it
        ("quiet_night", "nearest", 1.5, "seed"),  # not whole
        ("quiet_night", "nearest", "7; rm", "seed"),  # text that is not a number
        ("quiet_night", "nearest", True, "seed"),  # a bool is no seed
        ("quiet_night", "nearest", None, "seed"),  # the number box left empty
    ],
)
def test_bad_start_inputs_are_refused_with_the_reason(scenario, policy, seed, why):
    with pytest.raises(InputError, match=why):
        check_start(scenario, policy, seed)


def test_good_start_inputs_come_back_typed():
    assert check_start("quiet_night", "nearest", 7.0) == ("quiet_night", "nearest", 7)
    assert check_start("heatwave", "distilled", " 12 ") == ("heatwave", "distilled", 12)
    assert check_start("heatwave", "nearest", SEED_MAX)[2] == SEED_MAX


def test_the_oracle_comes_first_then_distilled_then_the_heuristics():
    names = page_policies()
    assert names[names.index("distilled") + 1 :] == list(HEURISTICS)
    if "oracle" in names:  # the plugin loads where llama-cpp-python is installed
        assert names[0] == "oracle"


# --- Playing -----------------------------------------------------------------------------
def test_a_played_episode_is_the_cores_episode_of_that_policy():
    ep = PageEpisode(SCENARIO, "greedy_eta", 3)
    ep.play()
    now = 0.0
    for _ in range(10_000):
        if ep.done:
            break
        ep.advance(now)
        now += 0.25  # [s] four frames a second of wall time
    assert ep.done and not ep.playing
    ref = play_episode(make_policy("greedy_eta"), SCENARIO, 3)
    assert ep.ctrl.env.kpi_summary() == ref.kpi_summary()


def test_the_clock_moves_with_wall_time_at_the_chosen_speed():
    ep = PageEpisode(SCENARIO, "nearest", 0)
    ep.set_speed("4.0")
    ep.play()
    ep.advance(100.0)  # the first frame sets the reference
    start = ep.ctrl.display_minute
    ep.advance(100.1)  # 0.1 s at 4 ticks/s = 0.4 ticks = 2 minutes, if decided
    assert ep.ctrl.display_minute - start == pytest.approx(2.0)
    ep.advance(110.0)  # a long gap (a slow network) moves at most 0.5 s' worth
    assert ep.ctrl.display_minute - start <= 2.0 + 0.5 * 4 * 5 + 1e-9
    with pytest.raises(InputError):
        ep.set_speed("1000")


def test_step_makes_exactly_one_decision_the_policys_own():
    ep = PageEpisode(SCENARIO, "nearest", 5)
    env = EVGridEnv()
    obs = env.reset(seed=5, scenario=SCENARIO)
    policy = make_policy("nearest")
    policy.reset(5)
    for _ in range(3):
        ep.step_once()
        res = env.step(policy.act(obs))
        obs = env.observation()
        assert ep.ctrl.env.steps == env.steps
        assert ep.ctrl.decisions[0].action == res.info["action"]
        assert ep.ctrl.display_minute == ep.ctrl.env_minute  # the clock shown caught up
    assert ep.ctrl.paused and not ep.playing


# --- Manual play ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    "line, reason",
    [
        ("HELLO", "unknown action 'HELLO'"),  # not a verb
        ("ROUTE E1 S1", "malformed ROUTE"),  # a field missing
        ("ROUTE E999 S1 FAST", "E999 is not waiting for a decision now"),
        ("route e1 s1 fast", "unknown action"),  # the line must be canonical
        ("", "type an action line"),
        ("DEFER E1 15\nDEFER E1 15", "more than one line"),
        ("X" * 100_000, "unknown action"),  # cut, judged, refused: no crash
        ("DEFER E1 \ud800", "refused: DEFER E1 ?"),  # a lone surrogate: replaced
    ],
)
def test_a_refused_line_changes_nothing_and_says_why(line, reason):
    ep = PageEpisode(SCENARIO, "nearest", 0)
    before = (ep.ctrl.env.steps, ep.ctrl.env.kpi_summary())
    ok, verdict = ep.submit(line)
    assert not ok and verdict.startswith("refused") and reason in verdict
    assert (ep.ctrl.env.steps, ep.ctrl.env.kpi_summary()) == before
    assert len(ep.ctrl.log) == 0


def test_a_valid_line_is_applied_as_a_manual_decision():
    ep = PageEpisode(SCENARIO, "nearest", 0)
    lines = ep.valid_lines()
    assert lines == candidates(ep.ctrl.obs).lines and lines
    ok, verdict = ep.submit(lines[-1] + "\n")  # a trailing newline, as a model writes
    assert ok and verdict == f"sent {lines[-1]}"
    d = ep.ctrl.decisions[0]
    assert (d.source, d.action, d.valid) == ("manual", lines[-1], True)
    assert ep.ctrl.env.steps == 1


# --- Frames ----------------------------------------------------------------------------
def test_the_frame_is_the_desktop_renderers_frame():
    ep = PageEpisode(SCENARIO, "nearest", 0)
    for _ in range(4):
        ep.step_once()
    jpeg = base64.b64decode(ep.frame_jpeg_b64())
    from PIL import Image

    img = Image.open(io.BytesIO(jpeg))
    assert (img.format, img.size) == ("JPEG", FRAME_SIZE)
    # The page's surface is exactly what the city view draws for this driver.
    ref = pygame.Surface(FRAME_SIZE)
    view = CityView(ep.ctrl, FRAME_SIZE)
    view.flags.speed = ep.speed
    view.render(ref)
    page = pygame.surfarray.array3d(ep._surface)
    assert np.array_equal(page, pygame.surfarray.array3d(ref))
    # ... and the JPEG is that picture (lossy: a small mean difference).
    diff = np.abs(np.asarray(img, dtype=float) - page.transpose(1, 0, 2))
    assert diff.mean() < 4.0
    # Nothing changed: the same frame is sent again without drawing it.
    assert ep.frame_jpeg_b64() is ep.frame_jpeg_b64()


# --- MP4 -------------------------------------------------------------------------------
def decoded(path) -> tuple[int, tuple[int, int]]:  # noqa: ANN001
    """(frames, (width, height)) of an MP4, every frame decoded by ffmpeg."""
    import imageio_ffmpeg

    reader = imageio_ffmpeg.read_frames(str(path))
    meta = next(reader)
    w, h = meta["size"]
    frames = 0
    for raw in reader:
        assert len(raw) == w * h * 3  # a whole RGB frame
        frames += 1
    return frames, (w, h)


def test_the_mp4_replays_the_episode_so_far_frame_exactly(tmp_path):
    ep = PageEpisode(SCENARIO, "nearest", 2)
    ep.step_once()
    ok, _ = ep.submit(ep.valid_lines()[-1])  # a manual decision in the log
    assert ok
    while ep.ctrl.env.tick < 6:
        ep.step_once()
    ticks = ep.ctrl.env.tick  # ticks without a request pass by themselves: >= 6
    live_steps, live_return = ep.ctrl.env.steps, ep.ctrl.env.kpis.total_return
    film = ep.film(tmp_path / "ep.mp4")
    assert film.frames == ticks * FRAMES_PER_TICK
    assert decoded(film.path) == (ticks * FRAMES_PER_TICK, FRAME_SIZE)
    # Filming replays the log: the same decisions, the manual one included.
    assert (film.decisions, film.ret) == (live_steps, live_return)
    again = ep.film(tmp_path / "again.mp4")
    assert film.path.read_bytes() == again.path.read_bytes()  # one episode, one file
    assert (ep.ctrl.env.steps, ep.ctrl.env.kpis.total_return) == (
        live_steps,
        live_return,
    )  # the live episode untouched


def test_each_episode_films_into_its_own_folder_which_goes_with_it():
    a, b = PageEpisode(SCENARIO, "nearest", 2), PageEpisode(SCENARIO, "nearest", 2)
    a.step_once()
    pa, pb = a.film_path(), b.film_path()
    assert pa.parent != pb.parent and pa.parent.is_dir() and pb.parent.is_dir()
    assert pa.parent.name.startswith("evgrid-web-tab-") and not any(pa.parent.iterdir())
    a.film(pa)
    assert [p.name for p in pa.parent.iterdir()] == [pa.name]
    again = a.film_path()  # the next film replaces the last one
    assert again.parent == pa.parent and not pa.exists()
    a.close()
    b.close()
    assert not pa.parent.exists() and not pb.parent.exists()


def test_filming_asks_no_policy(tmp_path, monkeypatch):
    ep = PageEpisode(SCENARIO, "nearest", 2)
    for _ in range(3):
        ep.step_once()
    calls = []
    monkeypatch.setattr(
        type(ep.ctrl.policy), "act", lambda self, obs: calls.append(1) or "DEFER E1 5"
    )
    ep.film(tmp_path / "ep.mp4")
    assert calls == []


# --- Sessions ------------------------------------------------------------------------------
class FakeClock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def _make(seed: int = 0):
    return lambda: PageEpisode(SCENARIO, "nearest", seed)


def test_tabs_are_bounded_and_a_full_page_says_so():
    tabs = TabSessions(max_tabs=2, idle_s=60, clock=FakeClock())
    ka, a = tabs.start("a", "", _make())
    kb, b = tabs.start("b", None, _make())
    with pytest.raises(PageFull, match="all 2 episode slots are in use"):
        tabs.start("c", "", _make())
    assert tabs.get("a", ka) is a and tabs.get("b", kb) is b
    ka2, again = tabs.start("a", ka, _make(1))  # a tab's new episode replaces its old
    assert ka2 != ka and tabs.get("a", ka) is None
    assert len(tabs) == 2 and tabs.get("a", ka2) is again and again.seed == 1
    assert tabs.close("b", kb) and len(tabs) == 1
    tabs.start("c", "", _make())  # the freed slot is taken
    with pytest.raises(PageFull):
        tabs.start("", "", _make())  # no session id: nothing to tie the episode to


def test_an_episode_answers_only_its_key_and_the_tab_that_started_it():
    tabs = TabSessions(max_tabs=3, idle_s=60, clock=FakeClock())
    key, ep = tabs.start("tab", "", _make())
    assert len(key) >= 32 and tabs.get("tab", key) is ep
    for owner, guess in (("tab", ""), ("tab", None), ("tab", key[:-1]), ("x", key)):
        assert tabs.get(owner, guess) is None
        assert not tabs.close(owner, guess)
    # Another client with the same session id starts its own episode, not this one.
    other, theirs = tabs.start("tab", "not-a-key", _make(1))
    assert other != key and tabs.get("tab", key) is ep and len(tabs) == 2
    assert tabs.close_owner("tab") == 2 and len(tabs) == 0  # the tab's page is gone
    assert tabs.get("tab", key) is None


def test_an_idle_tab_gives_its_slot_back():
    clock = FakeClock()
    tabs = TabSessions(max_tabs=1, idle_s=60, clock=clock)
    ka, _ = tabs.start("a", "", _make())
    clock.t = 59.0
    assert tabs.get("a", ka) is not None  # a request restarts the idle clock
    clock.t = 118.0
    with pytest.raises(PageFull):
        tabs.start("b", "", _make())
    clock.t = 119.0  # 60 s since a's last request
    kb, _ = tabs.start("b", "", _make())
    assert tabs.get("a", ka) is None and tabs.get("b", kb) is not None


def test_a_slot_idle_while_its_episode_is_built_is_not_reaped():
    """Another tab's request reaps while a slow episode is built (past the idle
    time): the reap passes over the slot being built and the build lands."""
    clock = FakeClock()
    tabs = TabSessions(max_tabs=2, idle_s=60, clock=clock)
    kb, _ = tabs.start("b", "", _make())

    def slow():
        clock.t += 61.0
        assert tabs.get("b", kb) is None  # b's request comes after 61 s: reaped
        return _make()()

    ka, ep = tabs.start("a", "", slow)
    assert tabs.get("a", ka) is ep


def test_a_tab_closed_while_its_episode_is_built_frees_its_slot():
    tabs = TabSessions(max_tabs=1, idle_s=60, clock=FakeClock())

    def closed_meanwhile():
        assert tabs.close_owner("a") == 1
        return _make()()

    with pytest.raises(PageFull, match="closed while its episode was being built"):
        tabs.start("a", "", closed_meanwhile)
    assert len(tabs) == 0


def test_a_failed_start_frees_its_slot():
    tabs = TabSessions(max_tabs=1, idle_s=60, clock=FakeClock())
    with pytest.raises(InputError):
        tabs.start("a", "", lambda: PageEpisode("nowhere", "nearest", 0))
    assert len(tabs) == 0
    tabs.start("b", "", _make())


def test_what_one_tab_sends_never_reaches_anothers_episode():
    tabs = TabSessions(max_tabs=4, idle_s=60, clock=FakeClock())
    _, good = tabs.start("good", "", _make(4))
    kbad, bad = tabs.start("bad", "", _make(4))
    for line in ("HELLO", "ROUTE E1 S99 FAST", "\x00" * 500, "DEFER E1 15"):
        bad.submit(line)
        good.step_once()
        with pytest.raises(InputError):
            bad.set_speed("-1")
    bad.play()
    bad.advance(1.0)
    bad.advance(5.0)
    tabs.close("bad", kbad)
    # The good tab's decisions are exactly a lone run's.
    env = EVGridEnv()
    obs = env.reset(seed=4, scenario=SCENARIO)
    policy = make_policy("nearest")
    policy.reset(4)
    expected = []
    for _ in range(4):
        expected.append(format_action(policy.act(obs)))
        env.step(expected[-1])
        obs = env.observation()
    assert [d.action for d in reversed(good.ctrl.decisions)] == expected
    assert good.ctrl.env.kpi_summary() == env.kpi_summary()


# --- The Oracle's model, one for every tab ---------------------------------------------------
def test_every_oracle_tab_uses_the_one_model_one_decode_at_a_time(monkeypatch):
    """The first Oracle tab loads the model; later tabs get their own policy over
    that model (the shipped prompt), and two tabs never decode at once."""
    import threading

    from evgrid_web import episode

    loads, calls, busy = [], [], threading.Lock()

    class FakeLlama:
        def create_completion(self, prompt):  # noqa: ANN001, ANN201
            assert busy.acquire(blocking=False), "two decodes at once"
            time.sleep(0.01)
            busy.release()
            calls.append(prompt)
            return prompt

    class FakeOracle:
        def __init__(self, llama=None, prompt=None):  # noqa: ANN001
            if llama is None:
                loads.append(1)
                llama = FakeLlama()
            self.llm, self.prompt = llama, prompt

    monkeypatch.setattr(episode, "_ORACLE", {})
    monkeypatch.setattr(episode, "make_policy", lambda name, **kw: FakeOracle(**kw))
    tabs = [episode.oracle_policy() for _ in range(3)]
    assert len(loads) == 1
    assert tabs[1].llm is tabs[0].llm is tabs[2].llm and tabs[1].prompt == "decision"
    threads = [
        threading.Thread(
            target=lambda p=p: [p.llm.create_completion(i) for i in range(5)]
        )
        for p in tabs
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 15
