"""The web page's frames while trainers load the server: a tab's frame latency with
no load and while N WebSocket sessions step as fast as they can, and the sessions'
step latency beside it.

    python3 bench/web_under_load.py [--sessions 64] [--seconds 20]

Starts ``uvicorn server:app`` (the OpenEnv server with the page mounted). The tab
is a client of the page's own HTTP API (what the browser sends): Start, Play, then
the frame timer's event back to back (``queue/join`` then ``queue/data`` until the
event completes, as the browser does), each one's round trip timed. The load is
``bench/server_load.py``'s sessions (the client-side choice, episodes reset as they
end), running until the window closes. No browser: the page's own work and the
server's scheduling are what is measured, not the drawing of the JPEG in a tab.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]
from server_load import choose, free_port  # noqa: E402

from evgrid_openenv.client import EVGridClient  # noqa: E402

API = "/web/gradio_api"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--sessions", type=int, default=64, help="WebSocket sessions")
    p.add_argument("--seconds", type=float, default=20.0, help="[s] each window")
    p.add_argument("--scenario", default="evening_peak")
    p.add_argument("--policy", default="greedy_eta", help="the tab's policy")
    p.add_argument("--json", action="store_true")
    return p.parse_args(argv)


# --- The tab -----------------------------------------------------------------------------
class Tab:
    """One page tab through the page's HTTP API."""

    def __init__(self, url: str, session: str = "benchtab1") -> None:
        self.url, self.session = url, session
        with urllib.request.urlopen(url + "/web/config") as r:
            config = json.load(r)
        names = {
            c["id"]: c.get("props", {}).get("elem_id") or c["type"]
            for c in config["components"]
        }
        self.fns = {
            names.get(t[0], ""): d["id"]
            for d in config["dependencies"]
            for t in d["targets"]
        }
        self.outputs = {
            d["id"]: [names.get(i, "") for i in d["outputs"]]
            for d in config["dependencies"]
        }
        self.key = ""

    def call(self, elem: str, data: list) -> dict:
        fn = self.fns[elem]
        body = json.dumps({"data": data, "fn_index": fn, "session_hash": self.session})
        req = urllib.request.Request(
            self.url + API + "/queue/join",
            data=body.encode(),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(req, timeout=120) as r:
            event_id = json.load(r)["event_id"]
        q = urllib.parse.urlencode({"session_hash": self.session})
        with urllib.request.urlopen(
            f"{self.url}{API}/queue/data?{q}", timeout=120
        ) as r:
            for raw in r:
                line = raw.decode().strip()
                if not line.startswith("data:"):
                    continue
                msg = json.loads(line[5:])
                if (
                    msg.get("event_id") == event_id
                    and msg["msg"] == "process_completed"
                ):
                    out = msg["output"].get("data") or []
                    return dict(zip(self.outputs[fn], out, strict=False))
        raise RuntimeError("the event never completed")

    def start(self, scenario: str, policy: str) -> None:
        out = self.call("evgrid-start", [self.key, scenario, policy, 0])
        key = out.get("evgrid-key")
        self.key = key if isinstance(key, str) else self.key
        self.call("evgrid-play", [self.key, "2.0"])

    def frames(self, seconds: float) -> list[float]:
        """Frame events back to back for ``seconds``: each one's latency [s]."""
        lat = []
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            t0 = time.perf_counter()
            self.call("timer", [self.key, "2.0"])
            lat.append(time.perf_counter() - t0)
        return lat


# --- The load ----------------------------------------------------------------------------
async def session(url: str, seed: int, scenario: str, stop: threading.Event, lat):  # noqa: ANN001
    async with EVGridClient(url, message_timeout_s=120) as client:
        res = await client.reset(seed=seed, scenario=scenario)
        while not stop.is_set():
            t0 = time.perf_counter()
            res = await client.step(choose(res.observation))
            lat.append((t0, time.perf_counter() - t0))
            if res.done:
                res = await client.reset(seed=seed + 1000, scenario=scenario)


def run_load(url: str, n: int, scenario: str, stop: threading.Event, lat: list) -> None:
    async def all_sessions() -> None:
        await asyncio.gather(
            *(session(url, s, scenario, stop, lat) for s in range(n)),
            return_exceptions=True,
        )

    asyncio.run(all_sessions())


def summary(lat: list[float]) -> dict:
    a = np.array(lat) * 1000
    return {
        "frames": len(a),
        "p50_ms": round(float(np.percentile(a, 50)), 1),
        "p95_ms": round(float(np.percentile(a, 95)), 1),
        "max_ms": round(float(a.max()), 1),
    }


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    port = free_port()
    env = {**os.environ, "EVGRID_MAX_SESSIONS": str(args.sessions + 8)}
    env.setdefault("SDL_VIDEODRIVER", "dummy")
    proc = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", "server:app", "--host", "127.0.0.1",
         "--port", str(port), "--log-level", "warning"],
        cwd=ROOT, env=env,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while True:
            try:
                urllib.request.urlopen(url + "/health", timeout=2)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.3)
        tab = Tab(url)
        tab.start(args.scenario, args.policy)
        tab.frames(2.0)  # warm-up
        idle = summary(tab.frames(args.seconds))
        stop, steps = threading.Event(), []
        load = threading.Thread(
            target=run_load, args=(url, args.sessions, args.scenario, stop, steps)
        )
        load.start()
        time.sleep(3.0)  # every session connected and stepping
        t0 = time.perf_counter()
        loaded = summary(tab.frames(args.seconds))
        t1 = time.perf_counter()
        stop.set()
        load.join(60)
        window = [d for t, d in steps if t0 <= t <= t1]
        ws = {
            "steps_per_s": round(len(window) / (t1 - t0), 1),
            "p50_ms": round(float(np.percentile(window, 50)) * 1000, 1),
            "p95_ms": round(float(np.percentile(window, 95)) * 1000, 1),
        }
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    result = {
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "sessions": args.sessions,
        "frame_idle": idle,
        "frame_loaded": loaded,
        "ws_steps_loaded": ws,
    }
    if args.json:
        print(json.dumps(result))
    else:
        print(f"frame, no load:        {json.dumps(idle)}")
        print(f"frame, {args.sessions} sessions:  {json.dumps(loaded)}")
        print(f"steps, {args.sessions} sessions:  {json.dumps(ws)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
