"""The report's figures say what they show: the waits' tail, one colour per reward
part, a legend without entries for lines that are not drawn, a title that matches its
table."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest
from matplotlib.colors import to_rgb

from evaluation.plots import REWARD_COLORS, figures
from evaluation.report import TABLE_KEYS, markdown, summary_json
from evaluation.runner import run_episode
from evgrid_core import REWARD_KEYS

SC = "quiet_night"  # the cheapest episode


@pytest.fixture(scope="module")
def episodes() -> list[dict]:
    return [run_episode(p, SC, s) for p in ("nearest", "greedy_eta") for s in (0, 1)]


def _copy(records: list[dict]) -> list[dict]:
    return json.loads(json.dumps(records))


def _close(figs: dict) -> None:
    import matplotlib.pyplot as plt

    for f in figs.values():
        plt.close(f)


def test_waits_whiskers_reach_the_tail_when_most_evs_wait_one_tick(episodes):
    """90 of 100 EVs wait 10 min, 10 wait 30: the box is a line at 10, and the
    whisker must still reach 30, the 95th percentile (1.5 IQR stopped at 10)."""
    recs = _copy(episodes)
    for r in recs:
        r["waits"] = [10.0] * 90 + [30.0] * 10
    figs = figures(recs, ["nearest", "greedy_eta"], SC)
    ax = figs["waits"].axes[0]
    lines = [ln for ln in ax.lines if ln.get_linestyle() != "None"]  # not markers
    assert max(float(np.max(ln.get_ydata())) for ln in lines) == 30.0
    assert "whiskers 5-95 %" in ax.get_title()
    _close(figs)


def test_every_reward_part_has_its_own_colour(episodes):
    assert set(REWARD_COLORS) == set(REWARD_KEYS)
    rgb = {k: np.array(to_rgb(c)) for k, c in REWARD_COLORS.items()}
    closest = min(
        np.linalg.norm(rgb[a] - rgb[b]) for a, b in itertools.combinations(rgb, 2)
    )
    assert closest > 60 / 255  # no two parts nearly the same colour
    recs = _copy(episodes)
    for r in recs:  # every part non-zero, so every part is stacked
        r["parts"] = {k: -1.0 - 0.1 * i for i, k in enumerate(REWARD_KEYS)}
    figs = figures(recs, ["nearest", "greedy_eta"], SC)
    legend = figs["reward_parts"].axes[0].get_legend()
    shown = {
        t.get_text(): to_rgb(h.get_facecolor())
        for t, h in zip(legend.get_texts(), legend.legend_handles, strict=True)
    }
    assert list(shown) == list(REWARD_KEYS)
    assert len(set(shown.values())) == len(REWARD_KEYS)  # wait and unmet differ
    _close(figs)


@pytest.mark.parametrize(
    ("policies", "others"),
    [
        (["nearest"], False),  # the one policy is highlighted: no grey lines
        (["nearest", "greedy_eta"], True),  # the worse heuristic is drawn grey
    ],
)
def test_feeder_legend_names_other_policies_only_when_drawn(episodes, policies, others):
    figs = figures(_copy(episodes), policies, SC)
    ax = figs["feeder_util"].axes[0]
    texts = [t.get_text() for t in ax.get_legend().get_texts()]
    assert ("other policies" in texts) is others
    grey = [ln for ln in ax.lines if ln.get_label().startswith("_") and
            ln.get_color() == "0.7"]  # fmt: skip
    assert bool(grey) is others
    _close(figs)


def _rec(policy: str, seed: int, ret: float) -> dict:
    return {
        "policy": policy,
        "scenario": "evening_peak",
        "seed": seed,
        "return": ret,
        "kpis": {k: 0.0 for k in TABLE_KEYS if k != "return"},
        "parts": dict.fromkeys(REWARD_KEYS, 0.0),
    }


def _summary_title(md: str) -> str:
    return next(ln for ln in md.splitlines() if ln.startswith("## Summary of returns"))


def test_summary_title_names_a_percentage_only_when_the_table_has_one():
    recs = [_rec("a", s, -10.0 - s) for s in (0, 1)]
    s = summary_json(recs, ["a"], ["evening_peak"], "a")
    md = markdown(s, ["a"], {})
    assert _summary_title(md) == "## Summary of returns (mean ± 95 % CI)"
    table = md[md.index("## Summary of returns") :]
    assert "| a | -10.5 ± 6.35 |" in table
    recs += [_rec("optimum", s, -5.0) for s in (0, 1)]
    s = summary_json(recs, ["a", "optimum"], ["evening_peak"], "a")
    md = markdown(s, ["a", "optimum"], {})
    title = _summary_title(md)
    assert title == "## Summary of returns (mean ± 95 % CI; in brackets % of optimal)"
    assert "| a | -10.5 ± 6.35 (47.7 %) |" in md
