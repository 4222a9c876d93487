"""``EVGridGymEnv`` (one env) stepped with random valid actions, resets included.

    .venv/bin/python bench/gym_env.py [--scenario evening_peak] [--seconds 3]

Prints simulated ticks/s and decisions/s. The env's vector and mask come from the
core's compiled ``EVGridEnv.features``; ``evgrid bench`` times the core and the
batched vector env (the CLI never imports the Gymnasium front end).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from evgrid_gym import EVGridGymEnv


def measure(scenario: str, seconds: float) -> dict[str, float]:
    """Step for ``seconds`` of step time: ticks and decisions per second."""
    env = EVGridGymEnv(scenario)
    rng = np.random.default_rng(0)
    _, info = env.reset(seed=0)
    ticks = steps = episodes = 0
    clock = 0.0
    while clock < seconds:
        mask = info["action_mask"]  # none valid (an EV no action can serve): index 0
        a = int((rng.random(mask.shape) * mask).argmax())
        t0 = time.perf_counter()
        _, _, done, _, info = env.step(a)
        if done:
            ticks += env.core.tick
            episodes += 1
            _, info = env.reset(seed=episodes)
        clock += time.perf_counter() - t0
        steps += 1
    ticks += env.core.tick
    return {"ticks_per_s": ticks / clock, "decisions_per_s": steps / clock}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--scenario", default="evening_peak")
    p.add_argument("--seconds", type=float, default=3.0)
    args = p.parse_args()
    r = measure(args.scenario, args.seconds)
    print(f"EVGridGymEnv, {args.scenario}, random valid actions (resets included): "
          f"{r['ticks_per_s']:,.0f} ticks/s, {r['decisions_per_s']:,.0f} decisions/s")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
