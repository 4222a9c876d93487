"""``compare --ray`` / ``labels --ray``: the same files as the single-process runs."""

import json
from pathlib import Path

import pytest

ray = pytest.importorskip("ray")

from evaluation.ray_compare import run_comparison_ray  # noqa: E402
from evaluation.runner import EPISODES_FILE, run_comparison  # noqa: E402
from training.labels import DECISIONS_FILE, label_runs  # noqa: E402
from training.ray_labels import label_runs_ray  # noqa: E402

POLICIES = ["random_valid", "greedy_eta", "urgency_first", "distilled"]
WALL_CLOCK = ("solve_s", "build_s")  # the only fields that may differ: seconds taken


@pytest.fixture(scope="module")
def local_ray():
    """One local Ray for the module: two CPUs, no dashboard (start-up ~10 s)."""
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def test_compare_ray_equals_single_process(local_ray, tmp_path: Path) -> None:
    args = (POLICIES, ["evening_peak", "feeder_fault"], range(900000, 900003))
    single = run_comparison(*args, tmp_path / "single", progress=False, code="c")
    on_ray = run_comparison_ray(
        *args, tmp_path / "ray", progress=False, code="c", tasks_per_cpu=2
    )
    assert on_ray == single and len(single) == 24
    a = (tmp_path / "single" / EPISODES_FILE).read_bytes()
    assert (tmp_path / "ray" / EPISODES_FILE).read_bytes() == a  # bit for bit


def test_compare_ray_resumes_to_the_same_file(local_ray, tmp_path: Path) -> None:
    policies, scenarios = ["greedy_eta", "nearest"], ["heatwave"]
    run_comparison(policies, scenarios, range(4), tmp_path / "single", progress=False)
    run_comparison_ray(policies, scenarios, range(2), tmp_path / "ray", progress=False)
    with (tmp_path / "ray" / EPISODES_FILE).open("a") as f:
        f.write('{"policy": "greedy_eta", "scen')  # a torn line: an interrupted write
    recs = run_comparison_ray(
        policies, scenarios, range(4), tmp_path / "ray", progress=False
    )
    assert [(r["policy"], r["seed"]) for r in recs] == [
        (p, s) for s in range(4) for p in policies
    ]
    single = (tmp_path / "single" / EPISODES_FILE).read_text().splitlines()
    on_ray = [
        ln
        for ln in (tmp_path / "ray" / EPISODES_FILE).read_text().splitlines()
        if ln.endswith("}")  # the torn line stays, as the single-process run keeps it
    ]
    assert on_ray == single


def test_cli_compare_ray_writes_the_same_files(local_ray, tmp_path: Path) -> None:
    # `evgrid compare --ray` (the CLI, the Ray started above) = `evgrid compare`:
    # the records, the summary and the report, byte for byte.
    from evgrid_cli.main import main

    args = ["compare", "--policies", "greedy_eta,nearest,mappo", "--scenarios",
            "evening_peak", "--episodes", "2", "--seed", "900000", "--no-plots",
            "--no-progress", "--reference", "greedy_eta"]  # fmt: skip
    assert main([*args, "--out", str(tmp_path / "single")]) == 0
    assert main([*args, "--out", str(tmp_path / "ray"), "--ray"]) == 0
    for name in (EPISODES_FILE, "summary.json", "report.md"):
        a = (tmp_path / "single" / name).read_bytes()
        assert (tmp_path / "ray" / name).read_bytes() == a, name
    assert len(a) > 0 and b"mappo" in (tmp_path / "ray" / EPISODES_FILE).read_bytes()


def _without_wall_clock(path: Path) -> list[dict]:
    rows = [json.loads(ln) for ln in path.read_text().splitlines()]
    return [{k: v for k, v in r.items() if k not in WALL_CLOCK} for r in rows]


@pytest.mark.slow  # two optimum solves twice: ~30 s on a busy 2-core machine
def test_labels_ray_equals_single_process(local_ray, tmp_path: Path) -> None:
    label_runs(["quiet_night"], range(2), tmp_path / "single", progress=False)
    label_runs_ray(["quiet_night"], range(2), tmp_path / "ray", progress=False)
    for name in (DECISIONS_FILE, EPISODES_FILE):
        a = _without_wall_clock(tmp_path / "single" / name)
        assert _without_wall_clock(tmp_path / "ray" / name) == a and a
    rows = (tmp_path / "single" / DECISIONS_FILE).read_bytes()
    assert (tmp_path / "ray" / DECISIONS_FILE).read_bytes() == rows  # no clock in rows
