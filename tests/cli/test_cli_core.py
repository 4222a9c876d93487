"""The evgrid command: list, eval (table and JSON), bench, and clean errors."""

import json
import subprocess
import sys

import pytest


def evgrid(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "evgrid_cli", *args],
        capture_output=True,
        text=True,
        check=check,
    )


def test_list_names_policies_and_scenarios() -> None:
    out = json.loads(evgrid("list", "--json").stdout)
    names = {p["name"] for p in out["policies"]}
    assert {"greedy_eta", "random_valid", "always_invalid"} <= names
    assert "oracle" in names and out["skipped_plugins"] == []  # the registry's plugin
    assert {s["name"] for s in out["scenarios"]} >= {
        "evening_peak",
        "feeder_fault",
        "quiet_night",
    }
    assert "[adversarial]" in evgrid("list").stdout


def test_eval_json_has_kpis_mean_return_and_per_episode_returns() -> None:
    res = evgrid("eval", "--policy", "nearest", "--scenario", "morning_peak", "--episodes", "3", "--seed", "4",
                 "--json")  # fmt: skip
    out = json.loads(res.stdout)
    assert len(out["per_episode_returns"]) == 3 and out["seeds"] == [4, 5, 6]
    assert out["mean_return"] == pytest.approx(sum(out["per_episode_returns"]) / 3)
    assert out["kpis"]["mean_wait_min"]["n"] == 3
    assert "ep" in res.stderr  # the progress bar goes to stderr


def test_eval_is_reproducible_and_matches_in_process() -> None:
    from evgrid_core.policies import make_policy
    from evgrid_core.rollout import run_episode

    out = json.loads(
        evgrid("eval", "--episodes", "2", "--json", "--no-progress").stdout
    )
    p = make_policy("greedy_eta")
    assert out["per_episode_returns"] == [
        run_episode(p, "evening_peak", s).ret for s in (0, 1)
    ]


def test_eval_table() -> None:
    out = evgrid("eval", "--episodes", "1", "--no-progress").stdout
    assert "mean_wait_min" in out and "peak_feeder_util_pct" in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["eval", "--policy", "nope"], "unknown policy 'nope'"),
        (["eval", "--scenario", "nope"], "unknown scenario 'nope'"),
        (["eval", "--episodes", "0"], "--episodes must be at least 1"),
        (["bench", "--scenario", "nope"], "unknown scenario"),
        (
            ["bench", "--sizes", "0"],
            "--sizes, --threads and --seconds must be positive",
        ),
    ],
)
def test_bad_input_is_a_clean_error(args: list[str], message: str) -> None:
    res = evgrid(*args, check=False)
    assert (
        res.returncode == 2 and message in res.stderr and "Traceback" not in res.stderr
    )


def test_bench_json_reports_every_figure() -> None:
    out = json.loads(evgrid("bench", "--episodes", "2", "--sizes", "1,3", "--threads", "1",
                            "--seconds", "0.5", "--json").stdout)  # fmt: skip
    for key in ("ticks_per_s_core", "decisions_per_s_core", "ticks_per_s_with_policy", "reset_ms",
                "episode_peak_python_mb"):  # fmt: skip
        assert out[key] > 0, key
    assert [v["n"] for v in out["vector"]] == [1, 3]
    for v in out["vector"]:
        assert v["ticks_per_s"] > 0 and v["bytes_per_env"] > 1000

    assert out["kernels"] == "compiled (numba)"  # the figures are the compiled core's


def test_a_command_whose_package_is_missing_fails_alone() -> None:
    """The server's image has no ``training``: every other command still works."""
    code = (
        "import sys; sys.modules['training'] = None;"  # as if not installed
        "from evgrid_cli.main import main; sys.exit(main(sys.argv[1:]))"
    )
    run = [sys.executable, "-c", code]
    assert subprocess.run([*run, "list"], capture_output=True).returncode == 0
    res = subprocess.run(
        [*run, "train", "--config", "cpu-smoke"], capture_output=True, text=True
    )
    assert res.returncode == 2 and res.stderr == (
        "evgrid train: error: train needs the training package, not installed here\n"
    )


def test_check_runs_a_plugins_contract_by_name_or_module_path() -> None:
    ok = evgrid(
        "check", "--policy", "greedy_eta", "--scenarios", "heatwave,evening_peak"
    )
    assert "policy greedy_eta keeps its contract on 2 scenarios" in ok.stdout
    ok = evgrid("check", "--grid", "evgrid_core.grid:FeederSum", "--ticks", "4")
    assert "evening_peak" in ok.stdout and "4 ticks checked" in ok.stdout
    bad = evgrid("check", "--policy", "always_invalid", "--scenarios", "evening_peak",
                 check=False)  # fmt: skip
    assert bad.returncode == 1
    assert "always_invalid breaks its contract: [valid]" in bad.stderr
    bad = evgrid("check", "--grid", "nowhere:Model", check=False)
    assert bad.returncode == 2 and "cannot load 'nowhere:Model'" in bad.stderr
    bad = evgrid("check", "--policy", "nearest", "--scenarios", "nope", check=False)
    assert bad.returncode == 2 and "unknown scenario" in bad.stderr.lower()
