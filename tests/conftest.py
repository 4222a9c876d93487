"""Shared test set-up: headless SDL everywhere, no audio; a private X display."""

import os

import pytest

os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
os.environ.setdefault("SDL_AUDIODRIVER", "dummy")
os.environ.setdefault("MPLBACKEND", "Agg")


@pytest.fixture
def display(tmp_path):
    """A private Xvfb display ':N' for real-window tests (mark them ``needs_x11``)."""
    from xvfb_helpers import xvfb_display

    yield from xvfb_display(tmp_path)
