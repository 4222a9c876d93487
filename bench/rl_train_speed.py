"""Env steps/s of PPO training, sampling and learning together, per preset.

``python3 bench/rl_train_speed.py cpu-flat cpu-flat-python cpu``: each preset built as
``evgrid_rl.train`` builds it, one warm-up iteration, then 3 timed (wall clock).
``cpu-flat-python`` is ``cpu-flat`` sampled from one Python env (``MaskedGymEnv``)
instead of the compiled batch: the flat interface before the vector env. The
sampling / learning split is RLlib's own timers (smoothed per iteration), so only
roughly adds up to the wall clock.
"""

import json
import sys
import time
from dataclasses import replace

import ray

from evgrid_rl.presets import PRESETS
from evgrid_rl.train import build_config

ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
for name in sys.argv[1:] or ["cpu-flat", "cpu-flat-python", "cpu"]:
    if name == "cpu-flat-python":  # before the vector env: one Python env, as cpu-small
        p = replace(PRESETS["cpu-flat"], compiled_batch=False, num_envs=1)
    else:
        p = PRESETS[name]
    algo = build_config(p).build_algo()
    algo.train()
    t0 = time.perf_counter()
    steps = 0
    samp = learn = 0.0
    for _ in range(3):
        res = algo.train()
        steps += res["env_runners"]["num_env_steps_sampled"]
        samp += res["timers"]["env_runner_sampling_timer"]
        learn += res["timers"]["learner_update_timer"]
    dt = time.perf_counter() - t0
    print(json.dumps({"preset": name, "steps": steps, "seconds": round(dt, 1),
                      "steps_per_s": round(steps / dt), "sampling_s": round(samp, 1),
                      "learning_s": round(learn, 1)}))  # fmt: skip
    algo.stop()
