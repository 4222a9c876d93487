"""The hostile clients of ``server_hostile.py``, run in a process of their own.

Each loops until the phase ends (``stop``), counting what it got in ``t``: slow
request heads and /reset bodies (a byte a second), WebSocket messages between the
protocol's limit and the transport's and above it, clients leaving mid-body,
chunked uploads to the page, new page session ids that never read their replies,
and Oracle tabs on the page (Start, then Step).
"""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import json
import time
import urllib.error
import urllib.request
import uuid
from collections import Counter

from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

SCENARIO = "evening_peak"


async def slow_client(host: str, port: int, body: bool, stop: asyncio.Event, t):
    """Send a head (or a /reset body) a byte a second, again and again: how long
    the server held each connection [s] (the last one may still be held)."""
    kind = "slow body" if body else "slow head"
    head = b"GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: "
    if body:
        head = b"POST /reset HTTP/1.1\r\nHost: x\r\nContent-Length: 900\r\n\r\n{"
    held: list[float] = []
    while not stop.is_set():
        t0 = time.monotonic()
        reader, writer = await asyncio.open_connection(host, port)
        reply, dropped = b"", False
        try:
            writer.write(head)
            while not stop.is_set() and not dropped:
                writer.write(b" ")
                await writer.drain()
                with contextlib.suppress(TimeoutError):
                    chunk = await asyncio.wait_for(reader.read(4096), 1.0)
                    reply += chunk
                    dropped = not chunk
        except (ConnectionError, OSError):
            dropped = True
        writer.close()
        held.append(time.monotonic() - t0)
        what = reply[:12].decode(errors="replace") or "a close"
        t[
            f"{kind}: dropped with {what}" if dropped else f"{kind}: held at the end"
        ] += 1
    return kind, held


async def big_ws_client(url: str, seed: int, args, stop: asyncio.Event, t) -> None:
    """Between the limits: an error, nothing changed; over the transport's: 1009."""
    between = json.dumps({"type": "step", "data": {"text": "E" * 200_000}})
    huge = "E" * int(args.huge_mb * 1e6)
    ws_url = url.replace("http", "ws", 1) + "/ws"
    while not stop.is_set():
        async with connect(ws_url) as ws:
            await ws.send(json.dumps({"type": "reset", "data": {"seed": seed}}))
            await ws.recv()
            await ws.send(between)
            reply = json.loads(await ws.recv())
            await ws.send('{"type": "state"}')
            state = json.loads(await ws.recv())["data"]
            ok = reply["type"] == "error" and state["step_count"] == 0
            t[f"200 kB message: {'error, session on' if ok else 'WRONG'}"] += 1
            try:
                await ws.send(huge)
                await ws.recv()
                t["16 MB message: answered (not closed)"] += 1
            except ConnectionClosed as e:
                code = e.rcvd.code if e.rcvd else None
                t[f"16 MB message: closed {code}"] += 1
        await asyncio.sleep(1.0)


async def leavers(host: str, port: int, args, stop: asyncio.Event, t) -> None:
    """Clients that send half a body to /reset, /step or /mcp and leave."""
    paths = ("/reset", "/step", "/mcp")
    n = 0
    while not stop.is_set():
        _, writer = await asyncio.open_connection(host, port)
        path = paths[n % 3]
        writer.write(
            f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{{".encode()
        )
        await writer.drain()
        writer.close()
        n += 1
        t["left mid-body"] += 1
        await asyncio.sleep(1 / args.leavers_per_s)


def upload_once(host: str, port: int, mib: float) -> int:
    """A chunked multipart upload to the page; the status."""
    boundary = uuid.uuid4().hex
    chunk = b"\0" * (1 << 20)

    def body():
        yield (
            f'--{boundary}\r\nContent-Disposition: form-data; name="files"; '
            f'filename="big.bin"\r\nContent-Type: application/octet-stream\r\n\r\n'
        ).encode()
        for _ in range(int(mib)):
            yield chunk
        yield f"\r\n--{boundary}--\r\n".encode()

    conn = http.client.HTTPConnection(host, port, timeout=120)
    try:
        conn.request(
            "POST",
            f"/web/gradio_api/upload?upload_id={uuid.uuid4().hex[:10]}",
            body=body(),
            headers={"Content-Type": f"multipart/form-data; boundary={boundary}"},
            encode_chunked=True,
        )
        return conn.getresponse().status
    except (ConnectionError, OSError):
        return -1
    finally:
        conn.close()


async def uploader(host: str, port: int, args, stop: asyncio.Event, t) -> None:
    while not stop.is_set():
        status = await asyncio.to_thread(upload_once, host, port, args.upload_mb)
        t[f"upload of {args.upload_mb:g} MiB: {status}"] += 1
        await asyncio.sleep(0.5)


def page_config(url: str) -> dict:
    with urllib.request.urlopen(f"{url}/web/config", timeout=60) as r:
        return json.loads(r.read())


Handlers = dict[str, tuple[int, list[str], list[str]]]


def page_handlers(config: dict) -> Handlers:
    """Button elem_id -> (fn_index, its inputs' elem_ids, its outputs' elem_ids)."""
    ids = {c["id"]: c.get("props", {}).get("elem_id") for c in config["components"]}
    out: Handlers = {}
    for i, dep in enumerate(config["dependencies"]):
        for target, _event in dep.get("targets", []):
            if ids.get(target) and ids[target] not in out:
                out[ids[target]] = (
                    dep.get("id", i),
                    [ids.get(c) for c in dep["inputs"]],
                    [ids.get(c) for c in dep["outputs"]],
                )
    return out


def oracle_offered(config: dict) -> bool:
    for c in config["components"]:
        if c.get("props", {}).get("elem_id") == "evgrid-policy":
            return "oracle" in json.dumps(c["props"].get("choices", []))
    return False


async def churn(url: str, handlers: dict, args, stop: asyncio.Event, t) -> None:
    """A new page session id per request, its reply never read (issue 30, item 9)."""
    fn, inputs, _ = handlers["evgrid-step"]
    values = {"evgrid-key": "", "evgrid-speed": "2.0"}
    data = [values.get(i) for i in inputs]

    def join() -> int:
        body = json.dumps({"data": data, "fn_index": fn, "session_hash": uuid.uuid4().hex,
                           "event_data": None, "trigger_id": None}).encode()  # fmt: skip
        req = urllib.request.Request(
            f"{url}/web/gradio_api/queue/join", data=body,
            headers={"content-type": "application/json"},
        )  # fmt: skip
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                return r.status
        except urllib.error.HTTPError as e:
            return e.code
        except OSError:
            return -1

    async def one() -> None:
        async with room:
            t[f"churn join: {await asyncio.to_thread(join)}"] += 1

    room = asyncio.Semaphore(16)  # joins in flight at once
    pending: set[asyncio.Task] = set()
    while not stop.is_set():
        task = asyncio.create_task(one())
        pending.add(task)
        task.add_done_callback(pending.discard)
        await asyncio.sleep(1 / args.churn_per_s)
    await asyncio.gather(*pending, return_exceptions=True)


async def oracle_tab(url: str, handlers: Handlers, seed: int, stop, t) -> None:
    """A page tab of the Oracle: Start, then Step until the phase ends."""
    from gradio_client import Client

    client = await asyncio.to_thread(Client, f"{url}/web/", verbose=False)
    values = {"evgrid-key": "", "evgrid-scenario": SCENARIO, "evgrid-policy": "oracle",
              "evgrid-seed": seed, "evgrid-speed": "2.0"}  # fmt: skip

    def call(button: str) -> None:
        fn, inputs, outputs = handlers[button]
        out = client.predict(*[values.get(i) for i in inputs], fn_index=fn)
        if "evgrid-key" in outputs and out[outputs.index("evgrid-key")]:
            values["evgrid-key"] = out[outputs.index("evgrid-key")]

    try:
        t0 = time.perf_counter()
        await asyncio.to_thread(call, "evgrid-start")
        t["oracle tab: started"] += 1
        t["oracle tab: start ms (sum)"] += int((time.perf_counter() - t0) * 1000)
        while not stop.is_set():
            t0 = time.perf_counter()
            await asyncio.to_thread(call, "evgrid-step")
            t["oracle tab: steps"] += 1
            t["oracle tab: step ms (sum)"] += int((time.perf_counter() - t0) * 1000)
    except Exception as e:  # the page's own trouble: counted, not fatal here
        t[f"oracle tab error: {type(e).__name__}: {str(e)[:60]}"] += 1


async def hostile_mix(url: str, args, stop_flag, t: Counter) -> dict[str, float]:
    """Every hostile client until ``stop_flag`` (a process Event) is set."""
    host, port = url.split("//")[1].split(":")
    port = int(port)
    stop = asyncio.Event()
    config = await asyncio.to_thread(page_config, url)
    handlers = page_handlers(config)
    extra = [slow_client(host, port, b, stop, t)
             for b in (False, True) for _ in range(args.slow)]  # fmt: skip
    extra += [big_ws_client(url, 900 + i, args, stop, t) for i in range(args.big_ws)]
    extra += [uploader(host, port, args, stop, t) for _ in range(args.uploads)]
    if args.leavers_per_s > 0:
        extra.append(leavers(host, port, args, stop, t))
    if args.churn_per_s > 0:
        extra.append(churn(url, handlers, args, stop, t))
    if oracle_offered(config):
        extra += [
            oracle_tab(url, handlers, i, stop, t) for i in range(args.oracle_tabs)
        ]
    elif args.oracle_tabs:
        t["oracle tabs: the Oracle is not offered on the page"] += 1
    clients = asyncio.gather(*extra, return_exceptions=True)
    while not stop_flag.is_set():
        await asyncio.sleep(0.2)
    stop.set()
    held: dict[str, float] = {}
    for r in await clients:
        if isinstance(r, BaseException):
            t[f"hostile client failed: {type(r).__name__}: {str(r)[:60]}"] += 1
        elif isinstance(r, tuple):
            held[r[0]] = max(held.get(r[0], 0.0), max(r[1], default=0.0))
    return held


def run_hostile(url: str, args, stop_flag, out) -> None:
    """The child process: the mix, then (counts, longest held [s]) into ``out``."""
    t: Counter = Counter()
    held = asyncio.run(hostile_mix(url, args, stop_flag, t))
    out.put((dict(t), held))
