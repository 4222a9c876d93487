"""Side by side: two policies on the same scenario and seed, one video.

Each half is the city view exactly as a single-policy recording of that size
draws it (``CityView`` into its own surface, then copied); both clocks are set
to the same simulation minute before each frame, so the halves are in step.
Below them a strip: running counters per policy (EVs lost, feeder-minutes over
a limit, energy delivered), the episode's timeline with the scenario's events
marked, and each feeder's load in MW against its limit, both policies' traces.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import pygame

from . import theme
from .chart import hour_ticks
from .events import GridEvent
from .view import CityView

SIDE_COLOURS: tuple[theme.Colour, theme.Colour] = ((90, 200, 250), (255, 150, 70))


def strip_height(half: tuple[int, int]) -> int:
    """[px] the strip under the maps."""
    return max(170, half[1] // 3)


def counters(ctrl) -> tuple[int, float, float]:  # noqa: ANN001
    """(EVs lost, feeder-minutes over a limit, MWh delivered) so far, the core's
    KPIs: EVs turned away or out of patience (``stranded``, gave-ups included),
    feeder-minutes with EV load asked above a limit (``overload_feeder_min``),
    energy charged (``energy_kwh``)."""
    k = ctrl.state["kpis"]
    return int(k["stranded"]), float(k["overload_feeder_min"]), k["energy_kwh"] / 1000.0


def feeder_mw(ctrl, tick: int) -> tuple[tuple[float, ...], tuple[float, ...]]:  # noqa: ANN001
    """Tick ``tick``'s feeders: (load carried, limit) [MW], from the core's
    per-tick utilisation and the tick's usable capacity."""
    util = ctrl.feeder_history[tick][1]
    limit = ctrl.feeder_limit_kw[min(tick, len(ctrl.feeder_limit_kw) - 1)]
    return (
        tuple(u * c / 1000.0 for u, c in zip(util, limit, strict=True)),
        tuple(float(c) / 1000.0 for c in limit),
    )


class Versus:
    """Two controllers, two views of ``half`` size, one frame of ``size``."""

    def __init__(self, left, right, half: tuple[int, int]) -> None:  # noqa: ANN001
        self.ctrls = (left, right)
        self.half = half
        self.views = (CityView(left, half), CityView(right, half))
        self.surfaces = (pygame.Surface(half), pygame.Surface(half))
        self.size = (2 * half[0], half[1] + strip_height(half))
        self.strip = pygame.Rect(0, half[1], self.size[0], self.size[1] - half[1])
        self.text = theme.TextCache()
        self.feeder_rects: dict[int, pygame.Rect] = {}  # feeder id -> plot (tests)
        self.timeline: pygame.Rect | None = None
        self.counter_text: tuple[str, str] = ("", "")
        for ctrl, view in zip(self.ctrls, self.views, strict=True):
            ctrl.manual = False
            view.flags.recording = True

    def render(self, minute: float, surface: pygame.Surface) -> None:
        """Both episodes to ``minute`` (decisions due made first), then the frame."""
        for i, (ctrl, view, half) in enumerate(
            zip(self.ctrls, self.views, self.surfaces, strict=True)
        ):
            ctrl.display_minute = minute
            ctrl.poll(block=True)
            view.render(half)
            surface.blit(half, (i * self.half[0], 0))
        self._strip(surface)

    # --- The strip ----------------------------------------------------------------------
    def _strip(self, surf: pygame.Surface) -> None:
        r, t = self.strip, self.text
        pygame.draw.rect(surf, theme.BG, r)
        pygame.draw.line(surf, theme.PANEL_EDGE, r.topleft, r.topright, 2)
        texts = []
        for i, ctrl in enumerate(self.ctrls):
            lost, over, mwh = counters(ctrl)
            s = (
                f"{ctrl.policy_name}:  EVs lost {lost}  ·  over a limit {over:.0f} "
                f"feeder-min  ·  delivered {mwh:.2f} MWh"
            )
            texts.append(s)
            x = r.x + i * self.half[0] + 12
            pygame.draw.rect(
                surf, SIDE_COLOURS[i], (x, r.y + 10, 12, 12), border_radius=2
            )
            surf.blit(t.get(s, 13, theme.TEXT, True), (x + 18, r.y + 7))
        self.counter_text = (texts[0], texts[1])
        left = self.ctrls[0]
        line = pygame.Rect(r.x + 60, r.y + 32, r.w - 80, 26)
        self.timeline = line
        self._timeline(surf, line, left)
        top = line.bottom + 22
        n = len(left.feeder_rated_kw)
        gap = 10
        w = (r.w - 20 - gap * (n - 1)) // n
        for f in range(n):
            plot = pygame.Rect(
                r.x + 10 + f * (w + gap), top + 14, w, r.bottom - top - 20
            )
            self.feeder_rects[f + 1] = plot
            self._feeder(surf, plot, f)

    def x_of(self, plot: pygame.Rect, minute: float) -> float:
        return plot.x + (plot.w - 1) * minute / max(self.ctrls[0].end_minute, 1.0)

    def _timeline(self, surf: pygame.Surface, line: pygame.Rect, ctrl) -> None:  # noqa: ANN001
        t, tm = self.text, ctrl.tick_minutes
        surf.blit(t.get("events", 11, theme.TEXT_DIM), (line.x - 52, line.y + 1))
        pygame.draw.rect(surf, (40, 46, 60), line, border_radius=3)
        start = ctrl.env.scenario.start_minute
        for minute, label in hour_ticks(start, ctrl.end_minute):
            x = self.x_of(line, minute)
            pygame.draw.line(surf, theme.PANEL_EDGE, (x, line.y), (x, line.bottom), 1)
            img = t.get(label, 9, theme.TEXT_DIM)
            surf.blit(img, (x - img.get_width() / 2, line.bottom + 1))
        events: tuple[GridEvent, ...] = ctrl.events
        rows = max(1, min(2, len(events)))
        h = (line.h - 2) // rows
        for k, e in enumerate(events):
            x0, x1 = (
                self.x_of(line, e.start_tick * tm),
                self.x_of(line, e.end_tick * tm),
            )
            y = line.y + 1 + (k % rows) * h
            pygame.draw.rect(surf, theme.EVENT, (x0, y, max(2, x1 - x0), h - 1))
            label = t.get(event_tag(e, tm, start), 10, (20, 20, 24), True)
            if label.get_width() < x1 - x0 - 4:
                surf.blit(label, (x0 + 3, y))
        cursor = self.x_of(line, ctrl.display_minute)
        pygame.draw.line(
            surf, theme.TEXT, (cursor, line.y - 4), (cursor, line.bottom + 3), 2
        )

    def _feeder(self, surf: pygame.Surface, plot: pygame.Rect, f: int) -> None:
        t, left = self.text, self.ctrls[0]
        rated = left.feeder_rated_kw[f] / 1000.0
        name = left.env.city.feeders[f].name.split(" (")[0]
        surf.blit(
            t.get(f"F{f + 1} {name} MW", 11, theme.feeder_colour(f), True),
            (plot.x, plot.y - 15),
        )
        pygame.draw.rect(surf, (22, 26, 36), plot)
        # The range: the rating and 15 % above it, down to just below the lowest
        # load or limit of the whole episode (both policies), so the traces fill it.
        top = rated * 1.15
        limit = left.feeder_limit_kw[:, f] / 1000.0
        lows = [float(limit.min())]
        for ctrl in self.ctrls:
            lows += [feeder_mw(ctrl, k)[0][f] for k in range(len(ctrl.feeder_history))]
        bottom = max(0.0, min(lows) - 0.1 * rated)

        def y_of(mw: float) -> float:
            v = min(max(mw, bottom), top)
            return plot.bottom - 1 - (v - bottom) / (top - bottom) * (plot.h - 1)

        label = t.get(f"{rated:.1f}", 9, theme.TEXT_DIM)
        surf.blit(label, (plot.right - label.get_width() - 2, y_of(rated) - 11))
        tm = left.tick_minutes
        now = left.display_minute
        # The limit, tick by tick up to now: the rating, or an event's reduction.
        n_now = min(len(limit), int(now // tm) + 1)
        for k in range(n_now):
            x0, x1 = (
                self.x_of(plot, k * tm),
                self.x_of(plot, min((k + 1) * tm, now + tm)),
            )
            col = theme.EVENT if limit[k] < rated - 1e-9 else theme.OVER
            pygame.draw.line(surf, col, (x0, y_of(limit[k])), (x1, y_of(limit[k])), 2)
        for i, ctrl in enumerate(self.ctrls):
            pts = []
            for k, (m, _) in enumerate(ctrl.feeder_history):
                if m > now + 1e-9:
                    break
                load, _ = feeder_mw(ctrl, k)
                pts.append((self.x_of(plot, m), y_of(load[f])))
            if len(pts) >= 2:
                pygame.draw.lines(surf, SIDE_COLOURS[i], False, pts, 2)
        x = self.x_of(plot, now)
        pygame.draw.line(surf, theme.TEXT_DIM, (x, plot.y), (x, plot.bottom), 1)


def event_tag(e: GridEvent, tick_minutes: int, start_minute: int) -> str:
    """An event's words on the timeline: what and when."""

    def clock(tick: int) -> str:
        m = int(start_minute + tick * tick_minutes) % 1440
        return f"{m // 60:02d}:{m % 60:02d}"

    what = {
        "fault": f"F{e.feeder} fault, limit {e.factor * 100:.0f} %",
        "derating": f"F{e.feeder} DR hold {e.factor * 100:.0f} %",
        "closure": f"S{e.station} closed",
        "dt_swap": f"S{e.station} {e.short}",
        "surge": e.short.lower(),
    }[e.kind]
    return f"{what}  {clock(e.start_tick)}-{clock(e.end_tick)}"


def film_versus(
    versus: Versus,
    surface: pygame.Surface,
    rec,  # noqa: ANN001 - recorder.Recorder
    frames: Iterable[int],
    frames_per_tick: int,
    after_frame: Callable[[], None] | None = None,
) -> None:
    """Film frame ``k`` at ``k / frames_per_tick`` ticks, both halves in step (as
    ``recorder.film`` films one)."""
    sub = versus.ctrls[0].tick_minutes / frames_per_tick
    for k in frames:
        versus.render(k * sub, surface)
        rec.add(surface)
        if after_frame is not None:
            after_frame()
