"""Server soak: well-behaved sessions, then the same beside sessions sending bad frames.

    python3 bench/server_soak.py --good 16 --bad 8 --seconds 20

Starts the EV Grid server (or uses ``--url``) and runs two phases of ``--seconds``
each: ``--good`` clients stepping episodes alone, then the same clients while
``--bad`` clients mix valid steps with every kind of bad frame (binary, JSON that
is not an object, deep nesting, lone surrogates, too long, wrong shape, bad
action, bad reset, and a 15 MB frame every ``--huge-every`` frames), and a side
task tries what must be refused (an HTTP /mcp session, attaching to a session, a
browser Origin). Prints:

- sessions lost (a connection closed or an episode replaced without its client's
  reset; must be 0), errors that changed state (the session's step count or
  episode differs after an error reply; must be 0), bad frames answered with
  anything but an error, refusals that were not refused;
- server RSS at start, after the first phase and at the end (and the peak);
- p50/p99 step latency of the well-behaved clients in each phase, and the ratio.

Bad clients pace themselves (``--pace-ms`` between frames), so the ratio shows what
bad frames cost the server, not a client process starved of CPU.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import time
import urllib.request
import uuid
from collections import Counter
from contextlib import suppress
from pathlib import Path

import numpy as np
from server_load import choose, free_port, start  # the load benchmark's helpers
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

from evgrid_core import ChargerKind, Defer, Route, format_action
from evgrid_openenv.client import EVGridClient

ROOT = Path(__file__).resolve().parents[1]
DEEP = 5_000  # levels of nesting

BAD_FRAMES: list[tuple[str, str | bytes]] = [
    ("binary frame", b"\x00\x01\x02binary"),
    ("JSON array", "[]"),
    ("JSON string", '"step"'),
    ("JSON null", "null"),
    ("JSON number", "42"),
    ("deep nesting", "[" * DEEP + "]" * DEEP),
    (
        "deep nesting in data",
        '{"type": "step", "data": {"metadata": ' + '{"a": ' * DEEP + "1}" * DEEP + "}}",
    ),
    ("not JSON", "{not json"),
    ("NaN", '{"type": "step", "data": {"text": NaN}}'),
    ("no type", '{"data": {}}'),
    ("unknown type", '{"type": "teleport"}'),
    ("step without data", '{"type": "step"}'),
    ("data not an object", '{"type": "step", "data": [1]}'),
    ("unknown field", '{"type": "state", "x": 1}'),
    ("lone surrogate", '{"type": "step", "data": {"text": "ROUTE E1 S1 FAST\\ud800"}}'),
    ("text too long", json.dumps({"type": "step", "data": {"text": "x" * 2000}})),
    ("message too long", json.dumps({"type": "step", "data": {"text": "E" * 100_000}})),
    (
        "bad action",
        json.dumps({"type": "step", "data": {"command": "DEFER", "ev": "1"}}),
    ),
    ("bad reset", json.dumps({"type": "reset", "data": {"seed": "7"}})),
]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--good", type=int, default=16, help="well-behaved sessions")
    p.add_argument("--bad", type=int, default=8, help="sessions sending bad frames")
    p.add_argument("--seconds", type=float, default=20.0, help="[s] per phase")
    p.add_argument(
        "--pace-ms", type=float, default=20.0, help="[ms] between bad frames"
    )
    p.add_argument(
        "--huge-every", type=int, default=50, help="a 15 MB frame every N bad frames"
    )
    p.add_argument("--huge-mb", type=float, default=15.0, help="[MB] the huge frame")
    p.add_argument("--url", default=None, help="a running server (else start one)")
    p.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = p.parse_args(argv)
    if args.good < 1 or args.bad < 0 or args.seconds <= 0:
        p.error("--good >= 1, --bad >= 0 and --seconds > 0 please")
    return args


def rss_mib(pid: int | None) -> float:
    """Resident memory of a process (Linux /proc); nan when unknown."""
    if pid is None:
        return float("nan")
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


# --- Clients --------------------------------------------------------------------------


async def good_client(url: str, seed: int, stop: float, tally: Counter) -> list[float]:
    """Step episodes until ``stop``; latencies [s]. Any exception is a lost session."""
    lat: list[float] = []
    try:
        async with EVGridClient(url, message_timeout_s=120) as client:
            res = await client.reset(seed=seed)
            while time.monotonic() < stop:
                line = choose(res.observation)
                t0 = time.perf_counter()
                res = await client.step(line)
                lat.append(time.perf_counter() - t0)
                if res.done:
                    res = await client.reset(seed=seed + 1000)
    except Exception as e:  # counted: a well-behaved session must never fail
        tally["sessions lost"] += 1
        tally[f"lost: {type(e).__name__}: {str(e)[:80]}"] += 1
    return lat


async def _ask(ws, frame: str | bytes | dict) -> dict:
    with suppress(ConnectionClosed):  # a refused socket is closed, its error queued
        await ws.send(json.dumps(frame) if isinstance(frame, dict) else frame)
    return json.loads(await ws.recv())


async def bad_client(
    url: str, seed: int, stop: float, args: argparse.Namespace, tally: Counter
) -> None:
    """Valid steps mixed with every bad frame; checks that errors change nothing."""
    huge = json.dumps({"type": "step", "data": {"text": "E" * int(args.huge_mb * 1e6)}})
    ws_url = url.replace("http", "ws", 1) + "/ws"
    n = 0
    try:
        async with connect(ws_url, max_size=2**22) as ws:
            obs = (await _ask(ws, {"type": "reset", "data": {"seed": seed}}))["data"]
            state = (await _ask(ws, {"type": "state"}))["data"]
            while time.monotonic() < stop:
                n += 1
                if n % 3 == 0:  # a valid step
                    line = choose_from_frame(obs)
                    reply = await _ask(ws, {"type": "step", "data": {"text": line}})
                    tally["valid steps"] += 1
                    obs = reply["data"]
                    if obs["done"]:
                        reset = {"type": "reset", "data": {"seed": seed + n}}
                        obs = (await _ask(ws, reset))["data"]
                    state = (await _ask(ws, {"type": "state"}))["data"]
                else:
                    if args.huge_every and n % args.huge_every == 0:
                        kind, frame = "15 MB frame", huge
                    else:
                        kind, frame = BAD_FRAMES[n % len(BAD_FRAMES)]
                    reply = await _ask(ws, frame)
                    tally["bad frames"] += 1
                    if reply["type"] != "error":
                        tally["bad frames not refused"] += 1
                        tally[f"not refused: {kind}"] += 1
                    after = (await _ask(ws, {"type": "state"}))["data"]
                    if (after["episode_id"], after["step_count"]) != (
                        state["episode_id"],
                        state["step_count"],
                    ):
                        tally["errors that changed state"] += 1
                        tally[f"changed state: {kind}"] += 1
                        state = after
                await asyncio.sleep(args.pace_ms / 1000)
    except ConnectionClosed as e:
        tally["sessions lost"] += 1
        tally[f"lost: bad client closed {e.rcvd}"] += 1


def choose_from_frame(obs: dict) -> str:
    """``server_load.choose`` on a raw observation frame."""
    grid = obs["observation"]["grid"]
    req = grid["request"]
    for s, kinds in enumerate(grid["route_mask"]):
        for k, ok in enumerate(kinds):
            if ok:
                return format_action(Route(req["id"], s + 1, ChargerKind(k)))
    return format_action(Defer(req["id"], (grid["defer_options"] or [5])[0]))


async def side_attacks(url: str, stop: float, tally: Counter) -> None:
    """What must be refused: an HTTP session, attaching, a browser Origin."""
    ws_url = url.replace("http", "ws", 1) + "/ws"
    body = json.dumps(
        {"jsonrpc": "2.0", "id": 1, "method": "openenv/session/create"}
    ).encode()

    def mcp_session() -> dict:
        req = urllib.request.Request(
            url + "/mcp", data=body, headers={"content-type": "application/json"}
        )
        with urllib.request.urlopen(req, timeout=30) as r:
            return json.loads(r.read())

    while time.monotonic() < stop:
        tally["side attempts"] += 1
        if "result" in await asyncio.to_thread(mcp_session):
            tally["refusals not refused: /mcp session"] += 1
        async with connect(f"{ws_url}?session_id={uuid.uuid4()}") as ws:
            if (await _ask(ws, {"type": "state"}))["type"] != "error":
                tally["refusals not refused: attach"] += 1
        try:
            async with connect(ws_url, origin="https://evil.example"):
                tally["refusals not refused: origin"] += 1
        except InvalidStatus:
            pass
        await asyncio.sleep(0.5)


# --- Phases ---------------------------------------------------------------------------


async def phase(url: str, args: argparse.Namespace, with_bad: bool, pid, tally):
    stop = time.monotonic() + args.seconds
    tasks = [good_client(url, s, stop, tally) for s in range(args.good)]
    extra = []
    if with_bad:
        extra = [
            bad_client(url, 500 + s, stop, args, tally) for s in range(args.bad)
        ] + [side_attacks(url, stop, tally)]
    peak = 0.0

    async def sample_rss() -> None:
        nonlocal peak
        while time.monotonic() < stop:
            peak = max(peak, rss_mib(pid))
            await asyncio.sleep(0.5)

    results = await asyncio.gather(*tasks, *extra, sample_rss())
    lat = np.array([x for r in results[: args.good] for x in r]) * 1000
    return lat, peak


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    procs, pid, url = [], None, args.url
    try:
        if url is None:
            port = free_port()
            settings = {
                "EVGRID_MAX_SESSIONS": str(args.good + args.bad + 8),
                "ENABLE_WEB_INTERFACE": "0",
            }
            cmd = [sys.executable, "-m", "uvicorn", "server:app", "--host", "127.0.0.1",
                   "--port", str(port), "--log-level", "warning",
                   "--ws-per-message-deflate", "false"]  # fmt: skip
            procs.append(start(cmd, port, settings))
            url, pid = f"http://127.0.0.1:{port}", procs[-1].pid
        tally: Counter = Counter()
        asyncio.run(phase(url, args, False, pid, Counter()))  # warm-up run, dropped
        rss = {"start": rss_mib(pid)}
        alone, _ = asyncio.run(phase(url, args, False, pid, tally))
        rss["after good-only phase"] = rss_mib(pid)
        mixed, peak = asyncio.run(phase(url, args, True, pid, tally))
        rss["end"] = rss_mib(pid)
        rss["peak (mixed phase)"] = peak
    finally:
        for p in procs:
            p.terminate()
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                p.kill()

    def pct(lat, q):
        return float(np.percentile(lat, q)) if len(lat) else float("nan")

    figures = {
        "config": {**vars(args), "cpus": os.cpu_count()},
        "sessions_lost": tally["sessions lost"],
        "errors_that_changed_state": tally["errors that changed state"],
        "bad_frames_not_refused": tally["bad frames not refused"],
        "refusals_not_refused": sum(
            v for k, v in tally.items() if k.startswith("refusals not refused")
        ),
        "tally": dict(tally),
        "rss_mib": rss,
        "good_alone": {
            "steps": len(alone),
            "p50_ms": pct(alone, 50),
            "p99_ms": pct(alone, 99),
        },  # fmt: skip
        "good_with_bad": {
            "steps": len(mixed),
            "p50_ms": pct(mixed, 50),
            "p99_ms": pct(mixed, 99),
        },  # fmt: skip
    }
    figures["p50_ratio"] = figures["good_with_bad"]["p50_ms"] / pct(alone, 50)
    figures["p99_ratio"] = figures["good_with_bad"]["p99_ms"] / pct(alone, 99)
    if args.json:
        print(json.dumps(figures, indent=2))
        return 0
    print(
        f"{args.good} good + {args.bad} bad sessions, {args.seconds:g} s per phase, "
        f"bad frames every {args.pace_ms:g} ms, a {args.huge_mb:g} MB frame every "
        f"{args.huge_every}; {os.cpu_count()} CPUs (load avg "
        f"{os.getloadavg()[0]:.1f}), loopback"
    )
    for key in ("sessions_lost", "errors_that_changed_state",
                "bad_frames_not_refused", "refusals_not_refused"):  # fmt: skip
        print(f"{key.replace('_', ' '):28} {figures[key]}")
    print(
        f"{'bad frames / valid steps':28} {tally['bad frames']} / "
        f"{tally['valid steps']} (side attempts {tally['side attempts']})"
    )
    print("server RSS MiB: " + ", ".join(f"{k} {v:.0f}" for k, v in rss.items()))
    print(f"{'good sessions':16} {'steps':>7} {'p50 ms':>8} {'p99 ms':>8}")
    for name, key in (("alone", "good_alone"), ("beside bad", "good_with_bad")):
        f = figures[key]
        print(f"{name:16} {f['steps']:7d} {f['p50_ms']:8.2f} {f['p99_ms']:8.2f}")
    print(
        f"ratio beside bad / alone: p50 {figures['p50_ratio']:.2f}, "
        f"p99 {figures['p99_ratio']:.2f}"
    )
    for k, v in sorted(tally.items()):
        if k.startswith(("lost:", "changed state:", "not refused:")):
            print(f"  {k}: {v}")
    failed = figures["sessions_lost"] or figures["errors_that_changed_state"]
    return 1 if failed or figures["bad_frames_not_refused"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
