"""``evgrid distill``: optimum labels -> LightGBM ranker -> portable trees, exactly."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("lightgbm")

from evgrid_cli.main import main  # noqa: E402
from evgrid_core.candidates import candidates  # noqa: E402
from evgrid_core.distilled import Distilled  # noqa: E402
from evgrid_core.rollout import play_episode  # noqa: E402
from evgrid_core.trees import load, save  # noqa: E402
from training.distill import (  # noqa: E402
    DistillConfig,
    build_dataset,
    distill,
    fit,
    to_ensemble,
)
from training.labels import label_runs, label_states, load_labels  # noqa: E402

SCENARIO = "quiet_night"  # the smallest named episode: solves well under a second
FAST = {"node_limit": 0, "time_limit_s": 60.0}
SMALL = replace(DistillConfig(), n_trees=40, min_data_in_leaf=5)


@pytest.fixture(scope="module")
def labels(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("labels")
    label_runs([SCENARIO], range(4), out, settings=FAST, progress=False)
    return out


def test_each_decision_is_one_group_with_the_optimum_marked_once(labels):
    rows = load_labels(labels)
    data = build_dataset(rows, progress=False)
    assert data.groups.sum() == len(data.y) == len(data.X)
    starts = np.concatenate([[0], np.cumsum(data.groups)])
    for a, b in zip(starts[:-1], starts[1:], strict=True):
        assert data.y[a:b].sum() == 1  # exactly the optimum's answer
    kept = {k[:3] for k in data.keys}
    for r, (obs, line) in zip(rows, label_states(rows), strict=True):
        if (r["scenario"], r["seed"], r["step"]) in kept:
            assert line in candidates(obs).lines
    # stranded-on-purpose rows are counted, not learnt
    strands = sum(r["planned_invalid"] for r in rows)
    assert sum(data.skipped.values()) >= strands


def test_exported_trees_score_exactly_as_lightgbm_and_learn_the_labels(labels):
    data = build_dataset(load_labels(labels), progress=False)
    booster = fit(data, SMALL)
    model = to_ensemble(booster, {})
    assert (
        np.abs(booster.predict(data.X, raw_score=True) - model.predict(data.X)).max()
        < 1e-9
    )
    from training.distill import agreement

    assert agreement(model, data) > 0.8  # it fits its own labels (untrained: ~1/n)


def test_the_same_labels_give_the_same_model_bytes(labels, tmp_path):
    for name in ("a", "b"):
        model, _ = distill(labels, SMALL, progress=False)
        save(model, tmp_path / f"{name}.json")
    assert (tmp_path / "a.json").read_bytes() == (tmp_path / "b.json").read_bytes()


def test_validation_seeds_are_left_out_of_the_fit_and_scored(labels):
    model, report = distill(labels, SMALL, validation_seeds=[3], progress=False)
    assert report["train_seeds"] == [[0, 3]] and report["validation_seeds"] == [[3, 4]]
    assert 0.0 <= report["validation_agreement"] <= 1.0
    assert model.meta["labels_sha256"] == report["labels_sha256"]


def test_evgrid_distill_labels_fits_writes_and_the_policy_plays_it(tmp_path, capsys):
    out = tmp_path / "model.json"
    args = ["distill", "--scenarios", SCENARIO, "--seeds", "0:2", "--labels",
            str(tmp_path / "labels"), "--node-limit", "0", "--trees", "20",
            "--out", str(out), "--no-progress"]  # fmt: skip
    assert main(args) == 0
    assert "wrote" in capsys.readouterr().out
    model = load(out)
    assert model.meta["train_seeds"] == [[0, 2]] and len(model.roots) == 20
    env = play_episode(Distilled(out), SCENARIO, 900_001)
    assert env.kpis.invalid == 0


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--seeds", "899990:900010"], "held-out"),
        (["--seeds", "0:4", "--validation-seeds", "5:6"], "within --seeds"),
        (["--trees", "0"], "--trees"),
        (["--look-ahead-rounds", "0"], "--look-ahead-rounds"),
        (
            [
                "--seeds",
                "0:4",
                "--validation-seeds",
                "3:4",
                "--look-ahead-seeds",
                "3:6",
            ],
            "overlap --validation-seeds",
        ),
        (["--look-ahead-seeds", "899999:900001"], "held-out"),
        (["--look-ahead-top-k", "1"], "--look-ahead-top-k"),
        (["--look-ahead-horizon", "0"], "--look-ahead-horizon"),
        (["--scenarios", "nowhere"], "nowhere"),
    ],
)
def test_bad_arguments_are_one_line_errors(tmp_path, capsys, extra, message):
    args = ["distill", "--labels", str(tmp_path), "--out", str(tmp_path / "m.json"),
            "--no-progress", *extra]  # fmt: skip
    assert main(args) == 2
    assert message in capsys.readouterr().err
