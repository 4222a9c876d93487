"""Optimum-labelled states: one row per decision, exact replay, resume, seed checks.

quiet_night is the smallest named episode (15-32 EVs, a solve well under a second
at node limit 0); its seed 2's optimum strands one EV on purpose (``STRAND``).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from evgrid_cli.main import main
from training.labels import (
    DECISIONS_FILE,
    EPISODES_FILE,
    HELDOUT_FIRST_SEED,
    label_runs,
    label_states,
    load_labels,
    parse_seeds,
    restore_label_env,
)

SCENARIO = "quiet_night"
FAST = {
    "node_limit": 0,
    "time_limit_s": 60.0,
}  # a work-limited solve: fast, reproducible
ROOT = Path(__file__).resolve().parents[2]


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _run(out: Path, seeds: list[int], **kw) -> list[dict]:
    return label_runs([SCENARIO], seeds, out, settings=FAST, progress=False, **kw)


def test_one_row_per_decision_and_each_replays_to_its_state(tmp_path):
    summaries = {e["seed"]: e for e in _run(tmp_path, [1, 2])}
    rows = load_labels(tmp_path)
    for seed, ep in summaries.items():
        mine = [r for r in rows if r["seed"] == seed]
        # every env.step of the replay is a row, steps 0..n-1, each plan line used once
        assert [r["step"] for r in mine] == list(range(ep["decisions"]))
        assert ep["decisions"] == sum(len(v) for v in ep["plan"].values())
        assert ep["source"] == "milp" and ep["refused_steps"] == 0
        for r in mine:
            env = restore_label_env(
                [x["action"] for x in mine[: r["step"]]], SCENARIO, seed
            )
            assert env.request_id == r["ev"]  # the row's EV is deciding
            valid = env.step(r["action"]).info["valid"]
            # valid, except the optimum's planned STRAND (refused by the env)
            assert valid == r["valid"] == (not r["planned_invalid"])
            assert r["planned_invalid"] == (r["action"] == "STRAND")
            assert r["replay_return"] == ep["replay_return"]
        assert env.done and env.kpis.total_return == pytest.approx(ep["replay_return"])
    assert summaries[1]["planned_invalid"] == 0
    assert summaries[2]["planned_invalid"] == 1  # seed 2 strands one EV on purpose
    # the trainer's iterator: one (observation, action) per row, same EV deciding
    states = list(label_states(rows))
    assert len(states) == len(rows)
    assert [obs.request.id for obs, _ in states] == [r["ev"] for r in rows]
    assert [a for _, a in states] == [r["action"] for r in rows]


def test_resume_skips_done_seeds_and_appends_nothing_twice(tmp_path):
    first = _run(tmp_path, [1])
    again = _run(tmp_path, [1, 2])
    assert [e["seed"] for e in first] == [1] and [e["seed"] for e in again] == [2]
    assert _run(tmp_path, [1, 2]) == []
    keys = [(r["seed"], r["step"]) for r in _lines(tmp_path / DECISIONS_FILE)]
    assert len(keys) == len(set(keys)) == sum(e["decisions"] for e in first + again)
    assert len(_lines(tmp_path / EPISODES_FILE)) == 2


def test_a_killed_run_is_recovered(tmp_path):
    _run(tmp_path, [1, 2])
    decisions = (tmp_path / DECISIONS_FILE).read_text()
    episodes = (tmp_path / EPISODES_FILE).read_text().splitlines(keepends=True)
    # killed while writing the second summary: its rows are in, its summary torn
    (tmp_path / EPISODES_FILE).write_text(episodes[0] + episodes[1][:40])
    (tmp_path / DECISIONS_FILE).write_text(decisions + decisions[:30])  # torn row too
    redone = _run(tmp_path, [1, 2])
    assert len(redone) == 1  # only the episode whose summary was torn
    assert (tmp_path / DECISIONS_FILE).read_text().count("\n") == decisions.count("\n")
    rows = _lines(tmp_path / DECISIONS_FILE)  # every line parses
    assert len({(r["seed"], r["step"]) for r in rows}) == len(rows)
    assert len(_lines(tmp_path / EPISODES_FILE)) == 2


def test_require_proven_writes_summaries_only_for_unproven_solves(tmp_path):
    new = _run(tmp_path, [1], require_proven=True)
    assert not new[0]["proven_optimal"]  # node limit 0: work-limited
    assert not new[0]["labelled"] and new[0]["decisions"] > 0
    assert (tmp_path / DECISIONS_FILE).read_text() == ""
    assert load_labels(tmp_path) == []
    assert _run(tmp_path, [1], require_proven=True) == []  # not solved again


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0:40", range(0, 40)),  # the usual training range
        ("7", range(7, 8)),  # one seed
        (
            f"0:{HELDOUT_FIRST_SEED}",
            range(HELDOUT_FIRST_SEED),
        ),  # ends where held-out begin
        (f"0:{HELDOUT_FIRST_SEED + 1}", "overlap the held-out"),  # takes one held-out
        (str(HELDOUT_FIRST_SEED), "overlap the held-out"),  # a held-out seed alone
        ("5:3", "FIRST < LAST"),  # empty range
        ("-1:3", "FIRST < LAST"),  # negative seed
        ("a:b", "FIRST:LAST"),  # not numbers
        ("1:2:3", "FIRST < LAST"),  # too many parts
    ],
)
def test_seed_ranges(text, expected):
    if isinstance(expected, range):
        assert parse_seeds(text) == expected
    else:
        with pytest.raises(ValueError, match=expected):
            parse_seeds(text)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--scenarios", "atlantis"], "unknown scenario 'atlantis'"),
        (["--seeds", "899999:900002"], "overlap the held-out seeds"),
        (["--seeds", "3:3"], "FIRST < LAST"),
        (["--workers", "0"], "--workers must be >= 1"),
        (["--node-limit", "-1"], "--node-limit must be >= 0"),
    ],
)
def test_bad_input_is_a_one_line_error(argv, message, tmp_path, capsys):
    assert main(["labels", "--out", str(tmp_path), *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("evgrid labels: error:") and message in err
    assert "\n" not in err


def test_unwritable_out_dir_is_a_one_line_error(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("")  # a file where the folder should go
    assert main(["labels", "--scenarios", SCENARIO, "--out", str(blocker / "x")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("evgrid labels: error: output folder") and "\n" not in err


def test_cli_help_and_a_tiny_run_with_two_workers(tmp_path):
    cmd = [sys.executable, "-m", "evgrid_cli", "labels"]
    help_text = subprocess.run(
        [*cmd, "--help"], capture_output=True, text=True, check=True, cwd=ROOT
    ).stdout
    assert "--require-proven" in help_text and "--seeds" in help_text
    out = subprocess.run(
        [*cmd, "--scenarios", SCENARIO, "--seeds", "1:3", "--out", str(tmp_path),
         "--workers", "2", "--node-limit", "0", "--no-progress"],
        capture_output=True, text=True, check=True, cwd=ROOT,
    ).stdout  # fmt: skip
    episodes = _lines(tmp_path / EPISODES_FILE)
    assert sorted(e["seed"] for e in episodes) == [1, 2]
    n_rows = len(_lines(tmp_path / DECISIONS_FILE))
    assert n_rows == sum(e["decisions"] for e in episodes)
    assert out.startswith(
        f"2 episodes solved (0 proven optimal), {n_rows} decision rows"
    )
