"""``training.feeder_listing``: the listing lever measured (distilled sparing the feeders
against itself choosing among all), and the held-out pairing of comparison records."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from training.feeder_listing import held_out, main, measure


def test_measure_pairs_the_spared_and_unspared_distilled_on_the_same_seeds() -> None:
    out = measure(["festival_surge"], range(0, 2), ["distilled", "distilled_unspared"],
                  progress=False)  # fmt: skip
    t = out["scenarios"]["festival_surge"]
    diff = t["spared_minus_unspared"]
    for key in ("return", "overload_feeder_min", "shed_kwh"):
        want = t["distilled"][key] - t["distilled_unspared"][key]
        assert diff[key]["mean_diff"] == pytest.approx(want) and diff[key]["n"] == 2


def record(policy: str, seed: int, ret: float, minutes: float, shed: float) -> dict:
    return {"policy": policy, "scenario": "evening_peak", "seed": seed, "return": ret,
            "kpis": {"overload_feeder_min": minutes, "shed_kwh": shed}}  # fmt: skip


def write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_held_out_pairs_after_with_before_and_the_heuristic_kindest_to_the_feeders(
    tmp_path,
) -> None:
    seeds = (1, 2, 3)
    before = write(tmp_path / "before.jsonl",
                   [record("oracle", s, -100.0 - s, 30.0, 9.0) for s in seeds])  # fmt: skip
    after = write(tmp_path / "after.jsonl",
                  [record("oracle", s, -102.0 - s, 10.0 + s, 2.0) for s in seeds])  # fmt: skip
    report = write(tmp_path / "report.jsonl",
                   [record("greedy_eta", s, -130.0, 40.0, 20.0) for s in seeds]
                   + [record("urgency_first", s, -120.0, 12.0 + 2 * s, 4.0) for s in seeds])  # fmt: skip
    row = held_out(before, after, report)["evening_peak"]["oracle"]
    assert row["best_on_feeders"] == "urgency_first"  # the fewest feeder-minutes
    assert row["best_on_return"] == "urgency_first"  # -120 against -130
    assert row["minus_before"]["return"]["mean_diff"] == pytest.approx(-2.0)
    assert row["minus_before"]["overload_feeder_min"]["mean_diff"] == pytest.approx(
        -18.0
    )
    fewer = row["minus_best_on_feeders"]["overload_feeder_min"]
    assert fewer["mean_diff"] == pytest.approx(-4.0) and fewer["n"] == 3
    assert row["minus_best_on_feeders"]["shed_kwh"]["mean_diff"] == pytest.approx(-2.0)


def test_after_without_before_is_refused(tmp_path, capsys) -> None:
    with pytest.raises(SystemExit):
        main(["--after", str(tmp_path / "x.jsonl")])
    assert "--after needs --before" in capsys.readouterr().err
