"""A tab's pace: its Step clicks waiting for their decision, and the rate its
episode really plays at.

Step clicks are queued, not dropped: a click is counted the moment it arrives
(no wait for a decision in progress, which takes about a second with the
Oracle), and the tab's frame requests make the queued decisions one at a time,
in order. Each click was the user asking for one more decision, so each is
honoured and the queue's length is shown; past ``MAX_QUEUED_STEPS`` a click is
refused with a visible reason, so one tab cannot pile up minutes of Oracle work.
Pause (or Play) empties the queue.

While playing, the clock shown and the decisions made are sampled each frame;
over the last ``RATE_WINDOW_S`` seconds they give the sim ticks/s and
decisions/s actually achieved, shown beside the speed asked for, and "lagging"
when the ticks/s fall below ``LAG_SHARE`` of it.
"""

from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass

MAX_QUEUED_STEPS = 10  # [clicks] waiting at once; more are refused, with the reason
RATE_WINDOW_S = 5.0  # [s] the real rate is measured over the last this much wall time
RATE_MIN_SPAN_S = 1.0  # [s] no rate is shown before this much has been measured
LAG_SHARE = 0.9  # below this share of the ticks/s asked for, the page says "lagging"
CLICK_GRACE_S = 1.0  # [s] the frame timer stays on this long after a Step click


class StepQueue:
    """Step clicks not yet decided, counted under a lock of their own (a click is
    answered at once, even while the tab's decision holds the episode)."""

    def __init__(self, limit: int = MAX_QUEUED_STEPS) -> None:
        self.limit = limit
        self._lock = threading.Lock()
        self._n = 0
        self.note = ""  # the last refusal, shown until the next accepted click
        self.last_click = float("-inf")  # [s, monotonic]

    @property
    def pending(self) -> int:
        return self._n

    def push(self, now: float, over: bool = False) -> bool:
        """One click: queued (True), or refused with ``note`` set (False)."""
        with self._lock:
            self.last_click = now
            if over:
                self.note = "Step refused: the episode is over"
                return False
            if self._n >= self.limit:
                self.note = (
                    f"Step refused: {self.limit} steps are already queued "
                    "(Pause empties the queue)"
                )
                return False
            self._n += 1
            self.note = ""
            return True

    def take(self) -> bool:
        """One queued click taken off to be decided (False: none was waiting)."""
        with self._lock:
            if self._n <= 0:
                return False
            self._n -= 1
            return True

    def clear(self) -> None:
        with self._lock:
            self._n = 0
            self.note = ""


@dataclass(frozen=True)
class Rate:
    """What the episode really achieved over the last window."""

    ticks_per_s: float  # [sim ticks / s] the clock shown
    decisions_per_s: float
    span_s: float  # [s] the wall time measured


class RateMeter:
    """The clock shown and the decisions made, sampled each frame while playing."""

    def __init__(self, window_s: float = RATE_WINDOW_S) -> None:
        self.window_s = window_s
        self._samples: deque[tuple[float, float, int]] = deque()

    def reset(self) -> None:
        self._samples.clear()

    def sample(self, now: float, ticks: float, decisions: int) -> None:
        """At wall time ``now`` [s] the clock shows ``ticks`` (fractional) after
        ``decisions`` decisions."""
        s = self._samples
        s.append((now, ticks, decisions))
        while len(s) > 2 and now - s[1][0] >= self.window_s:
            s.popleft()

    def rate(self) -> Rate | None:
        """The rates over the window (None until ``RATE_MIN_SPAN_S`` is measured)."""
        if len(self._samples) < 2:
            return None
        (t0, k0, d0), (t1, k1, d1) = self._samples[0], self._samples[-1]
        span = t1 - t0
        if span < RATE_MIN_SPAN_S:
            return None
        return Rate((k1 - k0) / span, (d1 - d0) / span, span)


def lagging(rate: Rate | None, asked: float) -> bool:
    """Whether the ticks/s achieved fall short of ``asked`` (by ``LAG_SHARE``)."""
    return rate is not None and rate.ticks_per_s < LAG_SHARE * asked
