"""The web page's speed: frames per second each browser tab receives while playing,
and the server's CPU per frame, with 1 and 8 tabs; optionally the OpenEnv load
benchmark against the same server with and without a tab playing.

    python3 bench/web_fps.py [--tabs 1,8] [--seconds 15] [--openenv-load]

Starts ``uvicorn server:app`` (the OpenEnv server with the page mounted) and drives
real headless Chromium tabs (Playwright on Debian's ``chromium``), each its own
browser context (own session): start ``--policy`` on ``--scenario``, Play at
``--speed`` ticks/s, then count, in the page, the frames that reach the ``<img>``
over ``--seconds``. Server CPU is the uvicorn process's user + system time over the
same window (/proc), divided by the frames all tabs received.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run as a script from anywhere: the checkout's packages
CHROMIUM = os.environ.get("EVGRID_CHROMIUM", "/usr/bin/chromium")
COUNT_FRAMES = """() => {
  window.__frames = 0;
  const box = document.querySelector('#evgrid-frame-box');
  let last = (box.querySelector('img') || {}).src;
  new MutationObserver(() => {
    const img = box.querySelector('img');
    if (img && img.src !== last) { last = img.src; window.__frames += 1; }
  }).observe(box, {subtree: true, childList: true, attributes: true});
}"""


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--tabs", default="1,8", help="comma-separated tab counts")
    p.add_argument("--seconds", type=float, default=15.0, help="[s] measured window")
    p.add_argument("--scenario", default="evening_peak")
    p.add_argument("--policy", default="greedy_eta")
    p.add_argument("--speed", default="2.0", help="ticks per second while playing")
    p.add_argument(
        "--openenv-load",
        action="store_true",
        help="also run bench/server_load.py against this server, with no tab "
        "and with one tab playing",
    )
    p.add_argument("--load-args", default="--sessions 64 --steps 200 --rounds 1")
    p.add_argument(
        "--in-process",
        type=int,
        default=0,
        metavar="N",
        help="only time N frames of the page's own work in this process (advance, "
        "draw, JPEG), no server and no browser",
    )
    p.add_argument("--json", action="store_true")
    return p.parse_args(argv)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a process so far [s]."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def start_server(max_tabs: int) -> tuple[subprocess.Popen, str]:
    port = free_port()
    env = {
        **os.environ,
        "EVGRID_WEB_MAX_TABS": str(max_tabs),
        "EVGRID_MAX_SESSIONS": "96",
    }
    env.setdefault("SDL_VIDEODRIVER", "dummy")
    proc = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", "server:app", "--host", "127.0.0.1",
         "--port", str(port), "--log-level", "warning"],
        cwd=ROOT, env=env,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url + "/health", timeout=2):
                return proc, url
        except OSError:
            time.sleep(0.3)
    proc.kill()
    raise RuntimeError("the server did not start")


def open_tab(browser, url: str, args: argparse.Namespace, seed: int):  # noqa: ANN001, ANN201
    ctx = browser.new_context(viewport={"width": 1400, "height": 1300})
    page = ctx.new_page()
    page.goto(url + "/web/")
    page.wait_for_selector("#evgrid-start", timeout=120_000)
    for box, value in (
        ("evgrid-scenario", args.scenario),
        ("evgrid-policy", args.policy),
    ):
        page.click(f"#{box} input")
        page.click(f'[role=option][aria-label="{value}"]')
    page.fill("#evgrid-seed input", str(seed))
    page.click("#evgrid-start")
    page.wait_for_selector("#evgrid-frame img", timeout=120_000)
    page.click(f'#evgrid-speed input[value="{args.speed}"]')
    return ctx, page


def measure(browser, url: str, pid: int, n_tabs: int, args) -> dict:  # noqa: ANN001
    tabs = [open_tab(browser, url, args, seed) for seed in range(n_tabs)]
    for _, page in tabs:
        page.evaluate(COUNT_FRAMES)
        page.click("#evgrid-play")
    time.sleep(2.0)  # warm-up: every tab playing
    for _, page in tabs:
        page.evaluate("() => { window.__frames = 0; }")
    cpu0, t0 = cpu_seconds(pid), time.perf_counter()
    time.sleep(args.seconds)
    frames = [page.evaluate("() => window.__frames") for _, page in tabs]
    cpu1, t1 = cpu_seconds(pid), time.perf_counter()
    over = [page.inner_text("#evgrid-mode") for _, page in tabs]
    for ctx, _ in tabs:
        ctx.close()
    wall = t1 - t0
    total = sum(frames)
    return {
        "tabs": n_tabs,
        "seconds": round(wall, 2),
        "frames_per_s_per_tab": round(total / wall / n_tabs, 2),
        "frames_per_s_min_tab": round(min(frames) / wall, 2),
        "frames_per_s_all_tabs": round(total / wall, 2),
        "server_cpu_ms_per_frame": round((cpu1 - cpu0) * 1000 / max(total, 1), 2),
        "server_cores": round((cpu1 - cpu0) / wall, 2),
        "episodes_over": sum(m.strip() == "over" for m in over),
    }


def openenv_load(url: str, args: argparse.Namespace) -> dict:
    cmd = [sys.executable, "bench/server_load.py", "--url", url, "--json",
           *args.load_args.split()]  # fmt: skip
    out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=True)
    figures = json.loads(out.stdout[out.stdout.index("{") :])
    keep = ("p50_ms", "p95_ms", "p99_ms", "steps_per_s", "errors")
    return {
        "evgrid": {k: round(figures["evgrid"][k], 2) for k in keep},
        "trivial_p50_ms": round(figures["trivial"]["p50_ms"], 2),
        "p50_ratio": round(figures["p50_ratio"], 2),
    }


def in_process(args: argparse.Namespace) -> dict:
    """The server's own work per frame: one tab's episode played frame by frame
    (display clock, decisions, the city view drawn offscreen, JPEG), no Gradio."""
    os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
    from evgrid_web.episode import PageEpisode

    ep = PageEpisode(args.scenario, args.policy, 0)
    ep.set_speed(args.speed)
    ep.play()
    now, frames, size = 0.0, 0, 0
    t0 = time.perf_counter()
    while frames < args.in_process and not ep.done:
        ep.advance(now)
        size += len(ep.frame_jpeg_b64())
        now += 0.1  # [s] the page's timer
        frames += 1
    wall = time.perf_counter() - t0
    return {
        "frames": frames,
        "ms_per_frame": round(wall * 1000 / frames, 2),
        "kb_per_frame": round(size / frames / 1024, 1),
    }


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.in_process:
        r = in_process(args)
        print(
            json.dumps(r)
            if args.json
            else (
                f"{r['frames']} frames in process: {r['ms_per_frame']:.2f} ms a frame "
                f"(advance + draw + JPEG), {r['kb_per_frame']:.1f} KiB of base64 a frame"
            )
        )
        return 0
    from playwright.sync_api import sync_playwright

    counts = [int(t) for t in args.tabs.split(",")]
    proc, url = start_server(max(counts))
    results: dict = {"date": time.strftime("%Y-%m-%d"), "runs": []}
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(
                executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"]
            )
            for n in counts:
                r = measure(browser, url, proc.pid, n, args)
                results["runs"].append(r)
                if not args.json:
                    print(
                        f"{n} tab(s): {r['frames_per_s_per_tab']:.2f} frames/s a tab "
                        f"(slowest {r['frames_per_s_min_tab']:.2f}), "
                        f"{r['frames_per_s_all_tabs']:.2f} in all; server "
                        f"{r['server_cpu_ms_per_frame']:.2f} ms CPU a frame "
                        f"({r['server_cores']:.2f} cores)",
                        flush=True,
                    )
            if args.openenv_load:
                results["openenv_idle_page"] = openenv_load(url, args)
                tabs = [open_tab(browser, url, args, 0)]
                tabs[0][1].click('#evgrid-speed input[value="0.5"]')  # plays ~100 s
                tabs[0][1].click("#evgrid-play")
                results["openenv_one_tab_playing"] = openenv_load(url, args)
                for ctx, _ in tabs:
                    ctx.close()
                if not args.json:
                    for key in ("openenv_idle_page", "openenv_one_tab_playing"):
                        print(key, json.dumps(results[key]))
            browser.close()
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    if args.json:
        print(json.dumps(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
