"""How fast ``distilled`` decides: `python3 bench/distilled_speed.py [--episodes N]`.

Plays whole episodes (env included) with ``distilled`` and with ``greedy_eta`` on
the same seeds and prints decisions per second, the ratio, and the cost of the
two parts of a distilled decision (listing the candidates, scoring them).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from evgrid_core import EVGridEnv
from evgrid_core.candidates import candidates
from evgrid_core.distilled import load_model
from evgrid_core.policies import make_policy
from evgrid_core.rollout import play_episode


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--episodes", type=int, default=3)
    p.add_argument("--scenario", default="evening_peak")
    args = p.parse_args()
    seeds = range(900_000, 900_000 + args.episodes)
    rate = {}
    for name in ("greedy_eta", "distilled"):
        policy, steps, t = make_policy(name), 0, time.perf_counter()
        for s in seeds:
            steps += play_episode(policy, args.scenario, s).steps
        rate[name] = steps / (time.perf_counter() - t)
        print(f"{name:>11}: {rate[name]:7.0f} decisions/s ({steps} decisions)")
    print(f"distilled / greedy_eta: {rate['distilled'] / rate['greedy_eta']:.2f}")
    model = load_model()
    env = EVGridEnv()
    obs = env.reset(seed=seeds[0], scenario=args.scenario)
    lists, scores, sizes = [], [], []
    policy = make_policy("greedy_eta")
    while not env.done:
        t0 = time.perf_counter()
        c = candidates(obs)
        t1 = time.perf_counter()
        model.predict(c.features)
        t2 = time.perf_counter()
        lists.append(t1 - t0)
        scores.append(t2 - t1)
        sizes.append(len(c))
        env.step(policy.act(obs))
        obs = env.observation()
    print(
        f"per decision: candidates {np.median(lists) * 1e6:.0f} us, "
        f"scoring {np.median(scores) * 1e6:.0f} us (median; "
        f"{np.mean(sizes):.0f} candidates x {len(model.roots)} trees, depth {model.depth})"
    )


if __name__ == "__main__":
    main()
