"""Side by side with EV2Gym: one env, step alone, measured alternately in one sitting.

    .venv/bin/python bench/ev2gym_side_by_side.py --ev2gym-python ~/ev2gym-venv/bin/python

EV2Gym (25 charging stations, 5-minute steps, random actions) runs in its own venv
in a subprocess; our core (``EVGridEnv``, public API only) runs in this process.
Each round measures both, in alternating order, and prints EV2Gym's steps/s, our
simulated 5-minute ticks/s and decisions/s, and the ratio ticks/s / steps/s (one
EV2Gym step is one 5-minute tick). Only ``step`` is timed on both sides: reset,
action sampling and policy calls are outside the clock. ``--batch N`` times N envs
of each stepped in lockstep from one process (a baseline for batched envs).

EV2Gym is never installed into the project's venv (see ``SETUP``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SETUP = """\
  python3 -m venv {venv}
  {venv}/bin/pip install ev2gym pandapower numba multicopula psutil
(ev2gym 2.0.0 imports pandapower, numba, multicopula and psutil without declaring them.)"""

# EV2Gym's shipped example_config_files/V2GProfitMax.yaml (the only example with 25
# charging stations), with timescale 15 -> 5 min and simulation_length 112 -> 336
# steps (the same 28 h at 5 minutes). {ev_specs} is the installed package's file.
CONFIG = """\
timescale: 5
simulation_length: 336
year: 2022
month: 1
day: 17
random_day: True
random_hour: False
hour: 5
minute: 0
simulation_days: weekdays
scenario: workplace
spawn_multiplier: 5
discharge_price_factor: 1
v2g_enabled: True
number_of_charging_stations: 25
number_of_transformers: 1
number_of_ports_per_cs: 1
charging_network_topology: None
simulate_grid: False
network_info:
  vm_pu: 1.0
  s_base: 1000
  load_multiplier: 1
  pv_scale: 80
  bus_info_file: './ev2gym/data/network_data/node_34/Nodes_34.csv'
  branch_info_file: './ev2gym/data/network_data/node_34/Lines_34.csv'
pf_solver: 'Laurent'
power_setpoint_enabled: False
power_setpoint_flexiblity: 80
tr_seed: -1
inflexible_loads:
  include: False
  inflexible_loads_capacity_multiplier_mean: 1
  forecast_mean: 30
  forecast_std: 5
solar_power:
  include: False
  solar_power_capacity_multiplier_mean: 1
  forecast_mean: 20
  forecast_std: 5
demand_response:
  include: False
  events_per_day: 1
  event_capacity_percentage_mean: 35
  event_capacity_percentage_std: 5
  event_length_minutes_min: 60
  event_length_minutes_max: 60
  event_start_hour_mean: 12
  event_start_hour_std: 2
  notification_of_event_minutes: 60
heterogeneous_ev_specs: True
ev_specs_file: {ev_specs}
transformer:
  max_power: 100
charging_station:
  min_charge_current: 0
  max_charge_current: 32
  min_discharge_current: 0
  max_discharge_current: -32
  voltage: 400
  phases: 3
ev:
  battery_capacity: 50
  max_ac_charge_power: 11
  min_ac_charge_power: 0
  max_dc_charge_power: 50
  max_discharge_power: -11
  min_discharge_power: 0
  ev_phases: 3
  charge_efficiency: 1
  discharge_efficiency: 1
  transition_soc: 1
  min_battery_capacity: 5
  min_time_of_stay: 180
  min_emergency_battery_capacity: 25
  desired_capacity: 1
  transition_soc_multiplier: 5
"""

PROBE = """\
import os, sys
from importlib.metadata import version
import ev2gym.models.ev2gym_env
import ev2gym
print(version("ev2gym"), sys.version.split()[0], os.path.dirname(ev2gym.__file__))
"""

# Runs in EV2Gym's venv: builds the envs once, then answers "run EPISODES" lines
# with one JSON line (marked, since EV2Gym may print) of steps and step-only seconds.
WORKER = """\
import copy, json, sys, time
from ev2gym.models.ev2gym_env import EV2Gym

config, seed, batch = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
first = EV2Gym(config_file=config, seed=seed)
envs = [first] + [copy.deepcopy(first) for _ in range(batch - 1)]


def episode(k):
    # One episode per env, seeds seed + k * batch + i; actions drawn before the clock.
    plans = []
    for i, env in enumerate(envs):
        s = seed + k * batch + i
        env.reset(seed=s)
        env.done = False  # EV2Gym's reset leaves done set after an episode
        env.action_space.seed(s)
        plans.append([env.action_space.sample() for _ in range(env.simulation_length)])
    n, t0 = 0, time.perf_counter()
    for t in range(envs[0].simulation_length):
        for env, plan in zip(envs, plans):
            env.step(plan[t])
            n += 1
    return n, time.perf_counter() - t0


episode(0)  # warm-up
print("@@ready", json.dumps({"ports": int(first.number_of_ports),
      "transformers": len(first.transformers), "timescale": first.timescale,
      "simulation_length": first.simulation_length}), flush=True)
for line in sys.stdin:
    steps = seconds = 0
    for k in range(int(line)):
        n, dt = episode(k)
        steps, seconds = steps + n, seconds + dt
    print("@@" + json.dumps({"steps": steps, "seconds": seconds}), flush=True)
"""


def config_text(folder: str) -> str:
    return CONFIG.format(ev_specs=Path(folder) / "data/ev_specs_v2g_enabled2024.json")


def setup_help(python: str | None) -> str:
    venv = "~/ev2gym-venv"
    if python and Path(python).parent.name == "bin":
        venv = str(Path(python).parent.parent)
    return SETUP.format(venv=venv)


def probe_ev2gym(python: str | None) -> tuple[str, str, str]:
    """(ev2gym version, its Python's version, its package folder), or exit with help."""
    if not python:
        sys.exit(
            "--ev2gym-python is required: the python of a separate venv with EV2Gym "
            "(never the project's .venv). Set one up with:\n" + setup_help(None)
        )
    try:
        r = subprocess.run(
            [python, "-c", PROBE], capture_output=True, text=True, timeout=300
        )
    except OSError as e:
        sys.exit(
            f"cannot run {python}: {e}\nSet up EV2Gym's venv with:\n"
            + setup_help(python)
        )
    if r.returncode != 0:
        tail = "\n".join(r.stderr.strip().splitlines()[-3:])
        sys.exit(
            f"{python} cannot import EV2Gym:\n{tail}\nSet up its venv with:\n"
            + setup_help(python)
        )
    version, pyver, folder = r.stdout.split()[-3:]
    return version, pyver, folder


class EV2GymSide:
    """EV2Gym's worker process: ``measure(episodes)`` -> (steps, step-only seconds)."""

    def __init__(self, python: str, config: Path, seed: int, batch: int, worker: Path):
        self.proc = subprocess.Popen(
            [python, str(worker), str(config), str(seed), str(batch)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=config.parent,
        )
        self.info = self._answer("@@ready")

    def _answer(self, mark: str = "@@") -> dict:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.startswith(mark):
                return json.loads(line[len(mark) :])
        sys.exit(
            f"EV2Gym's worker ended (exit {self.proc.wait()}); see its stderr above"
        )

    def measure(self, episodes: int) -> tuple[int, float]:
        assert self.proc.stdin is not None
        self.proc.stdin.write(f"{episodes}\n")
        self.proc.stdin.flush()
        r = self._answer()
        return r["steps"], r["seconds"]

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        self.proc.wait(timeout=60)


class OurSide:
    """Our core, step alone, as ``evgrid bench`` measures it: each episode's actions
    are recorded once with a policy, then replayed with only ``env.step`` timed.
    ``batch`` envs are stepped in lockstep (each its own seed and plan)."""

    def __init__(self, episodes: int, scenario: str, policy_name: str, batch: int):
        from evgrid_core import EVGridEnv
        from evgrid_core.policies import make_policy

        self.scenario = scenario
        self.envs = [EVGridEnv() for _ in range(batch)]
        policy = make_policy(policy_name)
        env = self.envs[0]
        self.plans: list[list[object]] = []
        for seed in range(episodes * batch):
            obs = env.reset(seed=seed, scenario=scenario)
            policy.reset(seed)
            actions = []
            while not env.done:
                actions.append(a := policy.act(obs))
                env.step(a)
                obs = env.observation()
            self.plans.append(actions)
        self.measure()  # warm-up

    def measure(self) -> tuple[int, int, float]:
        """(ticks, decisions, step-only seconds) over every recorded episode."""
        ticks = decisions = 0
        seconds = 0.0
        batch = len(self.envs)
        for first in range(0, len(self.plans), batch):
            plans = self.plans[first : first + batch]
            for i, env in enumerate(self.envs):
                env.reset(seed=first + i, scenario=self.scenario)
            start = [env.tick for env in self.envs]
            longest = max(len(p) for p in plans)
            t0 = time.perf_counter()
            for t in range(longest):
                for env, plan in zip(self.envs, plans, strict=True):
                    if t < len(plan):
                        env.step(plan[t])  # type: ignore[arg-type]
            seconds += time.perf_counter() - t0
            ticks += sum(env.tick - s for env, s in zip(self.envs, start, strict=True))
            decisions += sum(len(p) for p in plans)
        return ticks, decisions, seconds


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} CPUs"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--ev2gym-python", help="python of the separate venv with EV2Gym")
    p.add_argument("--rounds", type=int, default=9)
    p.add_argument("--ev2gym-episodes", type=int, default=4, help="per round (336 steps each)")  # fmt: skip
    p.add_argument("--episodes", type=int, default=60, help="our episodes per round (48 ticks each)")  # fmt: skip
    p.add_argument("--scenario", default="evening_peak", help="ours")
    p.add_argument("--policy", default="greedy_eta", help="records our actions")
    p.add_argument("--seed", type=int, default=0, help="EV2Gym's first seed")
    p.add_argument("--batch", type=int, default=1, help="envs stepped in lockstep per side")  # fmt: skip
    p.add_argument("--vector", default="", help="also our vector env (Batch) at these N, comma-separated, each round")  # fmt: skip
    p.add_argument("--vector-threads", type=int, default=1, help="threads stepping our batch")  # fmt: skip
    p.add_argument("--vector-seconds", type=float, default=2.0, help="timed seconds per N per round")  # fmt: skip
    p.add_argument("--json", action="store_true", help="also print the rounds as JSON")
    p.add_argument("--show-config", action="store_true", help="print EV2Gym's config")
    args = p.parse_args(argv)
    if min(args.rounds, args.ev2gym_episodes, args.episodes, args.batch) < 1:
        p.error("--rounds, --ev2gym-episodes, --episodes and --batch must be >= 1")

    version, their_py, folder = probe_ev2gym(args.ev2gym_python)
    if args.show_config:
        print(config_text(folder), end="")
        return 0
    with tempfile.TemporaryDirectory(prefix="ev2gym_bench_") as tmp:
        return run(args, version, their_py, folder, Path(tmp))


def run(args: argparse.Namespace, version: str, their_py: str, folder: str, tmp: Path) -> int:  # fmt: skip
    config = tmp / "ev2gym_25cs_5min.yaml"
    config.write_text(config_text(folder))
    worker = tmp / "worker.py"
    worker.write_text(WORKER)

    print(f"before: {load()}")
    t0 = time.perf_counter()
    theirs = EV2GymSide(args.ev2gym_python, config, args.seed, args.batch, worker)
    ours = OurSide(args.episodes, args.scenario, args.policy, args.batch)
    info = theirs.info
    print(f"EV2Gym {version} (Python {their_py}): {info['ports']} charging stations "
          f"(1 port each), {info['transformers']} transformer, {info['timescale']}-minute "
          f"steps, {info['simulation_length']} steps/episode, random actions "
          f"(action_space.sample(), seeded): V2GProfitMax.yaml at 5 minutes")  # fmt: skip
    core = Path(sys.modules["evgrid_core"].__file__ or "").parent
    print(f"ours (Python {sys.version.split()[0]}, {core}): EVGridEnv, {args.scenario}, "
          f"25 stations, 5-minute ticks, actions recorded with {args.policy} and replayed")  # fmt: skip
    print(f"step only on both sides (reset and actions outside the clock); batch {args.batch}; "
          f"set-up {time.perf_counter() - t0:.1f} s")  # fmt: skip
    if args.batch > 1:
        print(f"batch {args.batch}: each side steps {args.batch} envs in lockstep from one "
              "process; figures are totals over the batch")  # fmt: skip
    print("ratio = our ticks/s / EV2Gym steps/s (one EV2Gym step = one 5-minute tick)")
    sizes = [int(x) for x in args.vector.split(",") if x.strip()]
    if sizes:
        from evgrid_cli.cmd_bench import measure_vector

        print(f"our vector env: Batch(N) stepped {args.vector_seconds} s per N per round, "
              f"{args.vector_threads} thread(s), random valid actions drawn from the masks "
              "outside the clock; observations, masks and auto-resets inside it")  # fmt: skip
    rows = []
    for r in range(args.rounds):
        # Alternate who goes first, so neither always runs on a cooler machine.
        if r % 2 == 0:
            steps, s_theirs = theirs.measure(args.ev2gym_episodes)
            ticks, decisions, s_ours = ours.measure()
        else:
            ticks, decisions, s_ours = ours.measure()
            steps, s_theirs = theirs.measure(args.ev2gym_episodes)
        row = {
            "ev2gym_steps_per_s": steps / s_theirs,
            "ours_ticks_per_s": ticks / s_ours,
            "ours_decisions_per_s": decisions / s_ours,
        }
        row["ratio_ticks_to_steps"] = (
            row["ours_ticks_per_s"] / row["ev2gym_steps_per_s"]
        )
        row["ratio_decisions_to_steps"] = row["ours_decisions_per_s"] / row["ev2gym_steps_per_s"]  # fmt: skip
        for n in sizes:
            v = measure_vector(
                args.scenario, n, args.vector_threads, args.vector_seconds
            )
            row[f"vector_{n}_ticks_per_s"] = v["ticks_per_s"]
            row[f"vector_{n}_decisions_per_s"] = v["decisions_per_s"]
            row[f"vector_{n}_ratio"] = v["ticks_per_s"] / row["ev2gym_steps_per_s"]
        rows.append(row)
        print(f"  round {r + 1}: EV2Gym {row['ev2gym_steps_per_s']:>9,.0f} steps/s "
              f"({steps} steps)   ours {row['ours_ticks_per_s']:>9,.0f} ticks/s "
              f"{row['ours_decisions_per_s']:>9,.0f} decisions/s ({ticks} ticks)   "
              f"ratio {row['ratio_ticks_to_steps']:5.2f}x")  # fmt: skip
    theirs.close()
    med = {k: statistics.median(row[k] for row in rows) for k in rows[0]}
    print(f"median over {args.rounds} rounds: EV2Gym {med['ev2gym_steps_per_s']:,.0f} steps/s, "
          f"ours {med['ours_ticks_per_s']:,.0f} ticks/s ({med['ours_decisions_per_s']:,.0f} "
          f"decisions/s)")  # fmt: skip
    print(f"median ratio (our ticks/s / EV2Gym steps/s): {med['ratio_ticks_to_steps']:.2f}x  "
          f"(decisions/s / steps/s: {med['ratio_decisions_to_steps']:.2f}x)")  # fmt: skip
    for n in sizes:
        print(f"vector env N={n}: {med[f'vector_{n}_ticks_per_s']:,.0f} ticks/s "
              f"({med[f'vector_{n}_decisions_per_s']:,.0f} decisions/s) in all: "
              f"{med[f'vector_{n}_ratio']:.1f}x EV2Gym's steps/s (median of the rounds' ratios; "
              f"decisions/s {med[f'vector_{n}_decisions_per_s'] / med['ev2gym_steps_per_s']:.1f}x)")  # fmt: skip
    print(f"after: {load()}")
    if args.json:
        print(json.dumps({"ev2gym_version": version, "batch": args.batch,
                          "rounds": rows, "median": med}, indent=2))  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
