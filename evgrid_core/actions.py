"""Decisions: typed actions, their one-line text form, and the one parser.

Every action has exactly one canonical text line (what the LLM writes)::

    ROUTE E17 S5 FAST        route EV 17 to station 5, fast DC charger
    DEFER E17 15             ask EV 17 to wait 15 minutes, then decide again
    LOAD_SHIFT S5 50 30      cap station 5 at 50 % of its limit for 30 minutes

The syntax is defined once, in ``ACTION_SYNTAX``: the parser's regular expression
and the Oracle's GBNF grammar are both generated from it, so they cannot drift.
``parse_action`` never raises; it returns an action or an ``Invalid`` with errors.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import lru_cache
from numbers import Integral
from typing import NamedTuple

from .chargers import KIND_NAMES, N_KINDS, ChargerKind

# --- Vocabulary -------------------------------------------------------------
# The charger kinds (ROUTE's last word) are the rows of ``chargers.CHARGERS``.
DEFER_MINUTES: tuple[int, ...] = (5, 10, 15, 20, 30, 45, 60)  # [min]
assert list(DEFER_MINUTES) == sorted(set(DEFER_MINUTES))  # rules.defer_options
SHIFT_CAP_PCT: tuple[int, ...] = (25, 50, 75)  # [% of station limit]
SHIFT_MINUTES: tuple[int, ...] = (15, 30, 45, 60)  # [min]

# --- Typed actions ------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Route:
    """Send EV ``ev`` to station ``station`` to charge on a ``kind`` charger."""

    ev: int
    station: int
    kind: ChargerKind


@dataclass(frozen=True, slots=True)
class Defer:
    """Ask EV ``ev`` to wait ``minutes`` before it is decided again."""

    ev: int
    minutes: int  # [min]


@dataclass(frozen=True, slots=True)
class LoadShift:
    """Cap station ``station`` at ``cap_pct`` % of its limit for ``minutes``."""

    station: int
    cap_pct: int  # [%]
    minutes: int  # [min]


@dataclass(frozen=True, slots=True)
class Invalid:
    """What the parser returns for text that is not an action."""

    text: str
    errors: tuple[str, ...]


Action = Route | Defer | LoadShift

# --- The one syntax definition --------------------------------------------------
# Each action: keyword, then its named fields, in the order of the line.


class SyntaxField(NamedTuple):
    """One word after an action's keyword: ``name`` (the typed field a client sends,
    e.g. the server's ``command`` form), ``kind`` "id" (``arg`` the prefix of
    E<n>/S<n>) or "choice" (``arg`` the words or numbers allowed)."""

    name: str
    kind: str
    arg: str | tuple[str, ...]


ACTION_SYNTAX: dict[str, tuple[SyntaxField, ...]] = {
    "ROUTE": (
        SyntaxField("ev", "id", "E"),
        SyntaxField("station", "id", "S"),
        SyntaxField("charger", "choice", KIND_NAMES),
    ),
    "DEFER": (
        SyntaxField("ev", "id", "E"),
        SyntaxField("minutes", "choice", tuple(str(m) for m in DEFER_MINUTES)),
    ),
    "LOAD_SHIFT": (
        SyntaxField("station", "id", "S"),
        SyntaxField("cap_pct", "choice", tuple(str(c) for c in SHIFT_CAP_PCT)),
        SyntaxField("minutes", "choice", tuple(str(m) for m in SHIFT_MINUTES)),
    ),
}
ID_DIGITS = r"[1-9][0-9]{0,3}"  # 1..9999, no leading zeros


def _field_regex(field: SyntaxField) -> str:
    if field.kind == "id":
        return f"{field.arg}({ID_DIGITS})"
    return "(" + "|".join(re.escape(str(v)) for v in field.arg) + ")"


_ACTION_RES = {
    kw: re.compile("^" + " ".join([kw, *map(_field_regex, fields)]) + "$")
    for kw, fields in ACTION_SYNTAX.items()
}
MAX_ACTION_CHARS = max(
    len(kw) + sum(1 + (5 if f.kind == "id" else max(map(len, f.arg))) for f in fields)
    for kw, fields in ACTION_SYNTAX.items()
)

# --- Format and parse -------------------------------------------------------------


def format_action(action: Action) -> str:
    """The canonical one-line text of a typed action.

    Whole numbers outside the syntax's sets are written as they are (``DEFER E1 7``:
    the parser refuses that line as it refuses the typed action); an action with no
    line at all (a NaN, a float, a kind that is not a charger kind) is a
    ``ValueError``. ``describe_action`` never raises.
    """
    if not _has_text(action):
        raise ValueError(f"{action!r} has no text form: {field_problem(action)}")
    return _text(action)


def _text(action: Action) -> str:
    """``format_action`` once ``_has_text`` has said yes."""
    if isinstance(action, Route):
        return f"ROUTE E{action.ev} S{action.station} {KIND_NAMES[action.kind]}"
    if isinstance(action, Defer):
        return f"DEFER E{action.ev} {action.minutes}"
    if isinstance(action, LoadShift):
        return f"LOAD_SHIFT S{action.station} {action.cap_pct} {action.minutes}"
    raise TypeError(f"not an action: {action!r}")


def describe_action(action: object) -> str:
    """The action's text, or its repr when it has none (``Defer(3, nan)``): what a
    step's info and a log show."""
    if type(action) is Route and _plain_route(action):  # the common case, at once
        return _text(action)
    return _text(action) if _has_text(action) else repr(action)[:200]  # type: ignore[arg-type]


def _has_text(action: object) -> bool:
    kind = type(action)
    if kind is Route:
        return (_whole(action.ev) and _whole(action.station)  # type: ignore[union-attr]
                and _whole(action.kind) and 0 <= action.kind < N_KINDS)  # type: ignore[union-attr]  # fmt: skip
    if kind is Defer:
        return _whole(action.ev) and _whole(action.minutes)  # type: ignore[union-attr]
    if kind is LoadShift:
        return (_whole(action.station) and _whole(action.cap_pct)  # type: ignore[union-attr]
                and _whole(action.minutes))  # type: ignore[union-attr]  # fmt: skip
    return False


# --- Field checks -------------------------------------------------------------------
# The typed dataclasses admit any value (a policy's bug must reach the validator,
# which refuses it like any invalid answer); this is what the text syntax already
# forbids, stated for the typed form: every way an action arrives (text, typed,
# an index, the wire) is judged by it first (``rules.validate_action``).


def _whole(value: object) -> bool:
    """A whole number: an int or numpy integer, not a bool, NaN or a float."""
    kind = type(value)
    if kind is int or kind is ChargerKind:  # the common cases, without the ABC check
        return True
    return kind is not bool and isinstance(value, Integral)


def field_problem(action: object) -> str | None:
    """Why the action's fields are outside the syntax (None when they are within).

    Ids must be whole numbers from 1, the kind one of the charger kinds, DEFER's and
    LOAD_SHIFT's numbers from their fixed sets: exactly what the parser accepts.
    Whether the named EV or station may take it now is the validator's question.
    """
    if type(action) is Route and _plain_route(action):  # the common case, at once
        return None
    if not isinstance(action, Action):
        return f"not an action: {type(action).__name__}"
    for name in ("ev", "station"):
        if hasattr(action, name):
            value = getattr(action, name)
            if not _whole(value) or value < 1:
                return f"{name} must be a whole number from 1, got {_show(value)}"
    if isinstance(action, Route):
        kind = action.kind
        if not _whole(kind) or not 0 <= kind < N_KINDS:
            return f"kind must be one of {'|'.join(KIND_NAMES)}, got {_show(kind)}"
    elif isinstance(action, Defer):
        if not _whole(action.minutes) or action.minutes not in DEFER_MINUTES:
            return _choice("DEFER minutes", DEFER_MINUTES, action.minutes)
    else:
        if not _whole(action.cap_pct) or action.cap_pct not in SHIFT_CAP_PCT:
            return _choice("LOAD_SHIFT cap_pct", SHIFT_CAP_PCT, action.cap_pct)
        if not _whole(action.minutes) or action.minutes not in SHIFT_MINUTES:
            return _choice("LOAD_SHIFT minutes", SHIFT_MINUTES, action.minutes)
    return None


def _plain_route(r: Route) -> bool:
    """A Route whose fields are plain ints (and a ChargerKind) within the syntax."""
    return (type(r.ev) is int and type(r.station) is int and r.ev >= 1
            and r.station >= 1 and type(r.kind) is ChargerKind)  # fmt: skip


def _choice(what: str, allowed: tuple[int, ...], got: object) -> str:
    return f"{what} must be one of {', '.join(map(str, allowed))}, got {_show(got)}"


def _show(value: object) -> str:
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def parse_action(text: object) -> Action | Invalid:
    """Parse one action line. Never raises.

    Surrounding whitespace (a trailing newline from a model) is ignored; the line
    itself must be canonical: upper-case keyword, single spaces, ids without
    leading zeros, values from the allowed sets.
    """
    if not isinstance(text, str):
        return Invalid(
            repr(text)[:200], (f"expected a text line, got {type(text).__name__}",)
        )
    return _parse_short(text) if len(text) <= 64 else _parse(text)


def _parse(text: str) -> Action | Invalid:
    """``parse_action`` of a ``str``."""
    line = text.strip()
    if not line:
        return Invalid(text[:200], ("empty action",))
    if "\n" in line or "\r" in line:
        return Invalid(text[:200], ("more than one line",))
    keyword = line.split(" ", 1)[0]
    pattern = _ACTION_RES.get(keyword)
    if pattern is None:
        known = ", ".join(ACTION_SYNTAX)
        return Invalid(
            line[:200], (f"unknown action {keyword[:40]!r}; expected one of {known}",)
        )
    match = pattern.match(line)
    if match is None:
        return Invalid(line[:200], (f"malformed {keyword}: expected {usage(keyword)}",))
    g = match.groups()
    if keyword == "ROUTE":
        return Route(int(g[0]), int(g[1]), ChargerKind[g[2]])
    if keyword == "DEFER":
        return Defer(int(g[0]), int(g[1]))
    return LoadShift(int(g[0]), int(g[1]), int(g[2]))


# A policy writes the same few hundred lines again and again, and what a line parses
# to is immutable (frozen dataclasses): the short ones are parsed once.
_parse_short = lru_cache(maxsize=4096)(_parse)


def usage(keyword: str) -> str:
    """A human-readable template of one action, e.g. 'ROUTE E<n> S<n> SLOW|FAST|ULTRA'."""
    parts = [keyword]
    for _, kind, arg in ACTION_SYNTAX[keyword]:
        parts.append(f"{arg}<n>" if kind == "id" else "|".join(map(str, arg)))  # type: ignore[arg-type]
    return " ".join(parts)


def action_contract() -> str:
    """The answer contract an LLM is shown: one template per line."""
    return "\n".join(usage(k) for k in ACTION_SYNTAX)
