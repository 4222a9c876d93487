"""The server's work per step, in process: what bench/server_load.py's CPU is made of.

    python3 bench/server_step.py [--sessions 64] [--steps 200] [--passes 3]

Plays the same closed loop as the load benchmark without sockets: N sessions of
``EVGridEnvironment`` take turns (so each step finds the caches as another session
left them, as in the server), and each step goes through what the /ws handler
(``evgrid_openenv.sessions``) does: read the step message, ``step``, dump the
observation, write the frame as JSON. Prints µs per step for each part, best of
``--passes`` passes.
"""

from __future__ import annotations

import argparse
import json
import time

from server_load import choose  # the load benchmark's client choice (bench/)

from evgrid_openenv import protocol
from evgrid_openenv.environment import EVGridEnvironment
from evgrid_openenv.fast import freeze_startup_objects, observation_frame

PARTS = (
    ("decode", "the step message: JSON, its shape, the action's validation"),
    ("core step", "the core parses, judges and applies the line; the world runs on"),
    ("observation", "the wire observation: core observation, text prompt, grid"),
    ("dump", "the observation as OpenEnv's frame (fast.observation_frame)"),
    ("json", "the frame written as JSON"),
)


def one_pass(sessions: int, steps: int, scenario: str) -> dict[str, float]:
    clock = time.perf_counter
    envs = [EVGridEnvironment() for _ in range(sessions)]
    last = [env.reset(seed=i, scenario=scenario) for i, env in enumerate(envs)]
    total = dict.fromkeys([name for name, _ in PARTS], 0.0)
    n = 0
    for _ in range(steps):
        for i, env in enumerate(envs):
            if last[i].done:
                last[i] = env.reset(seed=i + 1000, scenario=scenario)
            text = json.dumps({"type": "step", "data": {"text": choose(last[i])}})
            message = {"type": "websocket.receive", "text": text}
            t0 = clock()
            action = protocol.step_action(protocol.read_frame(message)[1])
            t1 = clock()
            core = env._env  # the same calls EVGridEnvironment.step makes, timed apart
            result = core.step(action.to_line())
            t2 = clock()
            obs = env._observation(result.reward, result.info)
            t3 = clock()
            data = observation_frame(obs)  # as protocol.step answers
            t4 = clock()
            protocol.encode({"type": "observation", "data": data})
            t5 = clock()
            for (name, _), a, b in zip(
                PARTS, (t0, t1, t2, t3, t4), (t1, t2, t3, t4, t5), strict=True
            ):
                total[name] += b - a
            n += 1
            last[i] = obs  # what the frame carries
    return {name: seconds / n * 1e6 for name, seconds in total.items()}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--sessions", type=int, default=64)
    p.add_argument("--steps", type=int, default=200, help="steps per session")
    p.add_argument("--passes", type=int, default=3)
    p.add_argument("--scenario", default="evening_peak")
    args = p.parse_args(argv)
    if min(args.sessions, args.steps, args.passes) < 1:
        p.error("--sessions, --steps and --passes must be >= 1")
    freeze_startup_objects()  # as the server does at start-up
    best: dict[str, float] = {}
    for _ in range(args.passes):
        for name, us in one_pass(args.sessions, args.steps, args.scenario).items():
            best[name] = min(best.get(name, float("inf")), us)
    print(
        f"{args.sessions} sessions taking turns x {args.steps} steps, "
        f"best of {args.passes} passes, µs per step"
    )
    for name, what in PARTS:
        print(f"{name:12} {best[name]:7.1f}  {what}")
    print(f"{'sum':12} {sum(best.values()):7.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
