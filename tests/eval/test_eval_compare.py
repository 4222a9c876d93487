"""Paired statistics, the resumable runner, the report and the ``compare`` command."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from evaluation.engineering import fmt
from evaluation.runner import EPISODES_FILE, load_records, run_comparison, run_episode
from evaluation.stats import (
    add_pct_optimal,
    paired,
    pct_label,
    pct_of_optimal,
    summarise,
)
from evgrid_cli.main import main
from evgrid_core import SimConfig


def _rec(policy: str, seed: int, ret: float, wait: float = 10.0) -> dict:
    return {
        "policy": policy,
        "scenario": "evening_peak",
        "seed": seed,
        "return": ret,
        "kpis": {"mean_wait_min": wait},
        "parts": {"wait": -wait},
    }


def test_paired_difference_and_tests_on_known_numbers():
    ref = {s: _rec("a", s, r) for s, r in enumerate([-10.0, -12.0, -11.0, -9.0])}
    pol = {s: _rec("b", s, r) for s, r in enumerate([-8.0, -11.0, -8.0, -8.0])}
    out = paired(pol, ref, "return")
    # differences 2, 1, 3, 1: mean 1.75, sd 0.9574, t(3) = 3.182
    assert out["n"] == 4
    assert out["mean_diff"] == pytest.approx(1.75)
    assert out["ci95"] == pytest.approx(3.182446 * 0.957427 / 2.0, rel=1e-5)
    # t = 3.656 with 3 df; closed form F(t) = 1/2 + (th + sin th cos th) / pi,
    # th = atan(t / sqrt 3), gives p = 2 (1 - F) = 0.0353
    th = math.atan(1.75 / (0.957427 / 2.0) / math.sqrt(3))
    p_t = 2 * (0.5 - (th + math.sin(th) * math.cos(th)) / math.pi)
    assert out["t_p"] == pytest.approx(p_t, rel=1e-4)
    assert out["t_p"] == pytest.approx(0.0353, abs=1e-4)
    assert out["wilcoxon_p"] == pytest.approx(0.125)  # exact: all 4 signs positive
    # identical policies: no difference, p = 1
    same = paired(ref, ref, "return")
    assert same["mean_diff"] == 0.0 and same["t_p"] == 1.0 and same["wilcoxon_p"] == 1.0
    # only shared seeds are paired
    del pol[3]
    assert paired(pol, ref, "return")["n"] == 3


def test_summary_and_percent_of_optimal():
    runs = {s: _rec("a", s, -10.0 - s, wait=5.0 * s) for s in range(3)}
    st = summarise(runs, ["return", "mean_wait_min", "part:wait"])
    assert st["return"]["mean"] == pytest.approx(-11.0)
    assert st["mean_wait_min"]["mean"] == pytest.approx(5.0)
    assert st["part:wait"]["mean"] == pytest.approx(-5.0)
    assert st["return"]["ci95"] == pytest.approx(4.303 * 1.0 / math.sqrt(3), rel=1e-3)
    assert pct_of_optimal(-20.0, -10.0) == pytest.approx(50.0)
    assert pct_of_optimal(-10.0, -10.0) == pytest.approx(100.0)
    recs = [_rec("optimum", 0, -5.0), _rec("a", 0, -20.0), _rec("a", 1, -20.0)]
    add_pct_optimal(recs)
    assert recs[1]["derived"]["pct_optimal"] == pytest.approx(25.0)
    assert "derived" not in recs[2]  # no optimum for seed 1


def test_episode_record_is_the_env_episode():
    rec = run_episode("greedy_eta", "evening_peak", 3)
    assert rec["return"] == pytest.approx(rec["kpis"]["return"])
    assert rec["return"] == pytest.approx(sum(rec["parts"].values()))
    assert len(rec["util"]) == 48
    assert len(rec["waits"]) == rec["kpis"]["evs_plugged_in"]
    assert rec["kpis"]["peak_feeder_util_pct"] == pytest.approx(
        100 * max(rec["util"]), abs=0.01
    )


def test_runner_resumes_after_an_interruption(tmp_path):
    first = run_comparison(["nearest"], ["evening_peak"], [0, 1], tmp_path, progress=False)  # fmt: skip
    path = tmp_path / EPISODES_FILE
    assert len(first) == 2
    with path.open("a") as f:
        f.write('{"policy": "greedy_eta", "scen')  # torn write of an interrupted run
    again = run_comparison(
        ["nearest", "greedy_eta"], ["evening_peak"], [0, 1], tmp_path, progress=False
    )
    assert len(again) == 4  # nearest not rerun, greedy_eta run for both seeds
    recs = load_records(path)
    assert sorted((r["policy"], r["seed"]) for r in recs) == [
        ("greedy_eta", 0), ("greedy_eta", 1), ("nearest", 0), ("nearest", 1),
    ]  # fmt: skip
    assert [r["return"] for r in recs if r["policy"] == "nearest"] == [
        r["return"] for r in first
    ]


def test_compare_command_writes_table_json_and_plots(tmp_path, capsys):
    code = main(
        [
            "compare",
            "--policies", "nearest,greedy_eta,random_valid",
            "--scenarios", "evening_peak",
            "--episodes", "3",
            "--out", str(tmp_path),
            "--no-progress",
        ]
    )  # fmt: skip
    assert code == 0
    md = (tmp_path / "report.md").read_text()
    assert "| **greedy_eta** |" in md and "| random_valid |" in md
    summary = json.loads((tmp_path / "summary.json").read_text())
    rows = summary["scenarios"]["evening_peak"]
    assert rows["nearest"]["seeds"] == [0, 1, 2]
    d = rows["random_valid"]["paired_vs_reference"]["return"]
    recs = load_records(tmp_path / EPISODES_FILE)
    ret = {(r["policy"], r["seed"]): r["return"] for r in recs}
    diffs = [ret["random_valid", s] - ret["greedy_eta", s] for s in range(3)]
    assert d["mean_diff"] == pytest.approx(np.mean(diffs))
    for name in ("kpis", "feeder_util", "waits", "reward_parts"):
        png = tmp_path / f"evening_peak_{name}.png"
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # stdout: the headline table (return ± CI, the feeders), then the paths
    out = capsys.readouterr().out.splitlines()
    assert out[out.index("evening_peak: 3 seeds, means over seeds") + 1].split() == [
        "policy", "return", "(mean", "±", "95", "%", "CI)", "peak", "feeder", "load",
        "[%", "of", "limit]", "over", "a", "limit", "[feeder-min]", "shed", "[MWh]",
    ]  # fmt: skip
    for pol in ("nearest", "greedy_eta", "random_valid"):
        row = next(ln.split() for ln in out if ln.startswith(pol + " "))
        st, figs = rows[pol]["stats"]["return"], rows[pol]["figures"]
        assert row[1:4] == [fmt(st["mean"]), "±", fmt(st["ci95"])]
        assert row[4:] == [fmt(figs[k]["mean"]) for k in
                           ("peak_util_pct", "over_feeder_min", "shed_mwh")]  # fmt: skip
    assert "% of optimal" not in "\n".join(out)  # no optimum ran
    assert out[-6:] == [str(tmp_path / "report.md"), str(tmp_path / "summary.json")] + [
        str(tmp_path / f"evening_peak_{n}.png")
        for n in ("kpis", "feeder_util", "waits", "reward_parts")
    ]


@pytest.mark.parametrize(
    "argv",
    [
        ["compare", "--policies", "nope"],  # unknown policy
        ["compare", "--scenarios", "atlantis"],  # unknown scenario
        ["compare", "--policies", "nearest", "--reference", "greedy_eta"],  # ref absent
        ["optimum", "--seed", "-1"],  # bad seed
        ["optimum", "--max-defer", "-5"],  # negative defer budget
        ["compare", "--policies", "optimum", "--time-limit", "0"],  # no time to solve
        ["optimum", "--node-limit", "-1"],  # a negative node budget
        ["optimum", "--baselines", "nope"],  # unknown baseline
        ["compare", "--stations-per-kind", "0"],  # no station to plan with
        ["compare", "--grid", "nope"],  # unknown grid model
        ["eval", "--grid", "nope"],  # unknown grid model
        ["compare", "--policies", "optimum", "--grid", "ac"],  # not linear
        ["compare", "--policies", "oracle", "--adapter", "/no/such.gguf"],  # missing
        ["compare", "--policies", "oracle", "--adapter", __file__, "--model", __file__],
        ["compare", "--policies", "greedy_eta", "--prompt-style", "v1"],  # no oracle*
    ],
)
def test_bad_input_is_a_clean_error(argv, capsys):
    assert main(argv) == 2
    assert "error" in capsys.readouterr().err


def test_report_counts_episodes_that_beat_the_optimum_plan():
    from evaluation.report import TABLE_KEYS, markdown, summary_json
    from evgrid_core import REWARD_KEYS

    def rec(policy, seed, ret):
        r = _rec(policy, seed, ret)
        r["kpis"] = {k: 0.0 for k in TABLE_KEYS if k != "return"}
        r["parts"] = dict.fromkeys(REWARD_KEYS, 0.0)
        return r

    recs = [rec("optimum", 0, -10.0), rec("a", 0, -20.0)]
    recs += [rec("optimum", 1, -10.0), rec("a", 1, -8.0)]  # beats the plan
    s = summary_json(recs, ["a", "optimum"], ["evening_peak"], "a")
    assert s["episodes_beating_optimum"] == [("a", "evening_peak", 1)]
    st = s["scenarios"]["evening_peak"]["a"]["stats"]["pct_optimal"]
    assert st["mean"] == pytest.approx((50.0 + 125.0) / 2)
    md = markdown(s, ["a", "optimum"], {})
    assert "same seed: 1" in md
    assert "| a | -14.0 ± 76.2 (87.5 %) |" in md


def test_percent_of_bound_when_the_solve_did_not_close():
    """A limited solve's record carries its bound: "% of" divides by it, and says so."""
    opt = _rec("optimum", 0, -10.0)
    opt["optimum"] = {"reference_return": -8.0, "reference_kind": "bound"}
    recs = [opt, _rec("a", 0, -20.0), _rec("optimum", 1, -5.0), _rec("a", 1, -10.0)]
    add_pct_optimal(recs)
    assert recs[1]["derived"]["pct_optimal"] == pytest.approx(40.0)  # 100 x -8 / -20
    assert recs[1]["pct_of"] == "bound"
    assert recs[0]["derived"]["pct_optimal"] == pytest.approx(80.0)  # its own gap
    assert recs[3]["pct_of"] == "optimal"  # an older record: its return, closed
    assert pct_label(["bound", "bound"]) == "% of bound"
    assert pct_label(["bound", "optimal"]) == "% of optimal / bound"
    assert pct_label([]) == "% of optimal"


def test_compare_records_a_limited_solve_without_aborting(tmp_path, capsys):
    """A node limit of 0 stops HiGHS at once: the run goes on, the record and the
    report carry the status, and the optimum row is never worse than a baseline.
    The solve is announced with its time before it starts (not when resumed), and
    stdout's table gives each policy's % of the optimum's bound."""
    argv = [
        "compare",
        "--policies", "greedy_eta,least_loaded_feeder,optimum",
        "--scenarios", "feeder_fault",
        "--episodes", "1",
        "--out", str(tmp_path),
        "--node-limit", "0",
        "--stations-per-kind", "1",
        "--max-defer", "0",
        "--no-plots",
        "--no-progress",
    ]  # fmt: skip
    assert main(argv) == 0
    std = capsys.readouterr()
    assert std.err.splitlines()[0] == (
        "heads-up: the optimum solves a MILP: ~35 s on feeder_fault on the dev "
        "machine (timed at node limit 500, this run 0)"
    )
    head = next(ln for ln in std.out.splitlines() if ln.startswith("policy "))
    assert "% of bound" in head
    summary = json.loads((tmp_path / "summary.json").read_text())
    for pol in ("greedy_eta", "least_loaded_feeder", "optimum"):
        row = next(ln.split() for ln in std.out.splitlines() if ln.startswith(pol))
        pct = summary["scenarios"]["feeder_fault"][pol]["stats"]["pct_optimal"]
        assert row[4:6] == [fmt(pct["mean"]), "%"]
    assert main(argv) == 0  # resumed: nothing left to solve, nothing announced
    assert "heads-up" not in capsys.readouterr().err
    recs = load_records(tmp_path / EPISODES_FILE)
    (opt,) = [r for r in recs if r["policy"] == "optimum"]
    assert opt["optimum"]["status"].startswith("work-limited, gap ")
    assert opt["optimum"]["source"] == "baseline:least_loaded_feeder"
    assert opt["return"] == max(r["return"] for r in recs)
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["pct_label"]["feeder_fault"] == "% of bound"
    md = (tmp_path / "report.md").read_text()
    assert "% of bound" in md and "% of optimal" not in md.split("## Summary")[1]
    assert "0/1 solves proven optimal" in md and "work-limited, gap" in md


def test_records_name_their_grid_model_and_one_folder_holds_one(tmp_path):
    # quiet_night: the cheapest episode; the second run, on lindistflow, is refused
    # before it runs anything, and the folder keeps the feeder sum's records.
    lin = SimConfig(grid="lindistflow")
    recs = run_comparison(["nearest"], ["quiet_night"], [0], tmp_path, progress=False)
    assert [r["grid"] for r in recs] == ["feeder_sum"]
    with pytest.raises(ValueError, match="grid model feeder_sum, not lindistflow"):
        run_comparison(["nearest"], ["quiet_night"], [1], tmp_path, config=lin,
                       progress=False)  # fmt: skip
    assert len(load_records(tmp_path / EPISODES_FILE)) == 1
    other = run_comparison(["nearest"], ["quiet_night"], [0], tmp_path / "lin",
                           config=lin, progress=False)  # fmt: skip
    assert other[0]["grid"] == "lindistflow"
    assert other[0]["parts"]["undervoltage"] <= 0.0
    assert "losses_kwh" in other[0]["kpis"] and other[0]["kpis"]["losses_kwh"] > 0


def test_eval_runs_on_the_grid_model_it_is_given(capsys):
    argv = ["eval", "--policy", "nearest", "--scenario", "quiet_night",
            "--episodes", "1", "--grid", "lindistflow", "--json", "--no-progress"]  # fmt: skip
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["grid"] == "lindistflow" and out["kpis"]["losses_kwh"]["mean"] > 0
    assert set(out["reward_parts_mean"]) >= {"undervoltage", "transformer_overload"}
