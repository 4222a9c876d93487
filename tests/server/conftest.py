"""One real server per test session: uvicorn on a free 127.0.0.1 port.

Started in a subprocess exactly as a user would (``python -m uvicorn server:app``),
so the tests exercise the real app, the real WebSocket transport and the real client.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator

import pytest
from server_helpers import ROOT, free_port, wait_healthy

MAX_SESSIONS = 64  # what the concurrency tests need, with room to spare


@pytest.fixture(scope="session")
def server_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    pytest.importorskip(
        "openenv", reason="needs the server extra: pip install -e .[server]"
    )
    port = free_port()
    log = tmp_path_factory.mktemp("server") / "uvicorn.log"
    env = {
        **os.environ,
        "EVGRID_MAX_SESSIONS": str(MAX_SESSIONS),
        "EVGRID_SESSION_TIMEOUT_S": "120",
        "ENABLE_WEB_INTERFACE": "false",
    }
    with log.open("w") as out:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "uvicorn",
                "server:app",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--log-level",
                "warning",
            ],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(url, proc)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    # A traceback in the server log means some request crashed a handler.
    assert "Traceback" not in log.read_text(), log.read_text()[-4000:]
