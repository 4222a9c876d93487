"""The Gradio page: pick a scenario, a policy and a seed; play, pause, step; type
actions; download the episode as MP4.

The episodes live here on the server, one per tab (``sessions``). Start hands the
tab a key (a hidden box) that every later request sends back: a handler finds the
tab's episode by that key and the Gradio session id together. The frame is the
city view's own (``evgrid_render``), sent as a JPEG inside the page's HTML, so no
frame is written to disk. A timer asks for frames while the tab plays.

Every input is judged by the handlers themselves (``preprocess=False``: Gradio's
own checks raise with a traceback in the log), and every text the page shows is
HTML-escaped: a bad input is a message in the page and at most one log line.
"""

from __future__ import annotations

import contextlib
from html import escape
from typing import Any

import gradio as gr

from evgrid_core import DEFAULT_SCENARIO, SCENARIOS

from .episode import (
    FRAME_SIZE,
    MP4_FPS,
    SEED_MAX,
    SPEEDS,
    InputError,
    PageEpisode,
    check_start,
    page_policies,
    plain_text,
)
from .sessions import PageFull, TabSessions
from .text import decisions_md, feeders_md, kpis_md, queue_html, status_html
from .why_box import NO_WHY

FRAME_INTERVAL_S = 0.1  # [s] the timer asking for the next frame while playing
TITLE = "EV Grid Oracle — Bengaluru"
INTRO = (
    "A deterministic Bengaluru EV-charging simulator: 25 stations on six BESCOM "
    "11 kV feeders. Pick a scenario, a policy and a seed, press **Start**, then "
    "**Play** or **Step** (one decision a click; clicks wait their turn). **Why** "
    "shows the options a decision had and what greedy_eta would have chosen. Type "
    "an action line to play by hand: the core validates it and says why when it "
    "refuses. Trainers use the OpenEnv server's WebSocket `/ws` on this same address."
)
CSS = "#evgrid-frame img {width: 100%; height: auto; display: block;}"
NO_EPISODE = "press Start to begin an episode in this tab"
NO_EPISODE_HTML = (
    f'<div id="evgrid-status">{NO_EPISODE.replace("Start", "<b>Start</b>")}</div>'
)


def message_html(text: str) -> str:
    """A message as the page shows it: escaped, so ``E<n>`` stays text."""
    return f'<div id="evgrid-message-text">{escape(plain_text(text))}</div>'


def _frame_html(ep: PageEpisode | None) -> str:
    if ep is None:
        return '<div id="evgrid-frame"></div>'
    w, h = FRAME_SIZE
    return (
        f'<div id="evgrid-frame"><img alt="the city view" width="{w}" height="{h}" '
        f'src="data:image/jpeg;base64,{ep.frame_jpeg_b64()}"></div>'
    )


def build_page(sessions: TabSessions | None = None) -> gr.Blocks:
    """The page's Blocks, its episodes kept in ``sessions`` (one per tab)."""
    sessions = sessions or TabSessions()
    policies = page_policies()

    def tab_of(request: gr.Request | None) -> str:
        return (getattr(request, "session_hash", None) or "") if request else ""

    def view(
        ep: PageEpisode | None, message: str = "", key: object = None
    ) -> tuple[Any, ...]:
        """Every output a handler refreshes, in ``outputs`` order (the key only
        from Start: ``key`` None leaves the tab's box as it is)."""
        key_out = gr.skip() if key is None else key
        if ep is None:
            return (
                _frame_html(None),
                NO_EPISODE_HTML,
                "",
                "",
                "",
                gr.update(choices=[], value=None),
                message_html(message),
                gr.Timer(active=False),
                key_out,
                queue_html(None),
                gr.update(choices=[], value=None),
                NO_WHY,
            )
        with ep.lock:
            ep.touch()
            lines = ep.valid_lines()
            return (
                _frame_html(ep),
                status_html(ep),
                feeders_md(ep),
                decisions_md(ep),
                kpis_md(ep),
                gr.update(choices=lines, value=None),
                message_html(message or ep.verdict),
                gr.Timer(active=ep.timer_on()),
                key_out,
                queue_html(ep),
                why_choices(ep),
                ep.why.html(ep.ctrl),
            )

    def why_choices(ep: PageEpisode) -> Any:
        """The why picker's decisions (sent only when they changed: a list the
        user has open is not rebuilt under them each frame)."""
        pairs, value = ep.why.choices(ep.ctrl)
        if (pairs, value) == ep.why.sent:
            return gr.skip()
        ep.why.sent = (pairs, value)
        return gr.update(choices=pairs, value=value)

    def start(key, scenario, policy, seed, request: gr.Request):  # noqa: ANN001, ANN202
        tab = tab_of(request)
        try:
            check_start(scenario, policy, seed)  # bad input keeps the tab's episode
            new, ep = sessions.start(
                tab, key, lambda: PageEpisode(scenario, policy, seed)
            )
        except (InputError, PageFull) as e:
            return view(sessions.get(tab, key), f"not started: {e}")
        done = f"started {ep.policy_name} on {ep.scenario}, seed {ep.seed}"
        return view(ep, done, key=new)

    def command(name: str):  # noqa: ANN202
        def handler(key, speed, request: gr.Request):  # noqa: ANN001, ANN202
            ep = sessions.get(tab_of(request), key)
            if ep is None:
                return view(None)
            try:
                with ep.lock:
                    ep.set_speed(speed)
                    if name == "play":
                        ep.play()
                    elif name == "pause":
                        ep.pause()
            except InputError as e:
                return view(ep, str(e))
            return view(ep, "")

        return handler

    def queue_only(ep: PageEpisode) -> tuple[Any, ...]:
        """Every output left as it is but the Step queue's (no lock needed), the
        timer kept asking for frames while clicks wait."""
        out: list[Any] = [gr.skip() for _ in outputs]
        out[outputs.index(queue_box)] = queue_html(ep)
        out[outputs.index(timer)] = gr.Timer(active=ep.timer_on())
        return tuple(out)

    def step(key, speed, request: gr.Request):  # noqa: ANN001, ANN202
        """A Step click, counted at once: decided now when the tab is idle, else
        queued (a decision holds the episode) for the next frames to decide in
        order, the queue's length shown; refused with the reason past its limit."""
        ep = sessions.get(tab_of(request), key)
        if ep is None:
            return view(None)
        if not ep.queue_step() or not ep.lock.acquire(blocking=False):
            return queue_only(ep)
        try:
            ep.step_queued()
        finally:
            ep.lock.release()
        return view(ep, "")

    def pick_why(key, value, request: gr.Request):  # noqa: ANN001, ANN202
        ep = sessions.get(tab_of(request), key)
        if ep is None:
            return NO_WHY
        with ep.lock:
            ep.why.choose(ep.ctrl, value)
            ep.why.sent = None  # the picker's value changed in the browser
            return ep.why.html(ep.ctrl)

    def tick(key, speed, request: gr.Request):  # noqa: ANN001, ANN202
        ep = sessions.get(tab_of(request), key)
        if ep is None:
            return view(None)
        if not ep.lock.acquire(blocking=False):  # a click of this tab is running
            return queue_only(ep)
        try:
            with contextlib.suppress(InputError):  # a bad speed: the last good one
                ep.set_speed(speed)
            ep.advance()
        finally:
            ep.lock.release()
        return view(ep)

    def submit(key, line, request: gr.Request):  # noqa: ANN001, ANN202
        ep = sessions.get(tab_of(request), key)
        if ep is None:
            return view(None)
        with ep.lock:
            ep.submit(line)
        return view(ep)

    def make_mp4(key, request: gr.Request):  # noqa: ANN001, ANN202
        ep = sessions.get(tab_of(request), key)
        if ep is None:
            return None, NO_EPISODE
        with ep.lock:
            ep.pause()
            film = ep.film(ep.film_path())
        seconds = film.frames / MP4_FPS
        return str(film.path), f"MP4: {film.frames} frames, {seconds:.1f} s"

    # Gradio keeps a copy of each MP4 it serves: copies an hour old are deleted.
    with gr.Blocks(title=TITLE, delete_cache=(3600, 3600)) as page:
        gr.Markdown(f"# {TITLE}\n{INTRO}")
        with gr.Row():
            scenario = gr.Dropdown(
                sorted(SCENARIOS), value=DEFAULT_SCENARIO, label="scenario",
                elem_id="evgrid-scenario",
            )  # fmt: skip
            policy = gr.Dropdown(
                policies, value=policies[0], label="policy", elem_id="evgrid-policy"
            )
            seed = gr.Number(
                value=0, precision=0, minimum=0, maximum=SEED_MAX, label="seed",
                elem_id="evgrid-seed",
            )  # fmt: skip
            start_btn = gr.Button("Start", variant="primary", elem_id="evgrid-start")
        with gr.Row():
            play_btn = gr.Button("Play", elem_id="evgrid-play")
            pause_btn = gr.Button("Pause", elem_id="evgrid-pause")
            step_btn = gr.Button("Step (one decision)", elem_id="evgrid-step")
            speed = gr.Radio(
                [str(s) for s in SPEEDS], value="2.0", label="ticks per second",
                elem_id="evgrid-speed",
            )  # fmt: skip
        queue_box = gr.HTML(queue_html(None), elem_id="evgrid-queue-box")
        key = gr.Textbox(visible=False, elem_id="evgrid-key")  # from Start
        message = gr.HTML(message_html(""), elem_id="evgrid-message")
        status = gr.HTML(NO_EPISODE_HTML, elem_id="evgrid-status-box")
        frame = gr.HTML(_frame_html(None), elem_id="evgrid-frame-box")
        with gr.Row():
            with gr.Column(scale=1):
                gr.Markdown("### Why this decision")
                why_pick = gr.Dropdown(
                    [], label="decision (the latest unless you pick one)",
                    elem_id="evgrid-why-pick",
                )  # fmt: skip
            with gr.Column(scale=3):
                why_box = gr.HTML(NO_WHY, elem_id="evgrid-why-box")
        with gr.Row():
            with gr.Column():
                gr.Markdown("### Manual play")
                line = gr.Textbox(
                    label="action line (ROUTE E<n> S<n> SLOW|FAST|ULTRA, DEFER E<n> "
                    "<minutes>, LOAD_SHIFT S<n> <cap %> <minutes>)",
                    max_length=200, elem_id="evgrid-line",
                )  # fmt: skip
                valid = gr.Dropdown(
                    [], label="or pick a valid action", elem_id="evgrid-valid"
                )
                send_btn = gr.Button("Send", elem_id="evgrid-send")
                gr.Markdown("### Feeders")
                feeders = gr.Markdown(elem_id="evgrid-feeders")
            with gr.Column():
                gr.Markdown("### Decisions and their reward breakdown")
                decisions = gr.Markdown(elem_id="evgrid-decisions-list")
            with gr.Column():
                gr.Markdown("### KPIs")
                kpis = gr.Markdown(elem_id="evgrid-kpis")
                mp4_btn = gr.Button("Make MP4 of the episode", elem_id="evgrid-mp4")
                mp4_file = gr.File(label="episode MP4", elem_id="evgrid-mp4-file")
                mp4_note = gr.Markdown(elem_id="evgrid-mp4-note")
        timer = gr.Timer(FRAME_INTERVAL_S, active=False)
        outputs = [frame, status, feeders, decisions, kpis, valid, message, timer, key]
        outputs += [queue_box, why_pick, why_box]
        # preprocess=False: the handlers judge the raw inputs (see the docstring).
        limit = {
            "concurrency_limit": sessions.max_tabs,
            "show_progress": "hidden",
            "preprocess": False,
        }
        start_btn.click(start, [key, scenario, policy, seed], outputs, **limit)
        play_btn.click(command("play"), [key, speed], outputs, **limit)
        pause_btn.click(command("pause"), [key, speed], outputs, **limit)
        # Every click counts ("once" would drop clicks while one is pending).
        step_btn.click(step, [key, speed], outputs, trigger_mode="multiple", **limit)
        why_pick.input(pick_why, [key, why_pick], [why_box], **limit)
        timer.tick(tick, [key, speed], outputs, **limit)
        send_btn.click(submit, [key, line], outputs, **limit)
        line.submit(submit, [key, line], outputs, **limit)
        valid.input(
            lambda v: v if isinstance(v, str) else "",
            [valid], [line], show_progress="hidden", preprocess=False,
        )  # fmt: skip
        mp4_btn.click(
            make_mp4, [key], [mp4_file, mp4_note], concurrency_limit=2,
            preprocess=False,
        )  # fmt: skip
        # Not what closes a tab's episodes (guard.PageGuard does, when the tab's
        # last heartbeat ends): an unload makes Gradio's browser side hold one.
        page.unload(lambda: None)
    page.evgrid_sessions = sessions  # type: ignore[attr-defined]  # tests, bench
    return page
