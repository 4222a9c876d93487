"""Issue 34 items 5 and 9 on the page, without a browser: every Step click makes
its decision (queued in order, the queue shown, refused past its limit with the
reason); while playing, the rate really achieved beside the speed asked for, and
"lagging" when it falls short; the "why" box lists the core's candidates (the
Oracle's letters, as it was offered them), the choice and greedy_eta's answer."""

from __future__ import annotations

import re
import time
from html import unescape

import pytest

pytest.importorskip("pygame")

from evgrid_core import EVGridEnv, format_action  # noqa: E402
from evgrid_core.candidates import candidates  # noqa: E402
from evgrid_core.policies import make_policy  # noqa: E402
from evgrid_web.episode import PageEpisode, page_policies  # noqa: E402
from evgrid_web.pace import MAX_QUEUED_STEPS  # noqa: E402
from evgrid_web.text import queue_html, status_html  # noqa: E402

SCENARIO = "quiet_night"


def greedy_eta(obs) -> str:  # noqa: ANN001
    policy = make_policy("greedy_eta")
    policy.reset(0)
    answer = policy.act(obs)
    return answer if isinstance(answer, str) else format_action(answer)


def why_rows(html: str) -> list[dict]:
    """The why box's table as the page sends it: one dict per option."""
    rows = []
    for cls, line, cells in re.findall(
        r'<tr class="evgrid-why-(\w+)" data-line="([^"]*)">(.*?)</tr>', html
    ):
        tds = [unescape(c) for c in re.findall(r"<td>(.*?)</td>", cells)]
        rows.append({"class": cls, "line": unescape(line), "cells": tds})
    return rows


def number(cell: str) -> float:
    return float(cell.split()[0])


def check_why(html: str, d) -> list[dict]:  # noqa: ANN001
    """The box explains decision ``d``: every row is one of the core's candidates
    with its figures, exactly one is chosen (d's action), greedy_eta's answer to
    the same observation is named."""
    c = candidates(d.obs)
    rows = why_rows(html)
    assert rows, html
    for row in rows:
        i = c.lines.index(row["line"])  # a valid option of that request
        letter, _, drive, wait, headroom, tags = row["cells"]
        if c.column("is_defer")[i] == 0.0:
            assert number(drive) == pytest.approx(c.column("travel_min")[i], abs=0.5)
            assert number(wait) == pytest.approx(c.column("wait_min")[i], abs=0.5)
            assert number(headroom) == pytest.approx(
                c.column("feeder_headroom_kw")[i] / 1000.0, abs=0.005
            )
            assert headroom.endswith(" MW")
        assert ("◀ chosen" in tags) == (row["line"] == d.action)
    assert [r["line"] for r in rows if r["class"] == "chosen"] == [d.action]
    greedy = greedy_eta(d.obs)
    assert [r["line"] for r in rows if "greedy_eta" in r["cells"][-1]] == [greedy]
    said = re.search(r'id="evgrid-why-greedy">(.*?)</div>', html).group(1)
    if greedy == d.action:
        assert "would have answered the same" in said
    else:
        assert f"<code>{greedy}</code>" in said
    return rows


# --- Item 9: Step clicks ------------------------------------------------------------------
def test_three_quick_step_clicks_make_three_decisions_in_order():
    ep = PageEpisode(SCENARIO, "nearest", 5)
    assert all(ep.queue_step() for _ in range(3))  # three clicks, none decided yet
    assert ep.ctrl.env.steps == 0
    assert "3 Step clicks queued" in queue_html(ep)
    env = EVGridEnv()
    obs = env.reset(seed=5, scenario=SCENARIO)
    policy = make_policy("nearest")
    policy.reset(5)
    for left in (2, 1, 0):
        ep.advance()  # a frame the tab asks for: the oldest click's decision
        res = env.step(policy.act(obs))
        obs = env.observation()
        assert ep.ctrl.env.steps == env.steps
        assert ep.ctrl.decisions[0].action == res.info["action"]
        assert ep.steps.pending == left
    assert "queued" not in queue_html(ep) and ep.timer_on(now=1e12) is False
    ep.advance()  # nothing queued, paused: no decision
    assert ep.ctrl.env.steps == 3 and not ep.playing


def test_clicks_past_the_queue_are_refused_visibly_and_pause_empties_it():
    ep = PageEpisode(SCENARIO, "nearest", 0)
    for _ in range(MAX_QUEUED_STEPS):
        assert ep.queue_step()
    assert not ep.queue_step()
    shown = queue_html(ep)
    assert f"{MAX_QUEUED_STEPS} Step clicks queued" in shown
    assert "Step refused" in shown and "already queued" in shown
    ep.pause()
    assert ep.steps.pending == 0 and queue_html(ep) == '<div id="evgrid-queue"></div>'
    ep.advance()
    assert ep.ctrl.env.steps == 0


def test_a_step_click_after_the_end_is_refused_with_the_reason():
    ep = PageEpisode(SCENARIO, "greedy_eta", 1)
    ep.play()
    now = 0.0
    while not ep.done:
        ep.advance(now)
        now += 0.5
    assert not ep.queue_step()
    assert "Step refused: the episode is over" in queue_html(ep)


# --- Item 9: the real rate ----------------------------------------------------------------
def rate_shown(ep: PageEpisode) -> tuple[float, float, bool]:
    html = status_html(ep)
    ticks = float(re.search(r'id="evgrid-real-ticks">([\d.]+)<', html).group(1))
    decided = float(re.search(r'id="evgrid-real-decisions">([\d.]+)<', html).group(1))
    return ticks, decided, 'id="evgrid-lagging"' in html


def test_the_real_rate_is_shown_beside_the_speed_asked_and_lag_is_marked():
    ep = PageEpisode(SCENARIO, "greedy_eta", 3)
    ep.set_speed("4.0")
    ep.play()
    ep.advance(100.0)
    assert "asked 4 ticks/s · real: measuring" in status_html(ep)
    # Frames every 0.25 s: the clock keeps up with 4 ticks/s.
    now, steps0 = 100.0, ep.ctrl.env.steps
    for _ in range(12):
        now += 0.25
        ep.advance(now)
    ticks, decided, lag = rate_shown(ep)
    assert ticks == pytest.approx(4.0, abs=0.01) and not lag
    assert decided == pytest.approx((ep.ctrl.env.steps - steps0) / 3.0, abs=0.01)
    # A server slower than the speed (a frame every 2 s, as an Oracle decision
    # each frame would make it): the clock moves at most 0.5 s' worth a frame.
    for _ in range(5):
        now += 2.0
        ep.advance(now)
    ticks, _, lag = rate_shown(ep)
    assert ticks < 0.9 * 4.0 and lag
    assert "asked 4 ticks/s · real" in status_html(ep)
    ep.pause()
    assert "evgrid-rate" not in status_html(ep)


# --- Item 5: why ----------------------------------------------------------------------------
def test_the_why_box_explains_each_listed_decision_from_the_cores_candidates():
    ep = PageEpisode("feeder_fault", "distilled", 3)
    for _ in range(6):
        ep.queue_step()
        ep.advance()
    differs = 0
    for number_, d in ep.why.listed(ep.ctrl):
        ep.why.choose(ep.ctrl, str(number_))
        html = ep.why.html(ep.ctrl)
        assert f"#{number_} {d.clock} distilled chose" in html
        check_why(html, d)
        differs += greedy_eta(d.obs) != d.action
    assert differs >= 1  # greedy_eta named where it differs (decision 5 here)
    pairs, value = ep.why.choices(ep.ctrl)
    assert [v for _, v in pairs] == ["6", "5", "4", "3", "2", "1"] and value == "1"
    ep.why.choose(ep.ctrl, "6")  # the newest: follow the latest again
    ep.queue_step()
    ep.advance()
    assert ep.why.choices(ep.ctrl)[1] == "7"
    assert "#7 " in ep.why.html(ep.ctrl)


def test_the_why_box_shows_markup_as_text():
    ep = PageEpisode(SCENARIO, "nearest", 0)
    ep.ctrl.apply("ROUTE </div> <n>", "<b>manual</b>")
    html = ep.why.html(ep.ctrl)
    assert "&lt;/div&gt; &lt;n&gt;" in html and "&lt;b&gt;manual&lt;/b&gt;" in html
    assert "<n>" not in html and "<b>manual" not in html


@pytest.mark.skipif("oracle" not in page_policies(), reason="needs the oracle extra")
def test_the_why_box_shows_the_oracles_letters_its_choice_and_greedy_eta():
    """The options the Oracle was offered, with its letters (its prompt's, from
    ``oracle.prompt``), each with the core's figures; its letter marks the row
    chosen."""
    from oracle.prompt import DECISION_STATIONS, decision_prompt

    ep = PageEpisode("feeder_fault", "oracle", 3)
    for _ in range(3):
        ep.queue_step()
    for _ in range(3):
        ep.advance()
    assert ep.ctrl.env.steps == 3
    style = ep.ctrl.policy.prompt_style
    for number_, d in ep.why.listed(ep.ctrl):
        ep.why.choose(ep.ctrl, str(number_))
        html = ep.why.html(ep.ctrl)
        rows = check_why(html, d)
        prompt = decision_prompt(d.obs, DECISION_STATIONS, style)
        offered = [(r["cells"][0], r["line"]) for r in rows if r["cells"][0]]
        assert offered == list(zip(prompt.letters, prompt.lines, strict=True))
        letter = d.debug["raw"].strip()
        assert [r["cells"][0] for r in rows if r["class"] == "chosen"] == [letter]
        assert f"chose <b>{letter}</b>: <code>{d.action}</code>" in html
        assert f"answered &#x27;{letter}&#x27; by grammar" in html


# --- The same through the page's handlers, over its HTTP API ------------------------------
@pytest.mark.skipif("oracle" not in page_policies(), reason="needs the oracle extra")
def test_step_clicks_sent_together_are_queued_shown_and_each_decided(web_url):
    """Three Step events sent at once (the Oracle deciding the first): the others
    are answered at once with the queue's length, and the frames the page's timer
    asks for decide them, in turn, until three decisions are made."""
    from page_api import Page, value
    from test_web_security import decisions, heartbeat

    page, session = Page.read(web_url), "pace-oracle-tab"
    with heartbeat(web_url, session):
        out = page.call("evgrid-start", ["", "feeder_fault", "oracle", 3], session)
        key = value(out["evgrid-key"])
        fn = page.fn("evgrid-step")
        ids = [page.join(fn, [key, "2.0"], session).body["event_id"] for _ in range(3)]
        replies = {}
        for msg in page.messages(session):
            if msg.get("event_id") in ids and msg["msg"] == "process_completed":
                replies[msg["event_id"]] = dict(
                    zip(page.outputs[fn], msg["output"]["data"], strict=True)
                )
                if len(replies) == 3:
                    break
        queued = [r for r in replies.values() if "queued" in str(r["evgrid-queue-box"])]
        assert queued, replies  # a click made while a decision ran: counted, shown
        deadline = time.monotonic() + 60
        while True:
            tick = page.call("timer", [key, "2.0"], session, event="tick")
            if decisions(tick) == 3 and "queued" not in str(tick["evgrid-queue-box"]):
                break
            assert time.monotonic() < deadline, tick["evgrid-queue-box"]
            time.sleep(0.1)
        time.sleep(0.5)
        again = page.call("timer", [key, "2.0"], session, event="tick")
        assert decisions(again) == 3  # no click decided twice
        assert "#3 " in str(value(again["evgrid-why-box"]))
    deadline = time.monotonic() + 30  # the closed tab's slot is free again
    while decisions(page.call("evgrid-step", [key, "2.0"], session)) != -1:
        assert time.monotonic() < deadline, "the closed tab's episode lives on"
        time.sleep(0.2)
