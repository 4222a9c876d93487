"""GBNF grammars for the action line, generated from the core's one syntax definition.

``action_grammar()`` is the whole action language, built from
``evgrid_core.actions.ACTION_SYNTAX`` and ``ID_DIGITS`` (the same definition the
parser's regular expression is generated from), so grammar and parser cannot drift.
``step_grammar(obs)`` narrows it to what is valid right now: the request's EV id,
the (station, kind) pairs its ``route_mask`` allows, its valid defer minutes, and the
stations a LOAD_SHIFT may cap this tick. ``allowed_actions(obs)`` lists that same
language as text lines (for checking a model's answer without the grammar).

A grammar accepts the canonical line only; the parser also forgives surrounding
whitespace, which a grammar-constrained model never writes.
"""

from __future__ import annotations

import re

import numpy as np

from evgrid_core import ACTION_SYNTAX, ChargerKind, Observation, format_action
from evgrid_core.actions import ID_DIGITS, MAX_ACTION_CHARS, Defer, LoadShift, Route

# --- GBNF building blocks -------------------------------------------------------------


def literal(text: str) -> str:
    """A GBNF string literal."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def alternatives(options: list[str]) -> str:
    """``( a | b | c )`` of already-written GBNF terms (a single term stays bare)."""
    if not options:
        raise ValueError("no alternatives")
    return options[0] if len(options) == 1 else "(" + " | ".join(options) + ")"


def rule_name(keyword: str) -> str:
    """GBNF rule names allow lower-case letters, digits and dashes."""
    return keyword.lower().replace("_", "-")


# ID_DIGITS is a regex made only of character classes with optional {m,n} counts,
# which is GBNF syntax as it stands; check that, so a change to it fails loudly.
_GBNF_SAFE_REGEX = re.compile(r"^(\[[^\]\\]+\](\{\d+,\d+\})?)+$")
if not _GBNF_SAFE_REGEX.match(ID_DIGITS):  # pragma: no cover - guards a core change
    raise ImportError(f"ID_DIGITS {ID_DIGITS!r} is not expressible in GBNF as is")
ID_DIGITS_GBNF = re.sub(r"\](?=\[)", "] ", ID_DIGITS)  # "[1-9] [0-9]{0,3}"

# --- The whole language -------------------------------------------------------------------


def action_grammar() -> str:
    """GBNF for every syntactically valid action line (any ids, any allowed values)."""
    rules = ["root ::= " + " | ".join(rule_name(kw) for kw in ACTION_SYNTAX)]
    id_prefixes: list[str] = []
    for kw, fields in ACTION_SYNTAX.items():
        terms = [literal(kw)]
        for i, (_, kind, arg) in enumerate(fields):
            if kind == "id":
                prefix = str(arg)
                if prefix not in id_prefixes:
                    id_prefixes.append(prefix)
                terms.append(f"{prefix.lower()}-id")
            else:
                name = f"{rule_name(kw)}-{i + 1}"
                values = [literal(str(v)) for v in arg]  # type: ignore[union-attr]
                rules.append(f"{name} ::= " + " | ".join(values))
                terms.append(name)
        rules.append(f"{rule_name(kw)} ::= " + ' " " '.join(terms))
    for prefix in id_prefixes:
        rules.append(f"{prefix.lower()}-id ::= {literal(prefix)} digits")
    rules.append(f"digits ::= {ID_DIGITS_GBNF}")
    return "\n".join(rules) + "\n"


# --- The language valid for one observation ----------------------------------------------


def _field_values(keyword: str, position: int) -> tuple[str, ...]:
    _, kind, arg = ACTION_SYNTAX[keyword][position]
    assert kind == "choice"
    return tuple(str(v) for v in arg)  # type: ignore[union-attr]


def _route_choices(obs: Observation) -> list[tuple[int, list[str]]]:
    """(station id, kind names) for every station with a valid ROUTE kind."""
    kinds = _field_values("ROUTE", 2)
    out = []
    for s in np.flatnonzero(obs.route_mask.any(axis=1)):
        names = [ChargerKind(k).name for k in np.flatnonzero(obs.route_mask[s])]
        out.append((int(s) + 1, [n for n in kinds if n in names]))
    return out


def _defer_choices(obs: Observation) -> list[str]:
    allowed = set(_field_values("DEFER", 1))
    return [str(m) for m in obs.defer_options if str(m) in allowed]


def _shift_stations(obs: Observation) -> list[int]:
    if obs.load_shifts_left <= 0:
        return []
    return [int(s) + 1 for s in np.flatnonzero(~np.asarray(obs.shifted, dtype=bool))]


def allowed_actions(obs: Observation) -> list[str]:
    """Every valid action line for the request this observation describes.

    The core also lets other EVs waiting at this tick be decided by id, but the
    observation describes only the request, so the Oracle decides that one (or
    LOAD_SHIFTs). Empty when nothing is valid.
    """
    r = obs.request
    if obs.done or r is None:
        return []
    actions: list[Route | Defer | LoadShift] = [
        Route(r.id, s, ChargerKind[k])
        for s, kinds in _route_choices(obs)
        for k in kinds
    ]
    actions += [Defer(r.id, int(m)) for m in _defer_choices(obs)]
    caps, minutes = _field_values("LOAD_SHIFT", 1), _field_values("LOAD_SHIFT", 2)
    actions += [
        LoadShift(s, int(c), int(m))
        for s in _shift_stations(obs)
        for c in caps
        for m in minutes
    ]
    return [format_action(a) for a in actions]


def step_grammar(obs: Observation, *, load_shift: bool = True) -> str | None:
    """GBNF for the actions valid now; ``None`` when no action is valid.

    ``load_shift=False`` leaves LOAD_SHIFT out (a policy that only dispatches).
    """
    r = obs.request
    if obs.done or r is None:
        return None
    rules: dict[str, str] = {}
    routes = _route_choices(obs)
    if routes:
        per_station = [
            literal(f"S{s} ") + " " + alternatives([literal(k) for k in kinds])
            for s, kinds in routes
        ]
        rules["route"] = literal(f"ROUTE E{r.id} ") + " " + alternatives(per_station)
    defers = _defer_choices(obs)
    if defers:
        rules["defer"] = (
            literal(f"DEFER E{r.id} ")
            + " "
            + alternatives([literal(m) for m in defers])
        )
    stations = _shift_stations(obs) if load_shift else []
    if stations:
        rules["load-shift"] = " ".join(
            [
                literal("LOAD_SHIFT "),
                alternatives([literal(f"S{s}") for s in stations]),
                literal(" "),
                alternatives([literal(c) for c in _field_values("LOAD_SHIFT", 1)]),
                literal(" "),
                alternatives([literal(m) for m in _field_values("LOAD_SHIFT", 2)]),
            ]
        )
    if not rules:
        return None
    head = "root ::= " + " | ".join(rules)
    return "\n".join([head, *(f"{k} ::= {v}" for k, v in rules.items())]) + "\n"


def max_answer_tokens(extra: int = 2) -> int:
    """A ``max_tokens`` that never cuts an action: one token per character at worst.

    Every token of a byte-level BPE covers at least one character, so the longest
    action in characters bounds its length in tokens; ``extra`` leaves room for
    the end-of-turn token.
    """
    return MAX_ACTION_CHARS + extra


# --- A grammar over listed lines ----------------------------------------------------------


def lines_grammar(lines: list[str] | tuple[str, ...]) -> str:
    """GBNF accepting exactly ``lines`` (the answers a decision prompt lists).

    Lines are split into words and shared leading words are written once
    (``"ROUTE E7 " ("S3 " ("SLOW" | "FAST") | "S9 FAST")``), so the grammar stays
    small and llama.cpp's sampler checks few alternatives per token.
    """
    if not lines:
        raise ValueError("no lines to allow")
    root = _word_tree([line.split(" ") for line in dict.fromkeys(lines)])
    return f"root ::= {root}\n"


def _word_tree(seqs: list[list[str]]) -> str:
    """GBNF term for word sequences sharing nothing yet (prefix tree by word)."""
    groups: dict[str, list[list[str]]] = {}
    for words in seqs:
        groups.setdefault(words[0], []).append(words[1:])
    options = []
    for head, tails in groups.items():
        rests = [t for t in tails if t]
        if not rests:
            options.append(literal(head))
        elif len(rests) == len(tails):
            options.append(literal(head + " ") + " " + _word_tree(rests))
        else:  # a line ends here and others go on: never with the action language
            options.append(
                literal(head) + " (" + literal(" ") + " " + _word_tree(rests) + ")?"
            )
    return alternatives(options)
