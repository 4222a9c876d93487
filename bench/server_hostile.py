"""Hostile soak: 64 WebSocket sessions play whole episodes beside every hostile client.

    python3 bench/server_hostile.py [--sessions 64] [--seconds 60] [--oracle-tabs 2]

Starts ``python server.py`` (the OpenEnv server with the page, as the Space runs it)
and runs two phases of ``--seconds``, in each of which ``--sessions`` sessions play
whole episodes back to back (a cheap client-side choice each step; the episode in
progress is finished), each episode on a seed of its own:

1. alone; 2. beside the hostile mix (``hostile_clients.py``, in a process of its
   own so that its work does not slow the sessions' client): slow clients (request
   heads and /reset bodies sent a byte a second), WebSocket messages between the
   protocol's limit and the transport's (an error expected, the session going on)
   and 16 MB ones (a 1009 close expected), clients leaving mid-body, chunked uploads
   to the page, new page session ids that never read their replies (churn), and
   Oracle tabs on the page (Start, then Step, when the Oracle is offered there).

Prints p50/p99 step latency of the sessions in each phase, sessions lost, episodes
whose transcript differs from the same seed and actions run in-process on
``evgrid_core.EVGridEnv`` (must be 0), what each hostile client got, and the
server's RSS and open file descriptors before, during (peak), at the end of the
hostile phase and ``--settle-s`` after it; the server log's tracebacks and errors.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import queue
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from pathlib import Path

import numpy as np
from hostile_clients import run_hostile
from server_load import choose, free_port  # the load benchmark's helpers
from server_soak import rss_mib

from evgrid_core import EVGridEnv
from evgrid_openenv.client import EVGridClient

ROOT = Path(__file__).resolve().parents[1]
SCENARIO = "evening_peak"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--sessions", type=int, default=64, help="well-behaved sessions")
    p.add_argument(
        "--seconds", type=float, default=60.0, help="[s] a phase (episodes finish)"
    )
    p.add_argument("--slow", type=int, default=200, help="slow heads and bodies each")
    p.add_argument("--big-ws", type=int, default=8, help="clients of big messages")
    p.add_argument("--huge-mb", type=float, default=16.0, help="[MB] the huge one")
    p.add_argument(
        "--leavers-per-s", type=float, default=20.0, help="mid-body (0: none)"
    )
    p.add_argument("--uploads", type=int, default=2, help="concurrent uploaders")
    p.add_argument("--upload-mb", type=float, default=20.0, help="[MiB] each")
    p.add_argument(
        "--churn-per-s", type=float, default=50.0, help="new page ids (0: none)"
    )
    p.add_argument("--oracle-tabs", type=int, default=2, help="page tabs of the Oracle")
    p.add_argument("--settle-s", type=float, default=20.0, help="[s] before 'after'")
    p.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = p.parse_args(argv)
    if args.sessions < 1:
        p.error("--sessions must be >= 1")
    return args


def open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


# --- The sessions that must lose nothing ---------------------------------------------


async def good_session(url: str, seed: int, until: float, t: Counter):
    """Whole episodes until ``until`` (the last one finished): latencies [s] and each
    episode's (seed, transcript of (line, reward, done, valid, prompt))."""
    lat: list[float] = []
    episodes: list[tuple[int, list[tuple]]] = []
    try:
        async with EVGridClient(url, message_timeout_s=300) as client:
            while not episodes or time.monotonic() < until:
                ep_seed = seed + 1000 * len(episodes)
                res = await client.reset(seed=ep_seed, scenario=SCENARIO)
                rows = [(None, None, res.done, None, res.observation.prompt)]
                episodes.append((ep_seed, rows))
                while not res.done:
                    line = choose(res.observation)
                    t0 = time.perf_counter()
                    res = await client.step(line)
                    lat.append(time.perf_counter() - t0)
                    obs = res.observation
                    rows.append((line, res.reward, res.done, obs.valid, obs.prompt))
    except Exception as e:  # counted: a well-behaved session must never fail
        t["sessions lost"] += 1
        t[f"lost: {type(e).__name__}: {str(e)[:80]}"] += 1
    return lat, episodes


def in_process(seed: int, rows: list[tuple]) -> list[tuple]:
    """The same seed and action lines on the core, in this process."""
    env = EVGridEnv()
    env.reset(seed=seed, scenario=SCENARIO)
    out = [(None, None, env.done, None, env.render_text())]
    for line, *_ in rows[1:]:
        res = env.step(line)
        out.append((line, res.reward, res.done, res.info["valid"], env.render_text()))
    return out


def same(a: tuple, b: tuple) -> bool:
    (la, ra, da, va, pa), (lb, rb, db, vb, pb) = a, b
    rewards = ra == rb or (ra is not None and rb is not None and abs(ra - rb) < 1e-9)
    return la == lb and rewards and da == db and va == vb and pa == pb


# --- Phases ---------------------------------------------------------------------------


async def phase(url: str, args, seeds: range, pid: int, t: Counter):
    until = time.monotonic() + args.seconds
    done = asyncio.gather(*(good_session(url, s, until, t) for s in seeds))
    samples: list[tuple[float, int]] = []
    while not done.done():
        samples.append((rss_mib(pid), open_fds(pid)))
        await asyncio.sleep(0.5)
    return await done, samples


def run_phase(url, args, seeds, hostile, pid, tally) -> dict:
    """One phase; the hostile clients in a process of their own (so that their work
    does not slow the sessions' client). RSS and fds are sampled until the sessions
    are done and, in the hostile phase, until the hostile clients have stopped."""
    held: dict[str, float] = {}
    if hostile:
        ctx = multiprocessing.get_context("fork")
        stop, out = ctx.Event(), ctx.Queue()
        child = ctx.Process(target=run_hostile, args=(url, args, stop, out))
        child.start()
    results, samples = asyncio.run(phase(url, args, seeds, pid, tally))
    if hostile:  # the sessions are done: the hostile clients wind down
        stop.set()
        deadline = time.monotonic() + 180
        while True:
            samples.append((rss_mib(pid), open_fds(pid)))
            try:
                counts, held = out.get(timeout=0.5)
                tally.update(counts)
                break
            except queue.Empty:
                if time.monotonic() > deadline:
                    tally["hostile clients: no report 180 s after the phase"] += 1
                    break
        child.join(timeout=30)
        if child.is_alive():
            child.kill()
    lat = np.array([x for r, _ in results for x in r]) * 1000
    episodes = [ep for _, eps in results for ep in eps]
    differ = sum(
        not (len(rows) == len(ref := in_process(s, rows)) and all(map(same, rows, ref)))
        for s, rows in episodes
    )
    rss = [r for r, _ in samples] or [float("nan")]
    fds = [f for _, f in samples] or [0]
    return {
        "sessions": len(seeds),
        "episodes_complete": sum(rows[-1][2] for _, rows in episodes),
        "episodes_cut_short": sum(not rows[-1][2] for _, rows in episodes),
        "transcripts_differ": differ,
        "steps": len(lat),
        "p50_ms": float(np.percentile(lat, 50)) if len(lat) else float("nan"),
        "p99_ms": float(np.percentile(lat, 99)) if len(lat) else float("nan"),
        "rss_peak_mib": max(rss),
        "fds_peak": max(fds),
        "longest_held_s": held,
    }


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = Path(tempfile.mkstemp(prefix="evgrid-hostile-", suffix=".log")[1])
    settings = {"EVGRID_MAX_SESSIONS": str(args.sessions + args.big_ws + 16)}
    cmd = [sys.executable, "server.py", "--port", str(port), "--log-level", "warning"]
    figures: dict = {"config": {**vars(args), "cpus": os.cpu_count()}, "log": str(log)}
    tally: Counter = Counter()
    with log.open("w") as out:
        proc = start_logged(cmd, port, settings, out)
    try:
        pid = proc.pid
        warm = argparse.Namespace(**{**vars(args), "seconds": 0})
        asyncio.run(phase(url, warm, range(4), pid, Counter()))
        figures["before"] = {"rss_mib": rss_mib(pid), "fds": open_fds(pid)}
        figures["alone"] = run_phase(url, args, range(args.sessions), False, pid, tally)
        figures["after_alone"] = {"rss_mib": rss_mib(pid), "fds": open_fds(pid)}
        seeds = range(100, 100 + args.sessions)
        figures["hostile"] = run_phase(url, args, seeds, True, pid, tally)
        figures["end_of_hostile"] = {"rss_mib": rss_mib(pid), "fds": open_fds(pid)}
        settle = []
        for _ in range(max(1, round(args.settle_s))):
            time.sleep(1)
            settle.append(rss_mib(pid))
        figures["after"] = {"rss_mib": rss_mib(pid), "fds": open_fds(pid)}
        figures["after"]["rss_peak_while_settling_mib"] = max(settle)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
    text = log.read_text()
    figures["log"] = {"tracebacks": text.count("Traceback"),
                      "errors": text.count("ERROR"), "lines": text.count("\n")}  # fmt: skip
    figures["sessions_lost"] = tally["sessions lost"]
    figures["tally"] = dict(sorted(tally.items()))
    report(figures, args)
    bad = figures["sessions_lost"] or figures["log"]["tracebacks"]
    bad = bad or any(figures[p]["transcripts_differ"] for p in ("alone", "hostile"))
    return 1 if bad else 0


def start_logged(cmd: list[str], port: int, settings: dict, out) -> subprocess.Popen:
    """Start the server, its output in ``out``; wait until /health answers."""
    env = {**os.environ, **settings}
    proc = subprocess.Popen(
        cmd, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT
    )
    deadline = time.monotonic() + 600  # a cold numba cache: about a minute
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{cmd} exited with {proc.returncode}")
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2)
            return proc
        except OSError:
            time.sleep(0.25)
    proc.kill()
    raise RuntimeError(f"{cmd} did not become healthy")


def report(figures: dict, args) -> None:
    if args.json:
        print(json.dumps(figures, indent=2, default=str))
        return
    print(f"{args.sessions} sessions, {args.seconds:g} s a phase ({SCENARIO}); "
          f"{os.cpu_count()} CPUs, load avg {os.getloadavg()[0]:.1f}")  # fmt: skip
    print(f"{'phase':10} {'steps':>6} {'p50 ms':>8} {'p99 ms':>8} {'episodes':>8} "
          f"{'cut':>4} {'differ':>6} {'RSS peak':>9} {'fds peak':>8}")  # fmt: skip
    for name in ("alone", "hostile"):
        f = figures[name]
        print(f"{name:10} {f['steps']:6d} {f['p50_ms']:8.2f} {f['p99_ms']:8.2f} "
              f"{f['episodes_complete']:8d} {f['episodes_cut_short']:4d} "
              f"{f['transcripts_differ']:6d} "
              f"{f['rss_peak_mib']:9.0f} {f['fds_peak']:8d}")  # fmt: skip
    for name in ("before", "after_alone", "end_of_hostile", "after"):
        f = figures[name]
        print(f"{name:15} RSS {f['rss_mib']:6.0f} MiB, {f['fds']:5d} open fds")
    peak = figures["after"]["rss_peak_while_settling_mib"]
    print(f"RSS peak while settling ({args.settle_s:g} s): {peak:.0f} MiB")
    print(f"sessions lost {figures['sessions_lost']}; server log: {figures['log']}")
    held = figures["hostile"]["longest_held_s"]
    print("longest held [s]: " + ", ".join(f"{k} {v:.1f}" for k, v in held.items()))
    for k, v in figures["tally"].items():
        print(f"  {k}: {v}")


if __name__ == "__main__":
    raise SystemExit(main())
