"""The web page's memory: the server's RSS as unknown clients send requests under
new session ids they never read back, and as Oracle tabs start.

    python3 bench/web_memory.py [--ids 3000] [--oracle-tabs 3]

Starts ``uvicorn server:app`` and reads its resident set (/proc/<pid>/status,
VmRSS) before and after: ``--ids`` requests (``queue/join`` of the Step button
under a fresh session id each, never reading ``queue/data``, as the issue's
client did), then the same again (Gradio keeps state for at most
``evgrid_web.STATE_SESSIONS`` ids, so a second batch should cost less than the
first if that state was most of it), then ``--oracle-tabs`` tabs started with the
Oracle (skipped when the plugin does not load), RSS after each.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]
from server_load import free_port  # noqa: E402
from web_under_load import Tab  # noqa: E402

API = "/web/gradio_api"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--ids", type=int, default=3000, help="session ids per batch")
    p.add_argument("--oracle-tabs", type=int, default=3)
    p.add_argument("--json", action="store_true")
    return p.parse_args(argv)


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def join(url: str, fn: int, data: list, session: str) -> None:
    body = json.dumps({"data": data, "fn_index": fn, "session_hash": session})
    req = urllib.request.Request(
        url + API + "/queue/join",
        data=body.encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=60) as r:
        r.read()


def settle(pid: int, seconds: float = 5.0) -> float:
    time.sleep(seconds)  # the queued events run
    return rss_mib(pid)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    port = free_port()
    env = {**os.environ, "EVGRID_WEB_MAX_TABS": str(max(8, args.oracle_tabs + 1))}
    env.setdefault("SDL_VIDEODRIVER", "dummy")
    proc = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", "server:app", "--host", "127.0.0.1",
         "--port", str(port), "--log-level", "warning"],
        cwd=ROOT, env=env,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    out: dict = {"date": time.strftime("%Y-%m-%d %H:%M"), "ids": args.ids}
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
        step = tab.fns["evgrid-step"]
        out["rss_start_mib"] = round(settle(proc.pid, 2.0), 1)
        for batch in (1, 2):
            t0 = time.perf_counter()
            for i in range(args.ids):
                join(url, step, ["", "2.0"], f"batch{batch}id{i}")
            rss = settle(proc.pid)
            out[f"rss_after_batch{batch}_mib"] = round(rss, 1)
            out[f"batch{batch}_s"] = round(time.perf_counter() - t0, 1)
        b1 = out["rss_after_batch1_mib"] - out["rss_start_mib"]
        b2 = out["rss_after_batch2_mib"] - out["rss_after_batch1_mib"]
        out["kib_per_id_batch1"] = round(b1 * 1024 / args.ids, 1)
        out["kib_per_id_batch2"] = round(b2 * 1024 / args.ids, 1)
        policies = tab.call("evgrid-start", ["", "quiet_night", "oracle", 0])
        if "started oracle" not in str(policies.get("evgrid-message")):
            out["oracle"] = f"skipped: {policies.get('evgrid-message')}"
        else:
            rss, started = [round(settle(proc.pid, 2.0), 1)], 1
            for k in range(1, args.oracle_tabs):
                other = Tab(url, f"oracletab{k}")
                msg = other.call("evgrid-start", ["", "quiet_night", "oracle", k])
                started += "started oracle" in str(msg.get("evgrid-message"))
                rss.append(round(settle(proc.pid, 2.0), 1))
            out["rss_with_oracle_tabs_mib"] = rss
            out["oracle_tabs_started"] = started
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    print(json.dumps(out, indent=None if args.json else 1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
