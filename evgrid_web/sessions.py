"""The page's sessions: one episode per browser tab, bounded in number and time.

Like the server's WebSocket sessions (``evgrid_openenv.sessions``): at most
``max_tabs`` episodes live at once, and one idle for ``idle_s`` seconds is closed
to give its slot back. A full page says so and changes nothing.

An episode is found by a key the server issues when the tab starts it (random,
``secrets``), which the tab sends back with every request, together with the
Gradio session id (the tab's ``owner``) it was started from: the session id is
chosen by the browser and travels in URLs, so knowing it is not enough to drive,
restart or close another tab's episode. Everything a tab sends reaches only its
own episode. ``close_owner`` closes a tab's episodes when its page is gone.
"""

from __future__ import annotations

import os
import secrets
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
        self._episodes: dict[str, PageEpisode] = {}  # key -> episode
        self._owners: dict[str, str] = {}  # key -> the session id that started it
        self._seen: dict[str, float] = {}  # key -> its last request [s, clock]
        self._lock = threading.Lock()

    def __len__(self) -> int:
        with self._lock:
            return len(self._episodes)

    def reap(self) -> list[str]:
        """Close the episodes idle for ``idle_s``; the tabs they belonged to."""
        now = self.clock()
        with self._lock:
            idle = [
                k
                for k, seen in self._seen.items()
                if now - seen >= self.idle_s
                and not isinstance(self._episodes.get(k), _Building)
            ]
            gone = [self._pop(k) for k in idle]
        for ep in gone:
            ep.close()
        return idle

    def _pop(self, key: str):  # noqa: ANN202  # the lock held
        self._seen.pop(key, None)
        self._owners.pop(key, None)
        return self._episodes.pop(key, None)

    def _mine(self, key: object, owner: str) -> bool:  # the lock held
        return isinstance(key, str) and self._owners.get(key) == owner

    def start(
        self, owner: str, key: object, make: Callable[[], PageEpisode]
    ) -> tuple[str, PageEpisode]:
        """A new episode for the tab ``owner`` and a new key to reach it (the
        episode under ``key``, if it is this tab's, closed), if a slot is free."""
        if not owner:
            raise PageFull("this page has no session id; reload the page")
        self.reap()
        new = secrets.token_urlsafe(24)
        with self._lock:
            old = self._pop(key) if self._mine(key, owner) else None  # type: ignore[arg-type]
            if len(self._episodes) >= self.max_tabs:
                if old is not None:  # its slot stays free for the next start
                    old.close()
                raise PageFull(
                    f"all {self.max_tabs} episode slots are in use by other tabs; "
                    f"one is freed after {self.idle_s:g} s idle: try again later"
                )
            # Holds the slot while the episode is built (the best heuristic runs).
            self._episodes[new] = _Building()  # type: ignore[assignment]
            self._owners[new] = owner
            self._seen[new] = self.clock()
        if old is not None:
            old.close()
        try:
            ep = make()
        except BaseException:
            with self._lock:
                self._pop(new)
            raise
        with self._lock:
            if new in self._episodes:  # not closed while it was built
                self._episodes[new] = ep
                self._seen[new] = self.clock()
                return new, ep
        ep.close()
        raise PageFull("this tab was closed while its episode was being built")

    def get(self, owner: str, key: object) -> PageEpisode | None:
        """The episode under ``key`` if ``owner`` started it (its idle clock
        restarted), else None."""
        self.reap()
        with self._lock:
            if not self._mine(key, owner):
                return None
            ep = self._episodes[key]  # type: ignore[index]
            if isinstance(ep, _Building):
                return None
            self._seen[key] = self.clock()  # type: ignore[index]
            return ep

    def close(self, owner: str, key: object) -> bool:
        """Close the episode under ``key`` if ``owner`` started it."""
        with self._lock:
            ep = self._pop(key) if self._mine(key, owner) else None  # type: ignore[arg-type]
        if ep is not None:
            ep.close()
        return ep is not None

    def close_owner(self, owner: str) -> int:
        """Close every episode the tab ``owner`` started (its page is gone)."""
        with self._lock:
            keys = [k for k, o in self._owners.items() if o == owner]
            gone = [self._pop(k) for k in keys]
        for ep in gone:
            ep.close()
        return len(gone)

    def close_all(self) -> None:
        with self._lock:
            owners = set(self._owners.values())
        for owner in owners:
            self.close_owner(owner)


class _Building:
    """A slot taken by an episode still being built."""

    def close(self) -> None:
        """Nothing to close yet (a slot reaped while its episode is built)."""
