"""Look-ahead labels on the learner's own states (``training/dagger.py``)."""

from __future__ import annotations

import json
from dataclasses import asdict, replace

import pytest

pytest.importorskip("lightgbm")

from evgrid_cli.main import main  # noqa: E402
from evgrid_core import EVGridEnv  # noqa: E402
from evgrid_core.candidates import candidates  # noqa: E402
from evgrid_core.distilled import MODEL_PATH, Distilled  # noqa: E402
from evgrid_core.rollout import play_episode  # noqa: E402
from evgrid_core.trees import load  # noqa: E402
from training.dagger import (  # noqa: E402
    EPISODES_FILE,
    LookAhead,
    load_rollout_labels,
    rollout_episode,
    rollout_runs,
    rollout_states,
)
from training.distill import build_dataset  # noqa: E402

SCENARIO = "quiet_night"  # the smallest named episode
LOOK = LookAhead(top_k=3, horizon_ticks=6)


@pytest.fixture(scope="module")
def episode():
    return rollout_episode(SCENARIO, 7, str(MODEL_PATH), asdict(LOOK))


def test_the_model_plays_its_own_episode_and_every_label_is_a_tried_best(episode):
    rows, summary = episode
    env = play_episode(Distilled(), SCENARIO, 7)
    assert summary["model_return"] == pytest.approx(env.kpis.total_return, abs=1e-9)
    assert rows and summary["decisions"] == len(rows)
    for r in rows:
        if not r["returns"]:  # one candidate: nothing to try
            assert r["action"] == r["played"]
            continue
        assert r["played"] in r["returns"] and r["action"] in r["returns"]
        best = max(r["returns"].values())
        if r["action"] != r["played"]:  # relabelled: it beat the pick by the margin
            assert r["returns"][r["action"]] == best
            assert best > r["returns"][r["played"]] + LOOK.margin
        else:
            assert best <= r["returns"][r["played"]] + LOOK.margin


def _check_tried_returns(rows, seed: int, horizon_ticks: int | None) -> None:
    """Re-create the first state with more than one tried line by replay; each tried
    line's return is that line + the model's play for ``horizon_ticks`` (None: to
    the episode's end)."""
    r = next(r for r in rows if len(r["returns"]) > 1)
    env = EVGridEnv()
    env.reset(seed=seed, scenario=SCENARIO)
    for prev in rows[: r["step"]]:
        env.step(prev["played"])
    assert env.request_id == r["ev"]
    until = None if horizon_ticks is None else env.tick + horizon_ticks
    policy = Distilled()
    for line, expected in r["returns"].items():
        e = env.clone()
        total = e.step(line).reward
        while not e.done and (until is None or e.tick < until):
            total += e.step(policy.act(e.observation())).reward
        assert total == pytest.approx(expected, abs=1e-9)


def test_a_label_return_is_the_env_played_on_from_that_state(episode):
    """Re-create one state by replay; the label's return is that action + the model's play."""
    rows, _ = episode
    _check_tried_returns(rows, 7, LOOK.horizon_ticks)


def test_rows_replay_to_their_states_and_build_one_group_each(tmp_path):
    rollout_runs([SCENARIO], range(2), tmp_path, MODEL_PATH, LOOK, progress=False)
    rows = load_rollout_labels(tmp_path)
    for r, (obs, label) in zip(rows, rollout_states(rows), strict=True):
        assert obs.request is not None and obs.request.id == r["ev"]
        assert label in candidates(obs).lines
    data = build_dataset(rows, progress=False, look_ahead=True)
    assert all(k[3] for k in data.keys)
    assert data.y.sum() == len(data.groups)  # one label per group


def test_resume_skips_done_episodes_and_refuses_another_look_ahead(tmp_path):
    assert len(rollout_runs([SCENARIO], range(1), tmp_path, MODEL_PATH, LOOK,
                            progress=False)) == 1  # fmt: skip
    before = (tmp_path / EPISODES_FILE).read_text()
    assert rollout_runs([SCENARIO], range(1), tmp_path, MODEL_PATH, LOOK,
                        progress=False) == []  # fmt: skip
    assert (tmp_path / EPISODES_FILE).read_text() == before
    with pytest.raises(ValueError, match="another model or look-ahead"):
        rollout_runs([SCENARIO], range(2), tmp_path, MODEL_PATH,
                     replace(LOOK, top_k=2), progress=False)  # fmt: skip


def test_evgrid_distill_look_ahead_fits_on_both_label_kinds(tmp_path, capsys):
    out = tmp_path / "model.json"
    args = ["distill", "--scenarios", SCENARIO, "--seeds", "0:2", "--labels",
            str(tmp_path / "labels"), "--node-limit", "0", "--trees", "20",
            "--look-ahead-seeds", "0:1", "--look-ahead-rounds", "2", "--workers", "1",
            "--out", str(out), "--no-progress"]  # fmt: skip
    assert main(args) == 0
    meta = load(out).meta
    rounds = meta["look_ahead"]
    assert [r["round"] for r in rounds] == [1, 2]
    assert all(r["episodes"] == {SCENARIO: [[0, 1]]} and r["decisions"] > 0
               for r in rounds)  # fmt: skip
    # round 2 played the fit on round 1's labels: another model than round 1's
    sha = [json.loads((tmp_path / "labels" / f"look-ahead-{i}" / EPISODES_FILE)
                      .read_text().splitlines()[0])["model_sha256"] for i in (1, 2)]  # fmt: skip
    assert sha[0] != sha[1]


def test_the_default_look_ahead_plays_each_candidate_to_the_episode_end():
    """The committed model's round: no horizon, every tried line played to the end."""
    assert LookAhead().horizon_ticks is None
    rows, _ = rollout_episode(SCENARIO, 3, str(MODEL_PATH), asdict(LookAhead()))
    _check_tried_returns(rows, 3, None)


def test_look_ahead_seeds_need_no_optimum_label(tmp_path):
    """Look-ahead episodes on seeds the optimum never solved join the fit."""
    out = tmp_path / "model.json"
    args = ["distill", "--scenarios", SCENARIO, "--seeds", "0:1", "--labels",
            str(tmp_path / "labels"), "--node-limit", "0", "--trees", "20",
            "--look-ahead-seeds", "1:2", "--look-ahead-top-k", "2",
            "--look-ahead-horizon", "6", "--workers", "1", "--out", str(out),
            "--no-progress"]  # fmt: skip
    assert main(args) == 0
    meta = load(out).meta
    assert meta["look_ahead"][0]["episodes"] == {SCENARIO: [[1, 2]]}
    assert meta["train_seeds"] == [[0, 2]]  # the optimum's seed 0, look-ahead's 1
    first = json.loads((tmp_path / "labels" / "look-ahead-1" / EPISODES_FILE)
                       .read_text().splitlines()[0])  # fmt: skip
    assert first["look_ahead"] == asdict(LookAhead(top_k=2, horizon_ticks=6))


def test_the_committed_look_ahead_labels_are_the_ones_the_model_was_fit_on(tmp_path):
    """training/data/look-ahead-labels.tgz holds the committed model's look-ahead round:
    its rows hash to the round's sha256 in the model's meta, and the model that played
    them is the fit on the optimum's labels alone (the round's first step)."""
    import hashlib
    import tarfile

    from training.config import REPO_ROOT
    from training.distill import labels_sha256

    tgz = REPO_ROOT / "training" / "data" / "look-ahead-labels.tgz"
    with tarfile.open(tgz) as t:
        t.extractall(tmp_path)  # the project's own file (3.11.2 has no filter=)
    rows = load_rollout_labels(tmp_path / "look-ahead-1")
    meta = load(MODEL_PATH).meta
    (round1,) = meta["look_ahead"]
    assert labels_sha256(rows) == round1["sha256"]
    assert len(rows) == round1["decisions"]
    assert sum(r["action"] != r["played"] for r in rows) == round1["relabelled"]
    summaries = [json.loads(line) for line in
                 (tmp_path / "look-ahead-1" / EPISODES_FILE).read_text().splitlines()]  # fmt: skip
    assert {s["look_ahead"]["top_k"] for s in summaries} == {5}
    assert {s["look_ahead"]["horizon_ticks"] for s in summaries} == {None}
    played = tmp_path / "look-ahead-1" / "model-played.json"
    sha = hashlib.sha256(played.read_bytes()).hexdigest()
    assert {s["model_sha256"] for s in summaries} == {sha}
    first_fit = load(played).meta
    assert "look_ahead" not in first_fit
    assert first_fit["labels_sha256"] == meta["labels_sha256"]
