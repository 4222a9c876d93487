"""The Gradio page: pick a scenario, a policy and a seed; play, pause, step; type
actions; download the episode as MP4.

Every handler finds its tab's episode by the Gradio session hash (``sessions``);
the episodes live here on the server, one per tab. The frame is the city view's
own (``evgrid_render``), sent as a JPEG inside the page's HTML, so no frame is
written to disk. A timer asks for frames while the tab plays.
"""

from __future__ import annotations

import contextlib
import tempfile
from pathlib import Path
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
    page_policies,
)
from .sessions import PageFull, TabSessions
from .text import decisions_md, feeders_md, kpis_md, status_html

FRAME_INTERVAL_S = 0.1  # [s] the timer asking for the next frame while playing
TITLE = "EV Grid Oracle — Bengaluru"
INTRO = (
    "A deterministic Bengaluru EV-charging simulator: 25 stations on six BESCOM "
    "11 kV feeders. Pick a scenario, a policy and a seed, press **Start**, then "
    "**Play** or **Step** (one decision). Type an action line to play by hand: the "
    "core validates it and says why when it refuses. Trainers use the OpenEnv "
    "server's WebSocket `/ws` on this same address."
)
CSS = "#evgrid-frame img {width: 100%; height: auto; display: block;}"
NO_EPISODE = "press **Start** to begin an episode in this tab"


def _frame_html(ep: PageEpisode | None) -> str:
    if ep is None:
        return f'<div id="evgrid-frame"><p>{NO_EPISODE}</p></div>'
    w, h = FRAME_SIZE
    return (
        f'<div id="evgrid-frame"><img alt="the city view" width="{w}" height="{h}" '
        f'src="data:image/jpeg;base64,{ep.frame_jpeg_b64()}"></div>'
    )


def build_page(sessions: TabSessions | None = None) -> gr.Blocks:
    """The page's Blocks, its episodes kept in ``sessions`` (one per tab)."""
    sessions = sessions or TabSessions()
    policies = page_policies()
    mp4_dir = Path(tempfile.mkdtemp(prefix="evgrid-web-mp4-"))

    def tab_of(request: gr.Request | None) -> str:
        return (getattr(request, "session_hash", None) or "") if request else ""

    def view(ep: PageEpisode | None, message: str = "") -> tuple[Any, ...]:
        """Every output a handler refreshes, in ``outputs`` order."""
        if ep is None:
            return (
                _frame_html(None),
                f'<div id="evgrid-status">{NO_EPISODE}</div>',
                "",
                "",
                "",
                gr.update(choices=[], value=None),
                message,
                gr.Timer(active=False),
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
                message or ep.verdict,
                gr.Timer(active=ep.playing),
            )

    def start(scenario, policy, seed, request: gr.Request):  # noqa: ANN001, ANN202
        try:
            ep = sessions.start(
                tab_of(request), lambda: PageEpisode(scenario, policy, seed)
            )
        except (InputError, PageFull) as e:
            return view(sessions.get(tab_of(request)), f"not started: {e}")
        return view(ep, f"started {ep.policy_name} on {ep.scenario}, seed {ep.seed}")

    def command(name: str):  # noqa: ANN202
        def handler(speed, request: gr.Request):  # noqa: ANN001, ANN202
            ep = sessions.get(tab_of(request))
            if ep is None:
                return view(None, NO_EPISODE)
            try:
                with ep.lock:
                    ep.set_speed(speed)
                    if name == "play":
                        ep.play()
                    elif name == "pause":
                        ep.pause()
                    elif name == "step":
                        ep.step_once()
            except InputError as e:
                return view(ep, str(e))
            return view(ep, "")

        return handler

    def tick(speed, request: gr.Request):  # noqa: ANN001, ANN202
        ep = sessions.get(tab_of(request))
        if ep is None:
            return view(None)
        if not ep.lock.acquire(blocking=False):  # a click of this tab is running
            return tuple(gr.skip() for _ in outputs)
        try:
            with contextlib.suppress(InputError):  # a bad speed: the last good one
                ep.set_speed(speed)
            ep.advance()
        finally:
            ep.lock.release()
        return view(ep)

    def submit(line, request: gr.Request):  # noqa: ANN001, ANN202
        ep = sessions.get(tab_of(request))
        if ep is None:
            return view(None, NO_EPISODE)
        with ep.lock:
            ep.submit(line)
        return view(ep)

    def make_mp4(request: gr.Request):  # noqa: ANN202
        tab = tab_of(request)
        ep = sessions.get(tab)
        if ep is None:
            return None, NO_EPISODE
        with ep.lock:
            ep.pause()
            folder = mp4_dir / tab.replace("/", "_")[:64]
            folder.mkdir(exist_ok=True)
            for old in folder.glob("*.mp4"):  # one film per tab on disk
                old.unlink()
            name = f"{ep.scenario}_{ep.policy_name}_seed{ep.seed}_tick{ep.ctrl.env.tick}.mp4"
            film = ep.film(folder / name)
        seconds = film.frames / MP4_FPS
        return str(film.path), f"MP4: {film.frames} frames, {seconds:.1f} s"

    def leave(request: gr.Request) -> None:
        sessions.close(tab_of(request))

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
        message = gr.Markdown(elem_id="evgrid-message")
        status = gr.HTML(f'<div id="evgrid-status">{NO_EPISODE}</div>')
        frame = gr.HTML(_frame_html(None), elem_id="evgrid-frame-box")
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
        outputs = [frame, status, feeders, decisions, kpis, valid, message, timer]
        limit = {"concurrency_limit": sessions.max_tabs, "show_progress": "hidden"}
        start_btn.click(start, [scenario, policy, seed], outputs, **limit)
        play_btn.click(command("play"), [speed], outputs, **limit)
        pause_btn.click(command("pause"), [speed], outputs, **limit)
        step_btn.click(command("step"), [speed], outputs, **limit)
        timer.tick(tick, [speed], outputs, **limit)
        send_btn.click(submit, [line], outputs, **limit)
        line.submit(submit, [line], outputs, **limit)
        valid.input(lambda v: v or "", [valid], [line], show_progress="hidden")
        mp4_btn.click(make_mp4, None, [mp4_file, mp4_note], concurrency_limit=2)
        page.unload(leave)
    page.evgrid_sessions = sessions  # type: ignore[attr-defined]  # tests, bench
    return page
