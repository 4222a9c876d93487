"""Where a learner loses to its teacher (training.oracle_gap): its own episode, each
disagreement scored by the env, resumable, summarised.

The Oracle is the tool's learner in use; here ``greedy_eta`` stands in (an Oracle
episode takes minutes), against ``distilled`` as in use.
"""

from __future__ import annotations

import json

import pytest

from evgrid_core import EVGridEnv
from evgrid_core.actions import parse_action
from evgrid_core.policies import make_policy
from training.oracle_gap import difference, gap_episode, gap_rows, main, summarize
from training.rewards import rollout

SCENARIO = "quiet_night"


def test_difference_names_what_two_picks_differ_in() -> None:
    def d(a: str, b: str) -> str:
        return difference(parse_action(a), parse_action(b))

    assert d("ROUTE E1 S3 FAST", "ROUTE E1 S3 SLOW") == "kind"
    assert d("ROUTE E1 S3 FAST", "ROUTE E1 S4 FAST") == "station"
    assert d("ROUTE E1 S3 FAST", "DEFER E1 5") == "defer"
    assert d("DEFER E1 10", "DEFER E1 5") == "defer"


def test_each_disagreement_is_scored_on_the_learners_own_state() -> None:
    rows, summary = gap_episode(SCENARIO, 0, "greedy_eta", "distilled", 1)
    assert rows and summary["disagreements"] == len(rows)
    assert summary["adapter"] is None
    # the learner's episode, as it plays alone
    env, me = EVGridEnv(), make_policy("greedy_eta")
    obs, ret, states = env.reset(seed=0, scenario=SCENARIO), 0.0, {}
    me.reset(0)
    while not env.done:
        states[env.steps] = env.clone()
        ret += env.step(me.act(obs)).reward
        obs = env.observation()
    assert summary["decisions"] == env.steps
    assert summary["learner_return"] == pytest.approx(ret, abs=1e-9)
    for r in rows:
        assert r["learner"] != r["teacher"]
        assert r["differ_in"] in ("kind", "station", "defer", "other")
        for who in ("learner", "teacher"):  # the same state, played on afresh
            again = rollout(states[r["step"]].clone(), r[who], horizon_ticks=10**9,
                            continuation="distilled", seed=0).total  # fmt: skip
            assert again == r[f"return_{who}"]
    assert any(r["return_learner"] != r["return_teacher"] for r in rows)


def test_the_runner_resumes_refuses_other_players_and_summarises(tmp_path, capsys):
    out = tmp_path / "gap"
    args = ["--learner", "greedy_eta", "--scenarios", SCENARIO, "--out", str(out)]
    assert main([*args, "--seeds", "0:2"]) == 0
    table = capsys.readouterr().out
    assert f"| {SCENARIO} | all |" in table
    first = (out / "decisions.jsonl").read_text()
    assert main([*args, "--seeds", "0:3"]) == 0  # seeds 0 and 1 kept, 2 added
    eps = [json.loads(x) for x in (out / "episodes.jsonl").read_text().splitlines()]
    assert sorted(e["seed"] for e in eps) == [0, 1, 2]
    assert (out / "decisions.jsonl").read_text().startswith(first)
    s = summarize(out)[SCENARIO]
    rows = [json.loads(x) for x in (out / "decisions.jsonl").read_text().splitlines()]
    gap = sum(r["return_learner"] - r["return_teacher"] for r in rows) / 3
    assert s["all"]["gap_per_episode"][0] == pytest.approx(gap)
    assert s["all"]["per_episode"] == pytest.approx(len(rows) / 3)
    assert sum(s[k]["per_episode"] for k in ("kind", "station", "defer", "other")) == (
        pytest.approx(s["all"]["per_episode"])
    )
    assert json.loads((out / "gap.json").read_text())[SCENARIO]["episodes"] == 3
    assert (out / "gap.png").stat().st_size > 1000
    # another learner into the same folder: refused, nothing written
    assert main(["--learner", "nearest", *args[2:], "--seeds", "0:4"]) == 2
    assert "holds greedy_eta" in capsys.readouterr().err
    assert len((out / "episodes.jsonl").read_text().splitlines()) == 3
    # bad input: one line each
    assert main([*args, "--seeds", "0:1", "--scenarios", "nowhere"]) == 2
    assert main([*args, "--adapter", str(tmp_path / "none.gguf")]) == 2
    assert main([*args, "--seeds", "5:2"]) == 2
    assert main([*args, "--seeds", "900000:900002"]) == 2  # held out: not labels


def test_rows_label_the_learners_states_with_the_better_line(tmp_path) -> None:
    out = tmp_path / "gap"
    assert main(["--learner", "greedy_eta", "--scenarios", SCENARIO, "--seeds", "0:2",
                 "--out", str(out)]) == 0  # fmt: skip
    scored = [json.loads(x) for x in (out / "decisions.jsonl").read_text().splitlines()]
    rows = gap_rows(out, stations=3, style="v1+on_time")
    assert len(rows) == len(scored) > 0
    for row, r in zip(rows, scored, strict=True):
        assert {k: row[k] for k in ("scenario", "seed", "step")} == {
            k: r[k] for k in ("scenario", "seed", "step")
        }
        better = r["return_teacher"] > r["return_learner"] + 0.05
        assert row["improved"] == better
        assert row["expert_action"] == (r["teacher"] if better else r["learner"])
        if row["answer"] is not None:
            assert (
                row["listed"][row["letters"].index(row["answer"])]
                == (row["expert_action"])
            )
    assert any(r["improved"] for r in rows)
    # a margin no look-ahead beats: every answer is the learner's own
    assert not any(r["improved"] for r in gap_rows(out, 3, "v1+on_time", margin=1e9))


def test_against_pairs_two_learners_returns_by_seed(tmp_path, capsys) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    for who, out, seeds in (("greedy_eta", a, "0:3"), ("nearest", b, "1:4")):
        assert main(["--learner", who, "--scenarios", SCENARIO, "--seeds", seeds,
                     "--out", str(out)]) == 0  # fmt: skip
    capsys.readouterr()
    assert main(["--report", "--out", str(a), "--against", str(b)]) == 0
    table = capsys.readouterr().out

    def returns(out):  # noqa: ANN001, ANN202
        rows = (out / "episodes.jsonl").read_text().splitlines()
        return {e["seed"]: e["learner_return"] for e in map(json.loads, rows)}

    ra, rb = returns(a), returns(b)
    d = [ra[s] - rb[s] for s in (1, 2)]  # the seeds both hold
    line = next(x for x in table.splitlines() if x.startswith(f"| {SCENARIO} | 2 |"))
    assert f"{sum(d) / 2:+.2f} ±" in line
    assert main(["--report", "--out", str(a), "--against", str(tmp_path / "c")]) == 2
