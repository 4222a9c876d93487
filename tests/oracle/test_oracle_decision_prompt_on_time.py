"""The "+on_time" listing: the ROUTEs the core calls late (``Candidates.late``) are
left out of the decision prompt when an on-time ROUTE exists; the stations listed are
the nearest with an option left; everything else reads as in the plain style."""

from __future__ import annotations

import numpy as np
import pytest
from test_oracle_decision_prompt import observations

from evgrid_core.actions import Route
from evgrid_core.candidates import candidates
from oracle.prompt import DECISION_STATIONS, decision_prompt


@pytest.mark.parametrize("style", ["v1", "v2"])
def test_late_routes_are_left_out_when_an_on_time_one_exists(style) -> None:
    pruned = 0
    for _env, obs in observations("festival_surge", seed=3, limit=200):
        plain = decision_prompt(obs, style=style)
        on_time = decision_prompt(obs, style=f"{style}+on_time")
        if not plain.lines:
            assert not on_time.lines
            continue
        c = candidates(obs)
        late = dict(zip(c.lines, c.late(), strict=True))
        route = {
            line: isinstance(a, Route)
            for line, a in zip(c.lines, c.actions, strict=True)
        }
        any_on_time = any(route[x] and not late[x] for x in c.lines)
        # the DEFERs are the same; a ROUTE is listed only if on time (or none is)
        assert [x for x in on_time.lines if not route[x]] == [
            x for x in plain.lines if not route[x]
        ]
        if any_on_time:
            assert not any(late[x] for x in on_time.lines)
        if not any(late[x] for x in c.lines) or not any_on_time:
            assert on_time == plain  # nothing to leave out: the same prompt
            continue
        # the stations listed: the nearest DECISION_STATIONS with an on-time ROUTE
        on_time_stations = {
            a.station
            for x, a in zip(c.lines, c.actions, strict=True)
            if route[x] and not late[x]
        }
        travel = {
            a.station: c.column("travel_min")[i]
            for i, a in enumerate(c.actions)
            if isinstance(a, Route)
        }
        nearest = sorted(on_time_stations, key=lambda s: (travel[s], s))
        nearest = nearest[:DECISION_STATIONS]
        listed = [c.actions[c.lines.index(x)] for x in on_time.lines if route[x]]
        assert sorted({a.station for a in listed}) == sorted(nearest)
        for s in nearest:  # every on-time kind there
            want = {x for x in c.lines if route[x] and not late[x]}
            want = {x for x in want if c.actions[c.lines.index(x)].station == s}
            assert want == {x for x in on_time.lines if x in want}
        assert on_time.letters == tuple("ABCDEFGHIJKLMNOP"[: len(on_time.lines)])
        pruned += on_time.lines != plain.lines
    assert pruned > 10  # the surge's queues make late ROUTEs common


def test_the_option_lines_read_as_in_the_plain_style() -> None:
    seen = 0
    for _env, obs in observations("festival_surge", seed=4, limit=150):
        plain = decision_prompt(obs, style="v1")
        on_time = decision_prompt(obs, style="v1+on_time")
        if plain == on_time or not on_time.lines:
            continue
        text_plain = plain.messages[1]["content"].splitlines()
        text_on = on_time.messages[1]["content"].splitlines()
        assert text_on[:2] == text_plain[:2]  # clock, request
        # the charge minutes of the kinds still listed, as before
        assert set(text_on[2].split()) <= set(text_plain[2].split())
        body = {  # option text without its letter, keyed by the action line
            line: t[2:]
            for p, txt in ((plain, text_plain), (on_time, text_on))
            for line, letter in zip(p.lines, p.letters, strict=True)
            for t in txt
            if t.startswith(f"{letter} ")
        }
        for line, letter in zip(on_time.lines, on_time.letters, strict=True):
            (row,) = [t for t in text_on if t.startswith(f"{letter} ")]
            assert row[2:] == body[line]
        seen += 1
    assert seen > 5


def test_late_is_the_cores_plug_in_after_the_slack() -> None:
    for _env, obs in observations("festival_surge", seed=5, limit=80):
        c = candidates(obs)
        if not len(c):
            continue
        plug = c.column("travel_min") + c.column("wait_inbound_min")
        route = c.column("is_defer") == 0
        np.testing.assert_array_equal(c.late(), route & (plug > c.column("slack_min")))
