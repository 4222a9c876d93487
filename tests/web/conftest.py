"""The Space in a real headless Chromium: the server as users start it
(``uvicorn server:app``, the page mounted), driven by Playwright.

Playwright never downloads a browser here: it drives Debian's ``chromium``
(``scripts/setup.d/70-web.sh`` installs it in test mode). Tests that need it are
skipped with the reason when it or Playwright is missing.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "server"))
from server_helpers import running_server  # noqa: E402

CHROMIUM = os.environ.get("EVGRID_CHROMIUM", "/usr/bin/chromium")
MAX_TABS = 3  # the test server's episode slots: a cap the tests can fill


def chromium_path() -> str:
    path = shutil.which(CHROMIUM) or (CHROMIUM if Path(CHROMIUM).exists() else "")
    if not path:
        pytest.skip(f"needs Debian's chromium at {CHROMIUM}: apt-get install chromium")
    return path


@pytest.fixture(scope="session")
def web_tmpdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The test server's $TMPDIR (its MP4s, Gradio's cache and uploads live there)."""
    return tmp_path_factory.mktemp("web-tmpdir")


@pytest.fixture(scope="session")
def web_url(
    tmp_path_factory: pytest.TempPathFactory, web_tmpdir: Path
) -> Iterator[str]:
    pytest.importorskip("openenv", reason="needs the server extra")
    pytest.importorskip("gradio", reason="needs the web extra")
    settings = {
        "EVGRID_WEB_MAX_TABS": str(MAX_TABS),
        "EVGRID_WEB_IDLE_S": "600",
        "TMPDIR": str(web_tmpdir),
    }
    with running_server(tmp_path_factory.mktemp("web"), settings) as url:
        yield url


@pytest.fixture(scope="session")
def web_max_tabs() -> int:
    return MAX_TABS


@pytest.fixture(scope="module")
def browser() -> Iterator:
    """Chromium under playwright, one per test module: a sync playwright keeps an event
    loop running in the main thread until it stops, and a later test's
    ``asyncio.run`` (the server's async-client tests) would then be refused."""
    sync_api = pytest.importorskip(
        "playwright.sync_api", reason="needs playwright: pip install -e .[web]"
    )
    path = chromium_path()
    with sync_api.sync_playwright() as pw:
        b = pw.chromium.launch(
            executable_path=path, args=["--no-sandbox", "--disable-gpu"]
        )
        yield b
        b.close()
