"""The parser: table-driven cases (each with why), and properties on random strings."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evgrid_core import (
    ChargerKind,
    Defer,
    Invalid,
    LoadShift,
    Route,
    format_action,
    parse_action,
)
from evgrid_core.actions import ACTION_SYNTAX, MAX_ACTION_CHARS, action_contract

ACCEPT = [
    ("ROUTE E17 S5 FAST", Route(17, 5, ChargerKind.FAST), "canonical route"),
    (
        "ROUTE E1 S25 ULTRA",
        Route(1, 25, ChargerKind.ULTRA),
        "smallest EV id, largest station id",
    ),
    (
        "ROUTE E9999 S1 SLOW",
        Route(9999, 1, ChargerKind.SLOW),
        "largest id the syntax allows",
    ),
    ("DEFER E3 15", Defer(3, 15), "canonical defer"),
    ("DEFER E3 60", Defer(3, 60), "longest defer"),
    ("LOAD_SHIFT S5 50 30", LoadShift(5, 50, 30), "canonical load shift"),
    (
        "  ROUTE E17 S5 FAST\n",
        Route(17, 5, ChargerKind.FAST),
        "a model's trailing newline is ignored",
    ),
    (
        "ROUTE E99 S99 SLOW",
        Route(99, 99, ChargerKind.SLOW),
        "syntax only: S99 is the validator's job",
    ),
]
REJECT = [
    ("", "empty"),
    ("   \n ", "only whitespace"),
    ("route E17 S5 FAST", "keywords are upper-case"),
    ("ROUTE E17 S5 fast", "kinds are upper-case"),
    ("ROUTE  E17 S5 FAST", "double space"),
    ("ROUTE E17 S5", "missing kind"),
    ("ROUTE E17 S5 FAST now", "trailing words"),
    ("ROUTE E017 S5 FAST", "leading zero in an id"),
    ("ROUTE E0 S5 FAST", "ids start at 1"),
    ("ROUTE E10000 S5 FAST", "ids have at most 4 digits"),
    ("ROUTE 17 5 FAST", "ids need their E/S prefix"),
    ("ROUTE S5 E17 FAST", "fields in the wrong order"),
    ("ROUTE E17 S5 TURBO", "unknown charger kind"),
    ("DEFER E3 7", "7 is not an allowed defer length"),
    ("DEFER E3 -5", "negative minutes"),
    ("DEFER E3", "missing minutes"),
    ("LOAD_SHIFT S5 50", "missing minutes"),
    ("LOAD_SHIFT S5 33 30", "33 % is not an allowed cap"),
    ("LOAD_SHIFT S5 50 20", "20 min is not an allowed shift length"),
    ("ROUTE E17 S5 FAST\nDEFER E17 5", "two lines"),
    ("NOOP", "unknown action"),
    ("I think ROUTE E17 S5 FAST", "chatter before the action"),
    ("ROUTE E17 S5 FAST.", "punctuation"),
    ("ROUTE\tE17 S5 FAST", "tab instead of space"),
    ("ＲＯＵＴＥ E17 S5 FAST", "full-width letters"),
]


@pytest.mark.parametrize(("text", "expected", "why"), ACCEPT)
def test_parser_accepts(text: str, expected: object, why: str) -> None:
    assert parse_action(text) == expected, why


@pytest.mark.parametrize(("text", "why"), REJECT)
def test_parser_rejects_with_errors(text: str, why: str) -> None:
    result = parse_action(text)
    assert isinstance(result, Invalid), why
    assert result.errors and all(isinstance(e, str) and e for e in result.errors)


@pytest.mark.parametrize("value", [None, 17, b"ROUTE E1 S1 FAST", ["ROUTE"], 3.5])
def test_parser_rejects_non_text(value: object) -> None:
    result = parse_action(value)
    assert isinstance(result, Invalid)
    assert "expected a text line" in result.errors[0]


def test_error_names_the_expected_form() -> None:
    result = parse_action("ROUTE E17 S5")
    assert isinstance(result, Invalid)
    assert "ROUTE E<n> S<n> SLOW|FAST|ULTRA" in result.errors[0]


def test_contract_lists_every_action() -> None:
    contract = action_contract().splitlines()
    assert [line.split()[0] for line in contract] == list(ACTION_SYNTAX)


def test_max_action_chars_bounds_every_canonical_line() -> None:
    longest = "LOAD_SHIFT S9999 75 60"
    assert len(longest) <= MAX_ACTION_CHARS
    assert parse_action(longest) == LoadShift(9999, 75, 60)


# --- Properties -----------------------------------------------------------------------
ALPHABET = "ROUTEDFLAD_SHIFTSLOWFASTULTRAE0123456789 \n\t-_.xyz"
valid_lines = st.one_of(
    st.builds(lambda e, s, k: f"ROUTE E{e} S{s} {k}", st.integers(1, 9999), st.integers(1, 9999),
              st.sampled_from(["SLOW", "FAST", "ULTRA"])),
    st.builds(lambda e, m: f"DEFER E{e} {m}", st.integers(1, 9999), st.sampled_from([5, 10, 15, 20, 30, 45, 60])),
    st.builds(lambda s, c, m: f"LOAD_SHIFT S{s} {c} {m}", st.integers(1, 9999), st.sampled_from([25, 50, 75]),
              st.sampled_from([15, 30, 45, 60])),
)  # fmt: skip


def _mutate(line: str, data: st.DataObject) -> str:
    i = data.draw(st.integers(0, len(line)))
    op = data.draw(st.sampled_from(["insert", "delete", "replace", "swapcase"]))
    ch = data.draw(st.sampled_from(list(ALPHABET)))
    if op == "insert":
        return line[:i] + ch + line[i:]
    if op == "delete":
        return line[:i] + line[i + 1 :]
    if op == "replace":
        return line[:i] + ch + line[i + 1 :]
    return line.swapcase()


def _check(text: str) -> None:
    result = parse_action(text)  # must never raise
    if not isinstance(result, Invalid):
        canonical = format_action(result)
        assert canonical == text.strip(), "accepted text must already be canonical"
        assert parse_action(canonical) == result


@settings(max_examples=400, deadline=None)
@given(st.text(max_size=60))
def test_random_text_never_raises_and_accepted_round_trips(text: str) -> None:
    _check(text)


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=ALPHABET, max_size=40))
def test_action_like_text_never_raises(text: str) -> None:
    _check(text)


@settings(max_examples=400, deadline=None)
@given(valid_lines, st.data())
def test_mutated_actions_never_raise_and_round_trip(
    line: str, data: st.DataObject
) -> None:
    assert not isinstance(parse_action(line), Invalid)
    _check(line)
    _check(_mutate(line, data))
