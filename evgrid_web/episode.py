"""One browser tab's episode: the shared driver and renderer, offscreen.

No Gradio here (``page`` wires this to the browser). The episode runs on the city
view's own driver (``evgrid_render.controller.Controller``, decisions inline: the
tab's request thread is the worker) and is drawn by the city view's own renderer
into an offscreen Surface, so the page shows what ``python main.py`` shows. Every
action applied is logged, so the MP4 is filmed by replaying the log frame-exactly
(the Oracle is not asked again) through the desktop's filming loop.
"""

from __future__ import annotations

import base64
import io
import os
import shutil
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")
os.environ.setdefault("SDL_AUDIODRIVER", "dummy")

from evgrid_core import SCENARIOS, format_action, parse_action  # noqa: E402
from evgrid_core.actions import MAX_ACTION_CHARS  # noqa: E402
from evgrid_core.candidates import candidates  # noqa: E402
from evgrid_core.policies import BASELINES, make_policy, policy_names  # noqa: E402
from evgrid_render.controller import Controller  # noqa: E402

from .pace import CLICK_GRACE_S, Rate, RateMeter, StepQueue  # noqa: E402
from .why_box import WhyBox  # noqa: E402

FRAME_SIZE = (1280, 720)  # [px] the desktop view's default size
FRAMES_PER_TICK = 5  # MP4 frames per 5-minute tick
MP4_FPS = 15  # [frames/s] so a 48-tick episode is a 16 s film
SEED_MAX = 2**31 - 1  # seeds 0..SEED_MAX
SPEEDS = (0.5, 1.0, 2.0, 4.0, 8.0)  # [ticks per second] playing
MAX_FRAME_GAP_S = 0.5  # [s] a frame never moves the clock by more wall time than this
DECIDE_BUDGET_S = 0.05  # [s] a frame makes more decisions only while this lasts
HEURISTICS = tuple(cls.name for cls in BASELINES)  # the core's baseline ladder


def page_policies() -> list[str]:
    """The policies a tab may pick: the Oracle first (when its plugin loads),
    ``distilled``, then the heuristics, all from the core's registry."""
    known = set(policy_names())
    wanted = ("oracle", "distilled", *HEURISTICS)
    return [name for name in wanted if name in known]


class InputError(ValueError):
    """A tab's input the page refuses, with the reason to show."""


def check_start(scenario: object, policy: object, seed: object) -> tuple[str, str, int]:
    """The tab's choices, checked: names from the registries, an integer seed."""
    if not isinstance(scenario, str) or scenario not in SCENARIOS:
        raise InputError(f"unknown scenario {str(scenario)[:40]!r}")
    if not isinstance(policy, str) or policy not in page_policies():
        raise InputError(f"unknown policy {str(policy)[:40]!r}")
    if isinstance(seed, float) and seed.is_integer():
        seed = int(seed)
    if isinstance(seed, str) and seed.strip().isdigit():
        seed = int(seed.strip())
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= SEED_MAX:
        raise InputError(f"the seed must be a whole number 0..{SEED_MAX}")
    return scenario, policy, seed


# --- The action log and its replay -------------------------------------------------------
@dataclass(frozen=True)
class Logged:
    """One applied action, as the driver applied it."""

    action: Any  # the typed action, or the policy's text line
    source: str  # policy name or "manual"
    debug: dict | None  # the policy's last_debug (the Oracle's raw text, latency)


class LoggedController(Controller):
    """The city view's driver, logging every action it applies; with ``replay``
    it applies the log instead of asking a policy (filming the MP4)."""

    def __init__(self, *args: Any, replay: list[Logged] | None = None, **kw: Any):
        self.log: list[Logged] = []
        self._replay = replay
        super().__init__(*args, **kw)

    def reset(self, seed: int | None = None) -> None:
        self.log = []
        super().reset(seed)

    def apply(self, action, source: str, debug: dict | None = None):  # noqa: ANN001, ANN201
        if self._replay is not None:
            if len(self.log) >= len(self._replay):
                raise TypeError("the replayed episode has no more actions")
            logged = self._replay[len(self.log)]
            action, source, debug = logged.action, logged.source, logged.debug
        decision = super().apply(action, source, debug)
        self.log.append(Logged(action, source, debug))
        return decision


@dataclass(frozen=True)
class Film:
    """An MP4 of the episode so far, and what its replay did."""

    path: Path
    frames: int
    decisions: int  # actions the replay applied (the log's, in order)
    ret: float  # [reward] the replay's return: the live episode's


class _ReplayPolicy:
    """Stands in for the policy while filming: ``LoggedController`` applies the
    log's action whatever this returns."""

    name = "replay"

    def reset(self, seed: int | None = None) -> None:
        pass

    def act(self, obs):  # noqa: ANN001, ANN201
        return "DEFER E1 15"  # never applied: the log's action is


# --- One Oracle model for every tab -------------------------------------------------------
class SharedModel:
    """A loaded model every tab's Oracle uses, one decode at a time (llama.cpp's
    model is not safe to call from two threads at once)."""

    def __init__(self, llm: Any) -> None:
        self._llm = llm
        self._lock = threading.Lock()

    def create_completion(self, *args: Any, **kw: Any) -> Any:
        with self._lock:
            return self._llm.create_completion(*args, **kw)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._llm, name)


_ORACLE: dict[str, SharedModel] = {}  # "llm": the model, loaded by the first Oracle tab
_ORACLE_LOCK = threading.Lock()


def oracle_policy() -> Any:
    """A tab's Oracle: its own policy object (seed, counters, fallback) over the
    one model the page loads (about 210 MiB), shared by every Oracle tab."""
    with _ORACLE_LOCK:
        if "llm" not in _ORACLE:
            first = make_policy("oracle")
            first.llm = _ORACLE["llm"] = SharedModel(first.llm)
            return first
    # The shipped Oracle's prompt, over the model already open.
    return make_policy("oracle", llama=_ORACLE["llm"], prompt="decision")


# --- The episode -----------------------------------------------------------------------
class PageEpisode:
    """One tab's episode: start, play, step, manual actions, frames, MP4."""

    def __init__(self, scenario: str, policy: str, seed: int, grid: str = "feeder_sum"):
        scenario, policy, seed = check_start(scenario, policy, seed)
        self.lock = threading.RLock()  # one request of this tab at a time
        self.grid = grid
        if policy == "oracle":  # the page's one model, not a copy per tab
            self.ctrl = LoggedController(
                scenario, seed, "nearest", threaded=False, grid=grid
            )
            self.ctrl.policy, self.ctrl.policy_name = oracle_policy(), policy
            self.ctrl.reset(seed)
        else:
            self.ctrl = LoggedController(
                scenario, seed, policy, threaded=False, grid=grid
            )
        self.ctrl.paused = True
        self.playing = False
        self.speed = 2.0  # [ticks per second]
        self.verdict = ""  # the core's answer to the last manual line
        self.steps = StepQueue()  # Step clicks waiting for their decision
        self.meter = RateMeter()  # the rate really achieved while playing
        self.why = WhyBox()  # the decision the "why" box explains
        self.last_seen = time.monotonic()  # [s] the tab's last request
        self._last_frame_at: float | None = None
        self._view = None  # the renderer, made on the first frame
        self._surface = None
        self._frame_key: tuple | None = None
        self._frame_b64 = ""
        self._folder: Path | None = None  # this episode's files (its MP4)
        self.best = best_heuristic(scenario, seed, grid)

    # --- Identity --------------------------------------------------------------------
    @property
    def scenario(self) -> str:
        return self.ctrl.scenario

    @property
    def seed(self) -> int:
        return self.ctrl.seed

    @property
    def policy_name(self) -> str:
        return self.ctrl.policy_name

    @property
    def done(self) -> bool:
        return self.ctrl.done and self.ctrl.display_minute >= self.ctrl.end_minute

    def touch(self) -> None:
        self.last_seen = time.monotonic()

    # --- Playing ---------------------------------------------------------------------
    def play(self) -> None:
        self.steps.clear()
        self.meter.reset()
        self.ctrl.set_manual(False)
        self.ctrl.paused = False
        self.playing = True
        self._last_frame_at = None

    def pause(self) -> None:
        """Stop playing, and forget the Step clicks still queued."""
        self.steps.clear()
        self._halt()

    def _halt(self) -> None:
        self.ctrl.paused = True
        self.playing = False

    def queue_step(self, now: float | None = None) -> bool:
        """A Step click: queued for the next frames to decide, in order (False:
        refused, the reason in ``steps.note``). Takes no lock of the episode's, so
        a click is counted while a decision is being made."""
        now = time.monotonic() if now is None else now
        return self.steps.push(now, over=self.ctrl.done)

    def rate(self) -> Rate | None:
        """The ticks/s and decisions/s really achieved lately (None: not playing,
        or not measured long enough yet)."""
        return self.meter.rate() if self.playing else None

    def timer_on(self, now: float | None = None) -> bool:
        """Whether the tab should keep asking for frames: playing, Step clicks
        queued, or a click just made (its answer may cross a frame's)."""
        now = time.monotonic() if now is None else now
        return (
            self.playing
            or self.steps.pending > 0
            or now - self.steps.last_click < CLICK_GRACE_S
        )

    def set_speed(self, speed: object) -> None:
        try:
            value = float(speed)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            raise InputError(f"speed must be one of {SPEEDS}") from None
        if value not in SPEEDS:
            raise InputError(f"speed must be one of {SPEEDS}")
        self.speed = value

    def advance(self, now: float | None = None) -> None:
        """One frame: a queued Step click's decision, if one waits; else, while
        playing, the display clock moves by the wall time since the last frame (at
        ``speed`` ticks/s), then the decisions now due are made (inline, as long
        as ``DECIDE_BUDGET_S`` lasts), and the rate achieved is sampled."""
        if self.step_queued() or not self.playing:
            return
        now = time.monotonic() if now is None else now
        gap = 0.0 if self._last_frame_at is None else now - self._last_frame_at
        self._last_frame_at = now
        ctrl = self.ctrl
        ctrl.advance_display(min(gap, MAX_FRAME_GAP_S) * self.speed * ctrl.tick_minutes)
        start = time.perf_counter()
        while ctrl.caught_up and not ctrl.done and not ctrl.paused:
            if not ctrl.poll():
                break
            if time.perf_counter() - start > DECIDE_BUDGET_S:
                break
        if ctrl.paused and ctrl.message:  # the policy failed: the driver paused
            self.playing = False
        if self.done:
            self.playing = False
        self.meter.sample(now, ctrl.display_minute / ctrl.tick_minutes, ctrl.env.steps)

    def step_queued(self) -> bool:
        """The oldest queued Step click's decision, if one waits."""
        if not self.steps.take():
            return False
        self.step_once()
        if self.ctrl.done or self.ctrl.message:  # nothing more to step
            self.steps.clear()
        return True

    def step_once(self) -> None:
        """One decision now (paused afterwards), and the clock shown catches up."""
        ctrl = self.ctrl
        self._halt()
        if ctrl.done:
            ctrl.display_minute = ctrl.end_minute
            return
        ctrl.set_manual(False)
        ctrl.step_once()
        ctrl.poll(block=True)
        ctrl.display_minute = ctrl.end_minute if ctrl.done else ctrl.env_minute

    # --- Manual play -----------------------------------------------------------------
    def valid_lines(self) -> list[str]:
        """Every valid ROUTE and DEFER for the request now (LOAD_SHIFT is typed)."""
        if self.ctrl.done:
            return []
        return candidates(self.ctrl.obs).lines

    def submit(self, line: object) -> tuple[bool, str]:
        """Validate one typed line with the core; apply it only when valid."""
        ctrl = self.ctrl
        self._halt()  # Step clicks still queued are decided after this line
        if ctrl.done:
            self.verdict = "refused: the episode is over"
            return False, self.verdict
        if not isinstance(line, str) or not line.strip():
            self.verdict = "refused: type an action line, e.g. DEFER E1 15"
            return False, self.verdict
        text = plain_text(line.strip()[: MAX_ACTION_CHARS + 1])
        action = parse_action(text)
        ok, reason = ctrl.env.validate(action)
        if not ok:
            self.verdict = f"refused: {text[:80]}: {reason}"
            return False, self.verdict
        ctrl.display_minute = ctrl.env_minute
        ctrl.apply(action, "manual")
        ctrl.display_minute = ctrl.end_minute if ctrl.done else ctrl.env_minute
        self.verdict = f"sent {format_action(action)}"
        return True, self.verdict

    # --- Frames ----------------------------------------------------------------------
    def _renderer(self):  # noqa: ANN202
        if self._view is None:
            import pygame

            from evgrid_render.view import CityView

            pygame.font.init()
            self._surface = pygame.Surface(FRAME_SIZE)
            self._view = CityView(self.ctrl, FRAME_SIZE)
        return self._view, self._surface

    def frame_key(self) -> tuple:
        c = self.ctrl
        return (round(c.display_minute, 3), c.env.steps, c.paused, c.message)

    def frame_jpeg_b64(self, quality: int = 80) -> str:
        """The frame now, drawn by the city view's renderer, as base64 JPEG (the
        same frame as last time when nothing it shows has changed)."""
        key = self.frame_key()
        if key != self._frame_key:
            view, surf = self._renderer()
            view.flags.speed = self.speed
            view.render(surf)
            self._frame_b64 = base64.b64encode(surface_jpeg(surf, quality)).decode()
            self._frame_key = key
        return self._frame_b64

    # --- Film ------------------------------------------------------------------------
    def film_path(self) -> Path:
        """Where this episode's MP4 goes: a folder the server made for this episode
        alone (never a name a client sent), emptied of the last film first."""
        if self._folder is None:
            self._folder = Path(tempfile.mkdtemp(prefix="evgrid-web-tab-"))
        for old in self._folder.glob("*.mp4"):  # one film per episode on disk
            old.unlink()
        name = f"{self.scenario}_{self.policy_name}_seed{self.seed}"
        return self._folder / f"{name}_tick{self.ctrl.env.tick}.mp4"

    def film(self, path: Path) -> Film:
        """The episode so far as an MP4 (the log replayed, frame-exact)."""
        import pygame

        from evgrid_render.recorder import Recorder, film
        from evgrid_render.view import CityView

        c = self.ctrl
        ticks = c.env.scenario.n_ticks if c.done else max(1, c.env.tick)
        replay = LoggedController(
            c.scenario, c.seed, "nearest", threaded=False, grid=self.grid,
            replay=list(c.log),
        )  # fmt: skip
        replay.policy, replay.policy_name = _ReplayPolicy(), c.policy_name
        pygame.font.init()
        surf = pygame.Surface(FRAME_SIZE)
        view = CityView(replay, FRAME_SIZE)
        rec = Recorder(path, FRAME_SIZE, fps=MP4_FPS)
        try:
            film(
                replay, view, surf, rec, range(ticks * FRAMES_PER_TICK), FRAMES_PER_TICK
            )
        finally:
            rec.close()
            replay.close()
        return Film(path, rec.frames, replay.env.steps, replay.env.kpis.total_return)

    def close(self) -> None:
        self.playing = False
        self.ctrl.close()
        if self._folder is not None:
            shutil.rmtree(self._folder, ignore_errors=True)
            self._folder = None


def plain_text(text: str) -> str:
    """``text`` with what cannot be sent as UTF-8 (a lone surrogate) replaced."""
    return text.encode("utf-8", "replace").decode("utf-8")


def surface_jpeg(surface, quality: int = 80) -> bytes:  # noqa: ANN001
    """A pygame Surface as JPEG bytes."""
    import pygame
    from PIL import Image

    img = Image.frombytes(
        "RGB", surface.get_size(), pygame.image.tobytes(surface, "RGB")
    )
    out = io.BytesIO()
    img.save(out, "JPEG", quality=quality)
    return out.getvalue()


def best_heuristic(
    scenario: str, seed: int, grid: str = "feeder_sum"
) -> dict[str, Any]:
    """The heuristic with the best return on this scenario and seed (whole
    episodes, the core's own loop): its name and final KPIs."""
    from evgrid_core import SimConfig
    from evgrid_core.rollout import play_episode

    best: dict[str, Any] | None = None
    for name in HEURISTICS:
        env = play_episode(make_policy(name), scenario, seed, SimConfig(grid=grid))
        kpis = env.kpi_summary()
        if best is None or kpis["return"] > best["kpis"]["return"]:
            best = {"name": name, "kpis": kpis}
    assert best is not None
    return best
