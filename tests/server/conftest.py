"""Real servers for the tests: uvicorn on a free 127.0.0.1 port, in a subprocess.

Started exactly as a user would (``python -m uvicorn server:app`` with the
Dockerfile's flags, settings from the environment as in Docker), so the tests exercise the real app, the real
WebSocket transport and the real client.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from server_helpers import running_server

MAX_SESSIONS = 64  # what the concurrency tests need, with room to spare
SMALL_MAX_SESSIONS = 4  # the small server: a cap the tests can fill
SMALL_TIMEOUT_S = 1.5  # [s] the small server's idle timeout
ALLOWED_ORIGIN = "https://trainer.example"  # the small server's one browser origin


@pytest.fixture(scope="session")
def server_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    pytest.importorskip(
        "openenv", reason="needs the server extra: pip install -e .[server]"
    )
    settings = {"EVGRID_MAX_SESSIONS": str(MAX_SESSIONS)}
    with running_server(tmp_path_factory.mktemp("server"), settings) as url:
        yield url


@pytest.fixture(scope="session")
def small_server_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A server with 4 slots, a 1.5 s idle timeout and one allowed browser origin."""
    pytest.importorskip(
        "openenv", reason="needs the server extra: pip install -e .[server]"
    )
    settings = {
        "EVGRID_MAX_SESSIONS": str(SMALL_MAX_SESSIONS),
        "EVGRID_SESSION_TIMEOUT_S": str(SMALL_TIMEOUT_S),
        "EVGRID_ALLOWED_ORIGINS": ALLOWED_ORIGIN,
    }
    with running_server(tmp_path_factory.mktemp("small_server"), settings) as url:
        yield url
