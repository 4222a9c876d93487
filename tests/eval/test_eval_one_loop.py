"""One episode loop: `evgrid eval`, `evgrid compare` (with and without Ray) and the
label recorder write the same per-episode record for the same (policy, seed)."""

import json

import pytest

from evaluation.runner import run_comparison
from evgrid_cli.main import main
from training.labels import label_episode

SCENARIO, SEEDS = "heatwave", [900_000, 900_001]
# The optimum at its cheapest (no branching, no LP bound, one baseline): the loop is
# under test here, not the solve.
OPTIMUM = {"node_limit": 0, "lp_bound": False, "baselines": ("greedy_eta",)}
RUN_ONLY = ("feeders", "optimum", "code")  # what a comparison adds to the record


def _core(rec: dict) -> dict:
    return {k: v for k, v in rec.items() if k not in RUN_ONLY}


@pytest.fixture(scope="module")
def compared(tmp_path_factory) -> list[dict]:
    out = tmp_path_factory.mktemp("compare")
    return run_comparison(["greedy_eta", "distilled", "optimum"], [SCENARIO], SEEDS,
                          out, optimum=OPTIMUM, progress=False)  # fmt: skip


def _by(records: list[dict], policy: str) -> list[dict]:
    return sorted(
        (r for r in records if r["policy"] == policy), key=lambda r: r["seed"]
    )


@pytest.mark.parametrize("policy", ["greedy_eta", "distilled"])
def test_eval_writes_the_comparisons_record(compared, policy, capsys) -> None:
    argv = ["eval", "--policy", policy, "--scenario", SCENARIO, "--episodes", "2",
            "--seed", str(SEEDS[0]), "--json", "--no-progress"]  # fmt: skip
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    recs = _by(compared, policy)
    assert [r["seed"] for r in recs] == SEEDS == out["seeds"]
    assert out["per_episode_returns"] == [r["return"] for r in recs]
    assert out["per_episode_kpis"] == [r["kpis"] for r in recs]


def test_the_label_recorder_writes_the_comparisons_record(compared) -> None:
    for rec in _by(compared, "optimum"):
        rows, summary = label_episode(SCENARIO, rec["seed"], OPTIMUM)
        assert summary["record"] == _core(rec)
        assert len(rows) == summary["decisions"] == rec["kpis"]["steps"]
        assert "feeders" in rec  # the plan replayed through the loop, feeders watched


def test_compare_with_ray_writes_the_same_records(compared, tmp_path) -> None:
    pytest.importorskip("ray")
    from evaluation.ray_compare import run_comparison_ray

    recs = run_comparison_ray(["greedy_eta", "distilled", "optimum"], [SCENARIO], SEEDS,
                              tmp_path, optimum=OPTIMUM, progress=False, num_cpus=2)  # fmt: skip
    strip = [{k: v for k, v in r.items() if k != "optimum"} for r in recs]
    assert strip == [{k: v for k, v in r.items() if k != "optimum"} for r in compared]
