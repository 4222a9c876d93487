"""A client of the page's own HTTP API, written from scratch as an attacker's would
be: the events by the elements that trigger them (read from ``/web/config``), each
call a ``queue/join`` with any session id and any data, its outputs read back from
``queue/data``; raw sockets for what ``urllib`` will not send."""

from __future__ import annotations

import json
import socket
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from typing import Any

API = "/web/gradio_api"


@dataclass
class Reply:
    status: int
    body: Any  # the JSON answer, else its text


def post(url: str, path: str, body: Any) -> Reply:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    req = urllib.request.Request(
        url + path, data=data, headers={"Content-Type": "application/json"}
    )
    return _open(req)


def get(url: str, path: str, timeout: float = 10) -> Reply:
    return _open(urllib.request.Request(url + path), timeout)


def _open(req: urllib.request.Request, timeout: float = 10) -> Reply:
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            status, raw = r.status, r.read()
    except urllib.error.HTTPError as e:
        status, raw = e.code, e.read()
    try:
        return Reply(status, json.loads(raw))
    except ValueError:
        return Reply(status, raw.decode("utf-8", "replace"))


@dataclass
class Page:
    """The page's events by trigger, from its config."""

    url: str
    fns: dict[tuple[str, str], int] = field(default_factory=dict)
    outputs: dict[int, list[str]] = field(default_factory=dict)

    @classmethod
    def read(cls, url: str) -> Page:
        config = get(url, "/web/config").body
        names = {
            c["id"]: c.get("props", {}).get("elem_id") or c["type"]
            for c in config["components"]
        }
        page = cls(url)
        for dep in config["dependencies"]:
            for target, event in dep["targets"]:
                page.fns[(names.get(target, ""), event)] = dep["id"]
            page.outputs[dep["id"]] = [names.get(i, "") for i in dep["outputs"]]
        return page

    def fn(self, elem_id: str, event: str = "click") -> int:
        return self.fns[(elem_id, event)]

    def join(self, fn_index: int, data: list, session: Any) -> Reply:
        body = {"data": data, "fn_index": fn_index, "session_hash": session}
        return post(self.url, API + "/queue/join", body)

    def call(self, elem_id: str, data: list, session: str, event: str = "click"):  # noqa: ANN201
        """One event as the browser sends it: its outputs by elem_id, or the error
        message Gradio sent instead."""
        fn = self.fn(elem_id, event)
        reply = self.join(fn, data, session)
        assert reply.status == 200, reply
        event_id = reply.body["event_id"]
        for msg in self.messages(session):
            if msg.get("event_id") != event_id:
                continue
            if msg["msg"] == "process_completed":
                out = msg["output"]
                if not msg.get("success", False):
                    return {"error": out.get("error") or out}
                return dict(zip(self.outputs[fn], out["data"], strict=True))
            if msg["msg"] == "unexpected_error":
                return {"error": msg.get("message")}
        raise AssertionError("the event never completed")

    def messages(self, session: str, timeout: float = 120):  # noqa: ANN201
        q = urllib.parse.urlencode({"session_hash": session})
        req = urllib.request.Request(f"{self.url}{API}/queue/data?{q}")
        with urllib.request.urlopen(req, timeout=timeout) as r:
            for raw in r:
                line = raw.decode("utf-8").strip()
                if line.startswith("data:"):
                    msg = json.loads(line[5:])
                    yield msg
                    if msg.get("msg") == "close_stream":
                        return


def value(out: Any) -> Any:
    """An output's value, whether Gradio sent it plain or as an update."""
    if isinstance(out, dict) and "value" in out:
        return out["value"]
    return out


# --- Raw sockets -------------------------------------------------------------------------
def raw_request(url: str, head: str, chunks: list[bytes] = (), timeout: float = 30):  # noqa: ANN201
    """Send ``head`` (request line and headers) and ``chunks`` as a chunked body
    over a plain socket; the status code and the answer's text."""
    host, port = urllib.parse.urlsplit(url).netloc.split(":")
    with socket.create_connection((host, int(port)), timeout=timeout) as s:
        s.sendall(head.replace("\n", "\r\n").encode() + b"\r\n")
        try:
            for chunk in chunks:
                s.sendall(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
            s.sendall(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server answered and closed before the whole body was sent
        answer = b""
        try:
            while True:
                data = s.recv(65536)
                if not data:
                    break
                answer += data
                if b"\r\n\r\n" in answer and _complete(answer):
                    break
        except (TimeoutError, ConnectionResetError):
            pass
    status = int(answer.split(b" ", 2)[1]) if answer else 0
    return status, answer.decode("latin-1")


def _complete(answer: bytes) -> bool:
    head, _, body = answer.partition(b"\r\n\r\n")
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            return len(body) >= int(line.split(b":")[1])
    return False
