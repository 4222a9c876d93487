"""The page's sessions: one episode per browser tab, bounded in number and time.

Like the server's WebSocket sessions (``evgrid_openenv.sessions``): at most
``max_tabs`` episodes live at once, each keyed by the tab's Gradio session hash
(a random id the tab's page holds: another tab cannot name it by accident), and one
idle for ``idle_s`` seconds is closed to give its slot back. A full page says so
and changes nothing. Everything a tab sends reaches only its own episode.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable

from .episode import PageEpisode

DEFAULT_MAX_TABS = 8  # [episodes] live at once (a Space's 2 vCPUs)
DEFAULT_IDLE_S = 600.0  # [s] without a request from the tab: its episode is closed


class PageFull(RuntimeError):
    """Every slot is taken by a live tab."""


class TabSessions:
    """Episodes by tab id, bounded in number (``max_tabs``) and idle time."""

    def __init__(
        self,
        max_tabs: int | None = None,
        idle_s: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if max_tabs is None:
            max_tabs = int(os.environ.get("EVGRID_WEB_MAX_TABS", DEFAULT_MAX_TABS))
        if idle_s is None:
            idle_s = float(os.environ.get("EVGRID_WEB_IDLE_S", DEFAULT_IDLE_S))
        if max_tabs < 1:
            raise ValueError(f"max_tabs must be >= 1, got {max_tabs}")
        if idle_s <= 0:
            raise ValueError(f"idle_s must be > 0, got {idle_s}")
        self.max_tabs, self.idle_s, self.clock = max_tabs, idle_s, clock
        self._episodes: dict[str, PageEpisode] = {}
        self._seen: dict[str, float] = {}  # tab -> its last request [s, clock]
        self._lock = threading.Lock()

    def __len__(self) -> int:
        with self._lock:
            return len(self._episodes)

    def reap(self) -> list[str]:
        """Close the episodes idle for ``idle_s``; the tabs they belonged to."""
        now = self.clock()
        with self._lock:
            idle = [t for t, seen in self._seen.items() if now - seen >= self.idle_s]
            gone = [self._episodes.pop(t) for t in idle]
            for t in idle:
                del self._seen[t]
        for ep in gone:
            ep.close()
        return idle

    def start(self, tab: str, make: Callable[[], PageEpisode]) -> PageEpisode:
        """The tab's new episode (its old one closed), if a slot is free."""
        if not tab:
            raise PageFull("this page has no session id; reload the page")
        self.reap()
        with self._lock:
            if tab not in self._episodes and len(self._episodes) >= self.max_tabs:
                raise PageFull(
                    f"all {self.max_tabs} episode slots are in use by other tabs; "
                    f"one is freed after {self.idle_s:g} s idle: try again later"
                )
            # Holds the slot while the episode is built (the best heuristic runs).
            old = self._episodes.pop(tab, None)
            self._seen[tab] = self.clock()
            self._episodes[tab] = _Building()  # type: ignore[assignment]
        if old is not None:
            old.close()
        try:
            ep = make()
        except BaseException:
            with self._lock:
                self._episodes.pop(tab, None)
                self._seen.pop(tab, None)
            raise
        with self._lock:
            self._episodes[tab] = ep
            self._seen[tab] = self.clock()
        return ep

    def get(self, tab: str) -> PageEpisode | None:
        """The tab's episode (its idle clock restarted), or None."""
        self.reap()
        with self._lock:
            ep = self._episodes.get(tab)
            if ep is None or isinstance(ep, _Building):
                return None
            self._seen[tab] = self.clock()
            return ep

    def close(self, tab: str) -> bool:
        """Close the tab's episode (the tab went away); whether it had one."""
        with self._lock:
            ep = self._episodes.pop(tab, None)
            self._seen.pop(tab, None)
        if ep is not None and not isinstance(ep, _Building):
            ep.close()
        return ep is not None

    def close_all(self) -> None:
        with self._lock:
            tabs = list(self._episodes)
        for t in tabs:
            self.close(t)


class _Building:
    """A slot taken by an episode still being built."""

    def close(self) -> None:
        """Nothing to close yet (a slot reaped while its episode is built)."""
