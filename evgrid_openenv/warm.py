"""A few steps of the core before the server serves: its numba kernels compiled.

With an empty numba cache the core's kernels compile on first use, about a minute
of CPU; in the server that first use would be the first session's reset, holding
the event loop (every session, /health, the WebSocket pings) that long. So
``warm_core`` (a start-up hook of ``app``) plays a few steps in a child process
(``python -m evgrid_openenv.warm``), which compiles them into numba's on-disk cache,
then plays them here, loading them from it: compiling in the server's own process
would keep some 270 MiB of the compiler's memory for good (603 MiB against 336 MiB
once healthy, the page left out). With the cache filled the child takes a second
or two. Imports only the core.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from evgrid_core import EVGridEnv
from evgrid_core.policies import make_policy


def play_a_few_steps() -> None:
    env, policy = EVGridEnv(), make_policy("greedy_eta")
    obs = env.reset(seed=0)
    policy.reset(0)
    for _ in range(3):
        env.step(policy.act(obs))
        obs = env.observation()


def warm_core() -> None:
    """Compile the kernels in a child process, then load them here (see above)."""
    checkout = str(Path(__file__).resolve().parents[1])  # where this package lives
    path = os.pathsep.join(p for p in (checkout, os.environ.get("PYTHONPATH")) if p)
    subprocess.run(
        [sys.executable, "-m", "evgrid_openenv.warm"],
        env={**os.environ, "PYTHONPATH": path},
        timeout=900,
        check=False,  # a child that fails: the kernels compile here instead
    )
    play_a_few_steps()


if __name__ == "__main__":
    play_a_few_steps()
