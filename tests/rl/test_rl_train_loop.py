"""The training loop as a user runs it: a tiny candidate preset, its held-out checks,
the exported actor, and ``--resume`` going on from the checkpoint."""

import csv
import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("ray.rllib")

from evgrid_core.policies import make_policy  # noqa: E402
from evgrid_rl.presets import PRESETS  # noqa: E402
from evgrid_rl.train import train  # noqa: E402
from evgrid_rl.validate import VALIDATION_FIRST_SEED, check, select  # noqa: E402


@pytest.mark.slow
def test_tiny_run_checks_exports_and_resumes(tmp_path: Path) -> None:
    import ray

    tiny = replace(PRESETS["cpu-clock"], iterations=2, batch_steps=300, minibatch=150,
                   epochs=1, num_envs=2, num_cpus=1, eval_every=2, eval_seeds=1,
                   scenarios=("evening_peak",), minutes=0.0)  # fmt: skip
    try:
        train(tiny, tmp_path)
        ray.shutdown()
        with (tmp_path / "curve.csv").open("a") as f:  # an iteration after the last
            f.write("3,999999.0\n")  # check, lost in a crash (and torn)
        curve = train(replace(tiny, iterations=3), tmp_path, resume=True)
    finally:
        ray.shutdown()
    assert [r["iteration"] for r in curve] == [0, 1, 2, 3]  # 0: before any update
    steps = [r["env_steps"] for r in curve]
    assert steps[3] > steps[2] > steps[1] >= 300 and steps[0] == 0
    assert steps[3] < 10_000  # the torn row after the last check was done again
    with (tmp_path / "curve.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 4 and rows[2]["val_evening_peak"] and not rows[1]["val_return"]
    assert rows[0]["val_return"]  # the untrained actor checked too
    ref = json.loads((tmp_path / "reference.json").read_text())
    assert ref == check("greedy_eta", ("evening_peak",), 1)  # greedy_eta, same seeds
    meta = make_policy("ppo", weights=tmp_path / "ppo.npz").model.meta
    assert meta["iterations"] == 3 and meta["interface"] == "candidates"
    assert (tmp_path / "curve.png").stat().st_size > 10_000
    assert VALIDATION_FIRST_SEED > 900_019  # clear of the report's seeds
    assert np.isfinite(curve[3]["val_return"])
    snaps = sorted(p.name for p in (tmp_path / "snapshots").glob("*.npz"))
    assert snaps == ["ppo_it0.npz", "ppo_it2.npz", "ppo_it3.npz"]  # one per check
    chosen = select(tmp_path, ("evening_peak",), 1, top=2)
    best_two = sorted(curve, key=lambda r: -r.get("val_return", -1e9))[:2]
    assert {r["snapshot"] for r in chosen} == {
        f"ppo_it{int(r['iteration'])}.npz" for r in best_two
    }
    assert chosen[0]["val_return"] >= chosen[1]["val_return"]
    assert (tmp_path / "selection.csv").is_file()
