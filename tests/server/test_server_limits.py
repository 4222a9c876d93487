"""The transport's limits, as each way of starting the server sets them (issue 30).

``python server.py``, ``evgrid serve`` and the Dockerfile's CMD each start a real
server here, with a 1.5 s request deadline; raw sockets then play the clients a
server must bound: a WebSocket message between the protocol's limit and the
transport's (an error frame, the session goes on) and above it (closed with 1009),
a request head or body sent a byte at a time (dropped), a client that leaves
mid-body (one warning, no traceback). And ``python server.py`` builds its app once.
"""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import suppress
from pathlib import Path
from urllib.parse import urlsplit

import pytest

pytest.importorskip("openenv")

from server_helpers import ROOT, ask, open_session, running_server  # noqa: E402

from evgrid_openenv.protocol import MAX_MESSAGE_CHARS  # noqa: E402
from evgrid_openenv.transport import WS_MAX_BYTES, uvicorn_flags  # noqa: E402

TIMEOUT_S = 1.5  # [s] the servers' request deadline here ($EVGRID_HTTP_TIMEOUT_S)
PATIENCE_S = 20.0  # [s] how long a test waits for the server to drop a client
LEFT = "the client left before its body was complete"


def dockerfile_cmd() -> list[str]:
    """The image's CMD, bound to 127.0.0.1 and a free port."""
    text = re.sub(r"\\\n", " ", (ROOT / "Dockerfile").read_text())
    cmd = json.loads(next(s for s in text.splitlines() if s.startswith("CMD "))[4:])
    assert cmd[:2] == ["uvicorn", "server:app"]
    cmd = [sys.executable, "-m", *cmd]
    cmd[cmd.index("--host") + 1] = "127.0.0.1"
    cmd[cmd.index("--port") + 1] = "{port}"
    return cmd


STARTERS = {
    "python server.py": [sys.executable, "server.py", "--port", "{port}"],
    "evgrid serve": [sys.executable, "-m", "evgrid_cli", "serve", "--port", "{port}"],
    "Dockerfile CMD": dockerfile_cmd(),
}


@pytest.fixture(scope="module", params=list(STARTERS))
def limited(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, Path]]:
    """(url, log) of a server started one of the three ways, the page left out."""
    log_dir = tmp_path_factory.mktemp("limits")
    settings = {"EVGRID_HTTP_TIMEOUT_S": str(TIMEOUT_S), "EVGRID_WEB": "0"}
    with running_server(log_dir, settings, STARTERS[request.param]) as url:
        yield url, log_dir / "uvicorn.log"


def test_the_dockerfile_passes_the_transport_flags() -> None:
    cmd, flags = dockerfile_cmd(), uvicorn_flags()
    for flag, value in zip(flags[::2], flags[1::2], strict=True):
        assert cmd[cmd.index(flag) + 1] == value, (flag, cmd)


# --- WebSocket messages ---------------------------------------------------------------


def test_a_message_between_the_limits_is_an_error_and_the_session_goes_on(
    limited: tuple[str, Path],
) -> None:
    url, _ = limited
    with open_session(url, seed=3) as (ws, _):
        # ASCII, over the protocol's 64 Ki characters: refused unread.
        reply = ask(ws, "E" * (WS_MAX_BYTES - 10))
        assert reply["type"] == "error" and reply["data"]["code"] == "INVALID_JSON"
        assert f"over the limit of {MAX_MESSAGE_CHARS:,}" in reply["data"]["message"]
        # Within 64 Ki characters, 4 bytes each (about 256 KiB): it arrives and is
        # read (text over the action's limit: a validation error).
        text = "\U0001f600" * (MAX_MESSAGE_CHARS - 100)
        frame = json.dumps({"type": "step", "data": {"text": text}}, ensure_ascii=False)
        assert len(frame) <= MAX_MESSAGE_CHARS < len(frame.encode()) <= WS_MAX_BYTES
        reply = ask(ws, frame)
        assert reply["data"]["code"] == "VALIDATION_ERROR", reply
        # The session goes on, unchanged.
        assert ask(ws, {"type": "state"})["data"]["step_count"] == 0
        reply = ask(ws, {"type": "step", "data": {"text": "DEFER E1 15"}})
        assert reply["type"] == "observation"


@pytest.mark.parametrize("size", [WS_MAX_BYTES + 1, 16_000_000])
def test_a_message_over_the_transport_limit_closes_the_connection_with_1009(
    limited: tuple[str, Path], size: int
) -> None:
    from websockets.exceptions import ConnectionClosed

    url, _ = limited
    with open_session(url, seed=3) as (ws, _):
        with suppress(ConnectionClosed):  # closed while it was still being sent
            ws.send("E" * size)
        with pytest.raises(ConnectionClosed) as closed:
            ws.recv(timeout=PATIENCE_S)
        code = closed.value.rcvd.code if closed.value.rcvd else None
        # uvicorn sends 1009 and closes at once: a client still sending (16 MB)
        # may have its socket reset before it reads the close frame.
        assert code == 1009 or (size > 4 * WS_MAX_BYTES and code is None), code
    with open_session(url, seed=3) as (_, reply):  # the server goes on
        assert reply["type"] == "observation"


# --- Slow and vanishing HTTP clients -------------------------------------------------


def connect(url: str) -> socket.socket:
    parts = urlsplit(url)
    return socket.create_connection((parts.hostname, parts.port), timeout=PATIENCE_S)


def trickle_until_dropped(sock: socket.socket, byte: bytes = b" ") -> bytes:
    """Send a byte every 0.1 s until the server closes; what it sent first.

    Fails after PATIENCE_S: a server without a deadline holds the client forever.
    """
    got = b""
    deadline = time.monotonic() + PATIENCE_S
    sock.settimeout(0.1)
    while time.monotonic() < deadline:
        try:
            sock.sendall(byte)
            chunk = sock.recv(65536)
        except TimeoutError:
            continue
        except (ConnectionResetError, BrokenPipeError):
            return got
        if not chunk:
            return got
        got += chunk
    pytest.fail(f"still connected after {PATIENCE_S:g} s; received {got[:200]!r}")


def test_a_request_head_sent_a_byte_at_a_time_is_dropped(
    limited: tuple[str, Path],
) -> None:
    url, _ = limited
    with connect(url) as sock:
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: ")
        assert trickle_until_dropped(sock, b"a") == b""
    with connect(url) as sock:  # nothing sent at all
        assert trickle_until_dropped(sock, b"") == b""


@pytest.mark.parametrize("path", ["/reset", "/step", "/mcp"])
def test_a_body_sent_a_byte_at_a_time_gets_408_and_is_dropped(
    limited: tuple[str, Path], path: str
) -> None:
    url, _ = limited
    with connect(url) as sock:
        sock.sendall(
            f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            "Content-Length: 1000\r\n\r\n{".encode()
        )
        reply = trickle_until_dropped(sock)
    assert reply.startswith(b"HTTP/1.1 408"), reply[:200]
    assert b'"code":"TIMEOUT"' in reply


def test_a_client_leaving_mid_body_is_one_warning_not_a_traceback(
    limited: tuple[str, Path],
) -> None:
    url, log = limited
    before = log.read_text().count(LEFT)
    for path in ("/reset", "/step", "/mcp"):
        with connect(url) as sock:
            sock.sendall(
                f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n"
                '{"seed": '.encode()
            )
    deadline = time.monotonic() + PATIENCE_S
    while log.read_text().count(LEFT) < before + 3 and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(0.5)  # anything more the server would write about them
    text = log.read_text()
    assert text.count(LEFT) == before + 3, text[-3000:]
    assert "Traceback" not in text and "ClientDisconnect" not in text, text[-3000:]


# --- One app per start ----------------------------------------------------------------

COUNT_BUILDS = """
import json, runpy, sys
import uvicorn, evgrid_web, evgrid_openenv.app as app_mod

built, mounted, served = [], [], []
build, mount = app_mod.build_app, evgrid_web.mount_page
app_mod.build_app = lambda *a, **k: built.append(1) or build(*a, **k)
evgrid_web.mount_page = lambda app, *a, **k: mounted.append(app) or mount(app, *a, **k)
uvicorn.run = lambda app, **kw: served.append(app)
sys.argv = ["server.py", "--port", "8123"]
try:
    runpy.run_path("server.py", run_name="__main__")
except SystemExit:
    pass
main = {"built": len(built), "mounted": len(mounted),
        "served_the_mounted_app": served == mounted}
built.clear(); mounted.clear()
import server
same = server.app is server.app
print(json.dumps({"python server.py": main,
                  "uvicorn server:app": {"built": len(built), "mounted": len(mounted),
                                         "same": same}}))
"""


def test_python_server_py_builds_the_app_and_the_page_once() -> None:
    pytest.importorskip("gradio")
    out = subprocess.run(
        [sys.executable, "-c", COUNT_BUILDS],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    counts = json.loads(out.stdout.strip().splitlines()[-1])
    assert counts["python server.py"] == {
        "built": 1,
        "mounted": 1,
        "served_the_mounted_app": True,
    }
    assert counts["uvicorn server:app"] == {"built": 1, "mounted": 1, "same": True}
