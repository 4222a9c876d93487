"""``evgrid bench``: core throughput on full default-scenario episodes.

Reports simulated ticks/s and decisions/s three ways: env.step alone (policy and
observation excluded), step + building the observation (policy excluded), and
everything with the greedy_eta policy; plus reset time and peak memory. Then the
batched vector env (``evgrid_core.batch.Batch``) at each ``--sizes`` N: ticks/s in
all and per env, its observation vectors, masks and auto-resets included, random
valid actions drawn from the masks outside the clock; and its memory per env.
"""

from __future__ import annotations

import argparse
import json
import resource
import time
import tracemalloc

HELP = "benchmark the core: ticks/s, decisions/s, reset time, peak memory"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--episodes", type=int, default=30, help="episodes per measurement")
    p.add_argument("--scenario", default="evening_peak")
    p.add_argument(
        "--policy", default="greedy_eta", help="policy that produces the actions"
    )
    p.add_argument(
        "--compile",
        action="store_true",
        help="also time the kernels' compilation: cold (an empty cache) and cached",
    )
    p.add_argument(
        "--sizes",
        default="1,16,64,256",
        help="batch sizes N for the vector env, comma-separated ('' skips it)",
    )
    p.add_argument(
        "--threads",
        default="1,2",
        help="threads stepping the batch, comma-separated (each size runs each)",
    )
    p.add_argument(
        "--seconds", type=float, default=4.0, help="timed seconds per vector-env size"
    )
    p.add_argument("--json", action="store_true")


FIRST_STEP = (
    "import time; t0 = time.perf_counter(); from evgrid_core import EVGridEnv;"
    "e = EVGridEnv(); e.reset(seed=0); e.step(e.observation().request and "
    "f'DEFER E{e.observation().request.id} 5' or ''); print(time.perf_counter() - t0)"
)


def compile_seconds() -> dict[str, float]:
    """[s] import + first reset and step in a new process: with an empty numba cache
    (every kernel compiled) and again with the cache it left."""
    import os
    import subprocess
    import sys
    import tempfile

    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "NUMBA_CACHE_DIR": cache}
        run = [sys.executable, "-c", FIRST_STEP]
        cold = float(subprocess.run(run, env=env, capture_output=True, text=True,
                                    check=True).stdout)  # fmt: skip
        cached = float(subprocess.run(run, env=env, capture_output=True, text=True,
                                      check=True).stdout)  # fmt: skip
    return {"first_step_cold_s": cold, "first_step_cached_s": cached}


def measure(episodes: int, scenario: str, policy_name: str) -> dict[str, float]:
    from evgrid_core import EVGridEnv
    from evgrid_core.policies import make_policy

    policy = make_policy(policy_name)
    env = EVGridEnv()
    # Record each episode's actions once, so replays time the core alone.
    plans: list[list[object]] = []
    for seed in range(episodes):
        obs = env.reset(seed=seed, scenario=scenario)
        policy.reset(seed)
        actions = []
        while not env.done:
            a = policy.act(obs)
            actions.append(a)
            env.step(a)
            obs = env.observation()
        plans.append(actions)
    n_ticks = env.scenario.n_ticks  # type: ignore[union-attr]
    steps = sum(len(p) for p in plans)

    def timed(with_obs: bool, with_policy: bool) -> float:
        t0 = time.perf_counter()
        for seed, plan in enumerate(plans):
            obs = env.reset(seed=seed, scenario=scenario)
            if with_policy:
                policy.reset(seed)
                while not env.done:
                    env.step(policy.act(obs))
                    obs = env.observation()
            else:
                for a in plan:
                    env.step(a)  # type: ignore[arg-type]
                    if with_obs:
                        env.observation()
        return time.perf_counter() - t0

    timed(False, False)  # warm-up
    core = min(timed(False, False) for _ in range(3))
    with_obs = min(timed(True, False) for _ in range(2))
    full = timed(True, True)
    # Reset alone.
    t0 = time.perf_counter()
    n_resets = 200
    for seed in range(n_resets):
        env.reset(seed=seed, scenario=scenario)
    reset_ms = (time.perf_counter() - t0) / n_resets * 1e3
    # Peak Python memory of one episode, and the process's peak RSS.
    tracemalloc.start()
    env2 = EVGridEnv()
    env2.reset(seed=0, scenario=scenario)
    for a in plans[0]:
        env2.step(a)  # type: ignore[arg-type]
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    ticks = episodes * n_ticks
    from evgrid_core.jit import COMPILED

    return {
        "kernels": "compiled (numba)" if COMPILED else "plain Python",
        "scenario": scenario,
        "policy": policy_name,
        "episodes": episodes,
        "ticks_per_episode": n_ticks,
        "decisions_per_episode": steps / episodes,
        "ticks_per_s_core": ticks / core,
        "decisions_per_s_core": steps / core,
        "ticks_per_s_with_observation": ticks / with_obs,
        "decisions_per_s_with_observation": steps / with_obs,
        "ticks_per_s_with_policy": ticks / full,
        "decisions_per_s_with_policy": steps / full,
        "episode_ms_core": core / episodes * 1e3,
        "reset_ms": reset_ms,
        "episode_peak_python_mb": peak / 2**20,
        "process_peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        / 1024,
    }


def measure_vector(scenario: str, n: int, threads: int, seconds: float) -> dict:
    """The batch of ``n`` envs stepped for ``seconds`` (after a warm-up): simulated
    ticks and decisions per second, in all and per env, and memory per env."""
    import numpy as np

    from evgrid_core.batch import Batch

    batch = Batch(n, scenario, seed=0, threads=threads)
    rng = np.random.default_rng(0)

    def pick() -> np.ndarray:  # a random valid action per env (outside the clock)
        return (rng.random(batch.mask.shape) * batch.mask).argmax(axis=1)

    warm = time.perf_counter() + min(1.0, seconds / 2)
    while time.perf_counter() < warm or batch.episode.sum() < 1:
        batch.step(pick())
    ticks0, steps, clock = int(batch.ticks.sum()), 0, 0.0
    while clock < seconds:
        actions = pick()
        t0 = time.perf_counter()
        batch.step(actions)
        clock += time.perf_counter() - t0
        steps += n
    ticks = int(batch.ticks.sum()) - ticks0
    per_env = (batch.state_bytes() + batch.obs.nbytes + batch.mask.nbytes) / n
    batch.close()
    return {
        "n": n,
        "threads": threads,
        "ticks_per_s": ticks / clock,
        "ticks_per_s_per_env": ticks / clock / n,
        "decisions_per_s": steps / clock,
        "bytes_per_env": per_env,
    }


def run(args: argparse.Namespace) -> int:
    from evgrid_core import get_scenario

    get_scenario(args.scenario)
    if args.episodes < 1:
        raise ValueError("--episodes must be at least 1")
    sizes = [int(x) for x in args.sizes.split(",") if x.strip()]
    threads = [int(x) for x in args.threads.split(",") if x.strip()]
    if any(x < 1 for x in sizes + threads) or args.seconds <= 0:
        raise ValueError("--sizes, --threads and --seconds must be positive")
    r = measure(args.episodes, args.scenario, args.policy)
    r["vector"] = [measure_vector(args.scenario, n, k, args.seconds)
                   for n in sizes for k in threads]  # fmt: skip
    if args.compile:
        r.update(compile_seconds())
    if args.json:
        print(json.dumps(r, indent=2))
        return 0
    print(f"core benchmark: {r['episodes']} x {r['scenario']} ({r['ticks_per_episode']} ticks, "
          f"{r['decisions_per_episode']:.0f} decisions per episode; actions from {r['policy']}; "
          f"kernels {r['kernels']})")  # fmt: skip
    print(f"  step only (policy, observation excluded): {r['ticks_per_s_core']:>10,.0f} ticks/s "
          f"{r['decisions_per_s_core']:>10,.0f} decisions/s  ({r['episode_ms_core']:.2f} ms/episode)")  # fmt: skip
    print(f"  step + observation (policy excluded):     {r['ticks_per_s_with_observation']:>10,.0f} ticks/s "
          f"{r['decisions_per_s_with_observation']:>10,.0f} decisions/s")  # fmt: skip
    print(f"  step + observation + {r['policy']:<20} {r['ticks_per_s_with_policy']:>10,.0f} ticks/s "
          f"{r['decisions_per_s_with_policy']:>10,.0f} decisions/s")  # fmt: skip
    print(f"  reset: {r['reset_ms']:.3f} ms   peak memory: {r['episode_peak_python_mb']:.2f} MB "
          f"(one episode, Python heap), {r['process_peak_rss_mb']:.0f} MB process RSS")  # fmt: skip
    if r["vector"]:
        print("  vector env (Batch: one compiled call per step, observations, masks and "
              "auto-resets included, random valid actions):")  # fmt: skip
    for v in r["vector"]:
        print(f"    N={v['n']:<5} threads={v['threads']}: {v['ticks_per_s']:>10,.0f} ticks/s "
              f"in all, {v['ticks_per_s_per_env']:>9,.0f} per env, "
              f"{v['decisions_per_s']:>10,.0f} decisions/s, "
              f"{v['bytes_per_env'] / 1024:,.0f} KiB per env")  # fmt: skip
    if args.compile:
        print(f"  import + first step in a new process: {r['first_step_cold_s']:.1f} s with "
              f"the kernels compiled (empty cache), {r['first_step_cached_s']:.2f} s cached")  # fmt: skip
    return 0
