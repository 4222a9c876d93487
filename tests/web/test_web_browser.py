"""The page in a real headless Chromium (Playwright, Debian's chromium): start an
episode, step it, play it, type lines the core refuses or takes, tabs kept apart
and bounded; with the Oracle, a whole episode and its MP4 downloaded and decoded.

``EVGRID_WEB_SCREENSHOTS=docs`` also saves the page's screenshots there.
"""

from __future__ import annotations

import os
import re
import time
import urllib.request
from pathlib import Path

import pytest

SCENARIO = "quiet_night"  # the shortest episode (about 32 decisions)
SHOTS = os.environ.get("EVGRID_WEB_SCREENSHOTS", "")


# --- Page helpers ------------------------------------------------------------------------
def open_page(browser, url: str):  # noqa: ANN001, ANN201
    page = browser.new_page(viewport={"width": 1400, "height": 1300})
    page.goto(url + "/")  # / sends the browser on to /web/
    assert page.url.rstrip("/").endswith("/web")
    page.wait_for_selector("#evgrid-start", timeout=60_000)
    return page


def choose(page, box: str, value: str) -> None:  # noqa: ANN001
    page.click(f"#{box} input")
    page.click(f'[role=option][aria-label="{value}"]')


def start(page, policy: str, seed: int, scenario: str = SCENARIO) -> None:  # noqa: ANN001
    choose(page, "evgrid-scenario", scenario)
    choose(page, "evgrid-policy", policy)
    page.fill("#evgrid-seed input", str(seed))
    page.click("#evgrid-start")
    expect_text(page, "#evgrid-message", f"started {policy} on {scenario}, seed {seed}")
    page.wait_for_selector("#evgrid-frame img")


def text(page, selector: str) -> str:  # noqa: ANN001
    return page.inner_text(selector).strip()


def expect_text(page, selector: str, wanted: str, timeout_s: float = 60) -> str:  # noqa: ANN001
    deadline = time.monotonic() + timeout_s
    while True:
        got = text(page, selector) if page.query_selector(selector) else ""
        if wanted in got:
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"{selector}: {wanted!r} not in {got!r}")
        time.sleep(0.2)


def until(check, timeout_s: float, what: str):  # noqa: ANN001, ANN201
    deadline = time.monotonic() + timeout_s
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.2)


def frame_src(page) -> str:  # noqa: ANN001
    return page.get_attribute("#evgrid-frame img", "src") or ""


def decisions(page) -> int:  # noqa: ANN001
    return int(text(page, "#evgrid-decisions").split()[0])


def screenshot(page, name: str) -> None:  # noqa: ANN001
    if SHOTS:
        page.screenshot(path=str(Path(SHOTS) / name), full_page=True)


# --- Tests -------------------------------------------------------------------------------
def test_root_redirects_and_the_openenv_routes_are_unchanged(web_url):
    with urllib.request.urlopen(web_url + "/health") as r:
        assert r.status == 200
    with urllib.request.urlopen(web_url + "/openapi.json") as r:
        paths = set(__import__("json").load(r)["paths"])
    assert {"/reset", "/step", "/health", "/schema", "/metadata"} <= paths
    assert not any(p.startswith("/web") for p in paths) and "/" not in paths


def test_start_step_play_and_manual_lines_in_a_browser(web_url, browser):
    page = open_page(browser, web_url)
    start(page, "nearest", 3)
    src0, clock0 = frame_src(page), text(page, "#evgrid-clock")
    assert src0.startswith("data:image/jpeg;base64,") and len(src0) > 20_000
    assert decisions(page) == 0
    # One decision.
    page.click("#evgrid-step")
    until(lambda: decisions(page) == 1, 60, "one decision")
    assert frame_src(page) != src0
    expect_text(page, "#evgrid-decisions-list", "nearest: ")
    # Play: the clock moves and the frames change.
    page.click("#evgrid-play")
    until(lambda: text(page, "#evgrid-clock") != clock0, 60, "the clock to move")
    src1 = frame_src(page)
    until(lambda: frame_src(page) != src1, 30, "a new frame")
    page.click("#evgrid-pause")
    expect_text(page, "#evgrid-mode", "paused")
    time.sleep(0.5)  # a frame already asked for may still land
    n = decisions(page)
    # A line the core refuses: the reason shows, nothing is applied.
    page.fill("#evgrid-line textarea", "ROUTE E999 S1 FAST")
    page.click("#evgrid-send")
    expect_text(page, "#evgrid-message", "E999 is not waiting for a decision now")
    page.fill("#evgrid-line textarea", "LOAD_SHIFT S99 50 30")
    page.click("#evgrid-send")
    expect_text(page, "#evgrid-message", "refused: LOAD_SHIFT S99 50 30")
    assert decisions(page) == n
    screenshot(page, "screenshot-web-refused.png")
    # A valid line picked from the list: applied as a manual decision.
    page.click("#evgrid-valid input")
    option = page.locator("[role=option]").first
    line = option.get_attribute("aria-label")
    option.click()
    until(lambda: page.input_value("#evgrid-line textarea") == line, 30, "the line")
    page.click("#evgrid-send")
    expect_text(page, "#evgrid-message", f"sent {line}")
    until(lambda: decisions(page) == n + 1, 30, "the manual decision")
    expect_text(page, "#evgrid-decisions-list", f"manual: {line}")
    page.close()


def test_tabs_are_isolated_and_bounded(web_url, browser, web_max_tabs):
    MAX_TABS = web_max_tabs  # noqa: N806
    tabs = [open_page(browser, web_url) for _ in range(MAX_TABS + 1)]
    for seed, page in enumerate(tabs[:MAX_TABS]):
        start(page, "nearest", seed)
    # One tab more than the slots: told so, and the others go on.
    extra = tabs[MAX_TABS]
    choose(extra, "evgrid-policy", "nearest")
    extra.click("#evgrid-start")
    expect_text(extra, "#evgrid-message", f"all {MAX_TABS} episode slots are in use")
    # Stepping one tab moves only its own episode.
    a, b = tabs[0], tabs[1]
    before_b = (decisions(b), frame_src(b))
    for k in range(1, 4):
        a.click("#evgrid-step")
        until(lambda k=k: decisions(a) == k, 60, "tab a's decision")
        a.fill("#evgrid-line textarea", "HELLO")
        a.click("#evgrid-send")
        expect_text(a, "#evgrid-message", "unknown action 'HELLO'")
    b.click("#evgrid-pause")  # b asks for its state again: unchanged
    expect_text(b, "#evgrid-mode", "paused")
    assert (decisions(b), frame_src(b)) == before_b
    # A closed tab gives its slot back (Gradio's unload), and the extra tab starts.
    tabs[2].close()
    until(
        lambda: (
            extra.click("#evgrid-start")
            or "started nearest" in text(extra, "#evgrid-message")
        ),
        60,
        "the freed slot",
    )
    for page in (a, b, extra):
        page.close()


def test_the_page_shows_markup_as_text_and_its_hint_once(web_url, browser):
    """Issue 34: ``<n>`` in a refusal and markup in a line are read back as text;
    the landing page says "press Start" once, with no raw Markdown."""
    page = open_page(browser, web_url)
    # The landing text comes with the page's first render (a loaded page may still
    # say "Loading..." for a moment on a busy machine).
    until(
        lambda: "press Start to begin" in page.inner_text("body"),
        60,
        "the landing text",
    )
    body = page.inner_text("body")
    assert body.count("press Start to begin") == 1 and "**" not in body
    start(page, "nearest", 1)
    page.fill("#evgrid-line textarea", "ROUTE </div> <n>")
    page.click("#evgrid-send")
    expect_text(page, "#evgrid-message", "refused: ROUTE </div> <n>: malformed ROUTE")
    page.fill("#evgrid-line textarea", "LOAD_SHIFT S3 10 15")
    page.click("#evgrid-send")
    expect_text(
        page, "#evgrid-message", "expected LOAD_SHIFT S<n> 25|50|75 15|30|45|60"
    )
    page.close()


@pytest.mark.slow
def test_a_whole_oracle_episode_and_its_mp4(web_url, browser, tmp_path):
    from evgrid_web.episode import FRAME_SIZE, FRAMES_PER_TICK, page_policies

    if "oracle" not in page_policies():
        pytest.skip("the Oracle needs llama-cpp-python (the oracle extra)")
    page = open_page(browser, web_url)
    start(page, "oracle", 0)
    page.click('#evgrid-speed input[value="8.0"]')
    page.click("#evgrid-play")
    expect_text(page, "#evgrid-decisions-list", "raw ", timeout_s=120)
    expect_text(page, "#evgrid-mode", "over", timeout_s=900)
    listing = text(page, "#evgrid-decisions-list")
    assert re.search(r"oracle: ROUTE|oracle: DEFER", listing)
    assert re.search(r"raw \S+ · \d+ ms", listing)  # the model's text and latency
    kpis = expect_text(page, "#evgrid-kpis", "oracle (final)")
    assert "best heuristic:" in kpis
    screenshot(page, "screenshot-web.png")
    # The MP4: filmed on the server, downloaded through the page, decoded.
    page.click("#evgrid-mp4")
    link = page.locator("#evgrid-mp4-file a").first
    link.wait_for(timeout=300_000)
    with page.expect_download() as dl:
        link.click()
    path = tmp_path / "episode.mp4"
    dl.value.save_as(path)
    import imageio_ffmpeg

    reader = imageio_ffmpeg.read_frames(str(path))
    meta = next(reader)
    assert tuple(meta["size"]) == FRAME_SIZE
    frames = sum(1 for raw in reader if len(raw) == FRAME_SIZE[0] * FRAME_SIZE[1] * 3)
    assert frames == 48 * FRAMES_PER_TICK
    expect_text(page, "#evgrid-mp4-note", f"MP4: {frames} frames")
    page.close()


# --- Issue 34 items 5 and 9: every Step click, the real rate, why -----------------------
def queue_text(page) -> str:  # noqa: ANN001
    return text(page, "#evgrid-queue") if page.query_selector("#evgrid-queue") else ""


def test_three_quick_step_clicks_make_three_decisions_and_why_in_a_browser(
    web_url, browser
):
    page = open_page(browser, web_url)
    start(page, "nearest", 4)
    for _ in range(3):  # as fast as Playwright clicks: none waits for an answer
        page.click("#evgrid-step")
    until(lambda: decisions(page) == 3, 60, "three decisions")
    time.sleep(1.0)  # a fourth would have landed by now
    assert decisions(page) == 3 and "queued" not in queue_text(page)
    # The why box: the latest decision, its options, the one chosen, greedy_eta.
    head = expect_text(page, "#evgrid-why-head", "#3 ")
    assert "nearest chose" in head
    rows = page.locator("#evgrid-why-options tbody tr")
    assert rows.count() >= 2
    chosen = page.locator("#evgrid-why-options tr.evgrid-why-chosen")
    assert chosen.count() == 1 and "◀ chosen" in chosen.inner_text()
    assert chosen.get_attribute("data-line") in head  # the action applied
    assert " MW" in rows.first.inner_text()
    expect_text(page, "#evgrid-why-greedy", "greedy_eta would have answered")
    # Another decision picked from the log: the box explains that one.
    page.click("#evgrid-why-pick input")
    page.click('[role=option][aria-label^="#1 "]')
    expect_text(page, "#evgrid-why-head", "#1 ")
    page.close()


def test_the_real_rate_shows_beside_the_speed_asked_in_a_browser(web_url, browser):
    page = open_page(browser, web_url)
    start(page, "nearest", 6)
    page.click('#evgrid-speed input[value="8.0"]')
    page.click("#evgrid-play")
    shown = expect_text(page, "#evgrid-rate", " decisions/s over the last ")
    assert shown.startswith("asked 8 ticks/s · real ")
    ticks = float(shown.split("real ")[1].split()[0])
    assert ("lagging" in shown) == (ticks < 0.9 * 8)
    page.click("#evgrid-pause")
    expect_text(page, "#evgrid-mode", "paused")
    until(lambda: not page.query_selector("#evgrid-rate"), 10, "the rate to go")
    page.close()


def test_oracle_step_clicks_queue_its_letters_and_its_lag_in_a_browser(
    web_url, browser
):
    """With the Oracle (a decision takes most of a second here): clicks made while
    one is decided wait in a queue the page shows, and each is decided; the why
    box lists the letters it was offered, its answer's marked; played at 8
    ticks/s it cannot keep up, and the page says so."""
    from evgrid_web.episode import page_policies

    if "oracle" not in page_policies():
        pytest.skip("the Oracle needs llama-cpp-python (the oracle extra)")
    page = open_page(browser, web_url)
    start(page, "oracle", 3, scenario="feeder_fault")
    for _ in range(3):
        page.click("#evgrid-step")
    until(lambda: "queued" in queue_text(page), 30, "the queue to show")
    until(lambda: decisions(page) == 3, 120, "three decisions")
    time.sleep(2.0)
    assert decisions(page) == 3 and "queued" not in queue_text(page)
    listing = text(page, "#evgrid-decisions-list")
    letter = re.search(r"raw (\S+) · \d+ ms", listing).group(1)  # the newest
    head = expect_text(page, "#evgrid-why-head", "#3 ")
    assert f"oracle chose {letter}: " in head
    chosen = page.locator("#evgrid-why-options tr.evgrid-why-chosen td").first
    assert chosen.inner_text().strip() == letter
    letters = page.locator("#evgrid-why-options tbody tr td:first-child")
    assert [t.strip() for t in letters.all_inner_texts()][:2] == ["A", "B"]
    page.click('#evgrid-speed input[value="8.0"]')
    page.click("#evgrid-play")
    shown = expect_text(page, "#evgrid-rate", "lagging", timeout_s=60)
    assert shown.startswith("asked 8 ticks/s · real ")
    page.click("#evgrid-pause")
    page.close()
