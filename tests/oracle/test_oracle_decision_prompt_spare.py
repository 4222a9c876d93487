"""The "+spare" listing: after "+on_time", the ROUTEs onto a feeder forecast over its
limit (``Candidates.overloading``) are left out while another option stays listed, so
the Oracle chooses as ``distilled`` does (``Candidates.sparing``); never an empty list."""

from __future__ import annotations

import pytest
from test_oracle_decision_prompt import observations

from evgrid_core.actions import Route
from evgrid_core.candidates import candidates
from oracle.prompt import PROMPT_STYLES, decision_prompt


@pytest.mark.parametrize("style", ["v1", "v2"])
@pytest.mark.parametrize(
    ("scenario", "seed"), [("festival_surge", 3), ("feeder_fault", 4)]
)
def test_overloading_routes_are_left_out_while_another_option_stays(
    style, scenario, seed
) -> None:
    assert f"{style}+on_time+spare" in PROMPT_STYLES
    pruned = 0
    for _env, obs in observations(scenario, seed=seed, limit=300):
        on_time = decision_prompt(obs, style=f"{style}+on_time")
        spare = decision_prompt(obs, style=f"{style}+on_time+spare")
        if not on_time.lines:
            assert not spare.lines
            continue
        assert spare.lines  # never empties what "+on_time" lists
        c = candidates(obs)
        over = dict(zip(c.lines, c.overloading(), strict=True))
        route = {
            x: isinstance(a, Route) for x, a in zip(c.lines, c.actions, strict=True)
        }
        # the DEFERs stay as they were; no overloading ROUTE is listed while another
        # option of the on-time listing exists
        assert [x for x in spare.lines if not route[x]] == [
            x for x in on_time.lines if not route[x]
        ]
        if not all(over[x] for x in on_time.lines):
            assert not any(over[x] for x in spare.lines)
        else:
            assert spare == on_time  # every option overloads: nothing left out
        pruned += spare != on_time
        assert spare.letters == tuple("ABCDEFGHIJKLMNOP"[: len(spare.lines)])
    assert pruned > 0  # the listing did leave something out on these seeds
