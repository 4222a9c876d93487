"""Server load: N concurrent WebSocket sessions x M steps, against a trivial reference.

    python3 bench/server_load.py --sessions 64 --steps 200

Starts the EV Grid server (or uses ``--url``) and, in the same run, a trivial
OpenEnv environment (an echo) served the same way; drives both with the same
number of concurrent OpenEnv clients and prints p50/p95/p99 step latency, steps/s,
errors, and the EV Grid / trivial ratio. A step's latency is measured in the
client, from sending the action to holding the parsed observation. Episodes that
end are reset (resets are not counted as steps).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import numpy as np
from openenv.core import GenericEnvClient

# Loaded before any timing: importing OpenEnv takes seconds.
from evgrid_core import ChargerKind, Defer, Route, format_action
from evgrid_openenv.client import EVGridClient

ROOT = Path(__file__).resolve().parents[1]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--sessions", type=int, default=64, help="concurrent sessions")
    p.add_argument("--steps", type=int, default=200, help="steps per session")
    p.add_argument(
        "--url", default=None, help="a running EV Grid server (else start one)"
    )
    p.add_argument("--scenario", default="evening_peak")
    p.add_argument(
        "--rounds",
        type=int,
        default=3,
        help="alternate EV Grid and trivial loads this many times (other load on "
        "the machine drifts; the ratio is taken per round and over all)",
    )
    p.add_argument(
        "--trivial-inline",
        action="store_true",
        help="run the echo's steps on the event loop, as EV Grid's are (by default "
        "it has a plain step, which OpenEnv runs on a worker thread)",
    )
    p.add_argument("--json", action="store_true", help="print the figures as JSON")
    p.add_argument("--serve-trivial", type=int, default=None, help=argparse.SUPPRESS)
    return p.parse_args(argv)


# --- The trivial reference environment ------------------------------------------


def serve_trivial(port: int, max_sessions: int, inline: bool = False) -> None:
    """An echo environment with OpenEnv's own app, as the latency floor."""
    import uvicorn
    from openenv.core.env_server.http_server import create_app
    from openenv.core.env_server.interfaces import Environment
    from openenv.core.env_server.types import Action, Observation, State
    from pydantic import Field

    class EchoAction(Action):
        message: str = Field(description="Text to echo.")

    class EchoObservation(Observation):
        echoed: str = Field(default="", description="The text echoed.")

    class EchoEnvironment(Environment):
        SUPPORTS_CONCURRENT_SESSIONS = True

        def __init__(self) -> None:
            super().__init__()
            self._state = State(step_count=0)

        def reset(self, seed=None, episode_id=None, **kwargs) -> EchoObservation:
            self._state = State(step_count=0)
            return EchoObservation(echoed="ready", reward=0.0)

        def step(self, action, timeout_s=None, **kwargs) -> EchoObservation:
            self._state.step_count += 1
            return EchoObservation(echoed=action.message, reward=0.0)

        @property
        def state(self) -> State:
            return self._state

    class InlineEchoEnvironment(EchoEnvironment):
        async def step_async(self, action, timeout_s=None, **kwargs) -> EchoObservation:
            return self.step(action)

    app = create_app(
        InlineEchoEnvironment if inline else EchoEnvironment,
        EchoAction,
        EchoObservation,
        max_concurrent_envs=max_sessions,
    )
    uvicorn.run(
        app,
        host="127.0.0.1",
        port=port,
        log_level="warning",
        ws_per_message_deflate=False,  # as the EV Grid server runs
    )


# --- Servers ------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(cmd: list[str], port: int, env: dict[str, str]) -> subprocess.Popen:
    proc = subprocess.Popen(cmd, cwd=ROOT, env={**os.environ, **env})
    deadline = time.monotonic() + 120
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


# --- Load -----------------------------------------------------------------------------


async def evgrid_session(url: str, seed: int, steps: int, scenario: str) -> tuple:
    lat, errors = [], 0
    async with EVGridClient(url, message_timeout_s=120) as client:
        res = await client.reset(seed=seed, scenario=scenario)
        start = time.perf_counter()
        for _ in range(steps):
            line = choose(res.observation)
            t0 = time.perf_counter()
            try:
                res = await client.step(line)
            except Exception:  # counted, and the session goes on
                errors += 1
                res = await client.reset(seed=seed, scenario=scenario)
                continue
            lat.append(time.perf_counter() - t0)
            if res.done:
                res = await client.reset(seed=seed + 1000, scenario=scenario)
    return lat, errors, start, time.perf_counter()


def choose(obs) -> str:
    """A cheap client-side choice: the first routable (station, kind), else DEFER."""
    req = obs.grid.request
    for s, kinds in enumerate(obs.grid.route_mask):
        for k, ok in enumerate(kinds):
            if ok:
                return format_action(Route(req.id, s + 1, ChargerKind(k)))
    return format_action(Defer(req.id, (obs.grid.defer_options or [5])[0]))


async def trivial_session(url: str, seed: int, steps: int, scenario: str) -> tuple:
    lat, errors = [], 0
    async with GenericEnvClient(url, message_timeout_s=120) as client:
        await client.reset(seed=seed)
        start = time.perf_counter()
        for i in range(steps):
            t0 = time.perf_counter()
            try:
                await client.step({"message": f"ROUTE E{i} S1 FAST"})
            except Exception:
                errors += 1
                continue
            lat.append(time.perf_counter() - t0)
    return lat, errors, start, time.perf_counter()


def cpu_seconds(pid: int | None) -> float:
    """User + system CPU seconds of a process (Linux /proc); nan when unknown."""
    if pid is None:
        return float("nan")
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_load(
    session, url: str, args: argparse.Namespace, server_pid: int | None = None
) -> dict:
    server_cpu0, client_cpu0 = cpu_seconds(server_pid), time.process_time()

    async def all_sessions():
        return await asyncio.gather(
            *(session(url, s, args.steps, args.scenario) for s in range(args.sessions)),
            return_exceptions=True,
        )

    results = asyncio.run(all_sessions())
    done = [r for r in results if not isinstance(r, BaseException)]
    failed = [repr(r) for r in results if isinstance(r, BaseException)]
    return {
        "latencies_s": [x for r in done for x in r[0]],
        "errors": sum(r[1] for r in done) + len(failed) * args.steps,
        "failed_sessions": failed,
        # Throughput over the stepping phase: from the first session's first step
        # to the last session's last step (connects and first resets excluded).
        "wall_s": max(r[3] for r in done) - min(r[2] for r in done)
        if done
        else float("nan"),
        # CPU over the whole load (connects and resets included), both ends.
        "server_cpu_s": cpu_seconds(server_pid) - server_cpu0,
        "client_cpu_s": time.process_time() - client_cpu0,
    }


def summarise(runs: list[dict]) -> dict:
    lat = [x for r in runs for x in r["latencies_s"]]
    ms = np.array(lat) * 1000 if lat else np.array([np.nan])
    failed = [f for r in runs for f in r["failed_sessions"]]
    return {
        "steps": len(lat),
        "errors": sum(r["errors"] for r in runs),
        "failed_sessions": len(failed),
        "p50_ms": float(np.percentile(ms, 50)),
        "p95_ms": float(np.percentile(ms, 95)),
        "p99_ms": float(np.percentile(ms, 99)),
        "steps_per_s": len(lat) / sum(r["wall_s"] for r in runs),
        "server_cpu_ms_per_step": 1000 * sum(r["server_cpu_s"] for r in runs) / len(lat)
        if lat
        else float("nan"),
        "client_cpu_ms_per_step": 1000 * sum(r["client_cpu_s"] for r in runs) / len(lat)
        if lat
        else float("nan"),
        "first_failure": failed[0] if failed else None,
    }


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.serve_trivial is not None:
        serve_trivial(args.serve_trivial, max(args.sessions, 1), args.trivial_inline)
        return 0
    env = {"EVGRID_MAX_SESSIONS": str(args.sessions + 8), "ENABLE_WEB_INTERFACE": "0"}
    procs = []
    try:
        url, evgrid_pid = args.url, None
        if url is None:
            port = free_port()
            procs.append(
                start(
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
                        "--ws-per-message-deflate",
                        "false",
                    ],
                    port,
                    env,
                )  # fmt: skip
            )
            url, evgrid_pid = f"http://127.0.0.1:{port}", procs[-1].pid
        tport = free_port()
        procs.append(
            start(
                [
                    sys.executable,
                    __file__,
                    "--serve-trivial",
                    str(tport),
                    "--sessions",
                    str(args.sessions + 8),
                    *(["--trivial-inline"] if args.trivial_inline else []),
                ],
                tport,
                env,
            )  # fmt: skip
        )
        trivial_url = f"http://127.0.0.1:{tport}"
        runs: dict[str, list[dict]] = {"evgrid": [], "trivial": []}
        round_ratios = []
        for r in range(args.rounds):  # alternate the order against drifting load
            order = ("evgrid", "trivial") if r % 2 == 0 else ("trivial", "evgrid")
            for name in order:
                if name == "evgrid":
                    runs[name].append(run_load(evgrid_session, url, args, evgrid_pid))
                else:
                    runs[name].append(
                        run_load(trivial_session, trivial_url, args, procs[-1].pid)
                    )
            p50 = {n: summarise([runs[n][-1]])["p50_ms"] for n in runs}
            round_ratios.append(p50["evgrid"] / p50["trivial"])
        figures = {name: summarise(rs) for name, rs in runs.items()}
    finally:
        for p in procs:
            p.terminate()
            p.wait(timeout=15)
    ratio = figures["evgrid"]["p50_ms"] / figures["trivial"]["p50_ms"]
    figures["p50_ratio"] = ratio
    figures["config"] = {
        "sessions": args.sessions,
        "steps": args.steps,
        "cpus": os.cpu_count(),
    }
    if args.json:
        print(json.dumps(figures, indent=2))
        return 0
    print(
        f"{args.sessions} sessions x {args.steps} steps x {args.rounds} rounds, "
        f"{os.cpu_count()} CPUs (load avg {os.getloadavg()[0]:.1f}), loopback; "
        f"echo steps on {'the event loop' if args.trivial_inline else 'worker threads'}"
    )
    print(f"{'server':8} {'steps':>6} {'errors':>6} {'p50 ms':>8} {'p95 ms':>8} "
          f"{'p99 ms':>8} {'steps/s':>8} {'srv CPU':>8} {'cli CPU':>8}")  # fmt: skip
    for name in ("evgrid", "trivial"):
        f = figures[name]
        print(
            f"{name:8} {f['steps']:6d} {f['errors']:6d} {f['p50_ms']:8.2f} "
            f"{f['p95_ms']:8.2f} {f['p99_ms']:8.2f} {f['steps_per_s']:8.0f} "
            f"{f['server_cpu_ms_per_step']:8.3f} {f['client_cpu_ms_per_step']:8.3f}"
        )
        if f["first_failure"]:
            print(f"  first failed session: {f['first_failure']}")
    rounds = " ".join(f"{x:.2f}" for x in round_ratios)
    print(f"p50 ratio evgrid/trivial: {ratio:.2f} (per round: {rounds})")
    print(
        "CPU columns: ms of CPU per step, server and client process (resets included)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
