"""A small, independent reading of GBNF for the tests: parse, sample, enumerate, match.

It covers the subset the Oracle's grammars use (string literals, character classes
with ranges, rule references, groups, alternation and ``{m,n}``/``?``/``*``/``+``
counts). It is written from the GBNF description, not from ``oracle.grammar``, so a
test that samples a grammar with it checks the grammar text itself.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass

import numpy as np

# --- AST --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Lit:
    text: str


@dataclass(frozen=True)
class Chars:
    ranges: tuple[tuple[str, str], ...]

    def chars(self) -> list[str]:
        return [chr(c) for lo, hi in self.ranges for c in range(ord(lo), ord(hi) + 1)]


@dataclass(frozen=True)
class Ref:
    name: str


@dataclass(frozen=True)
class Seq:
    items: tuple


@dataclass(frozen=True)
class Alt:
    options: tuple


@dataclass(frozen=True)
class Rep:
    item: object
    lo: int
    hi: int  # inclusive; -1 = unbounded


# --- Parser -----------------------------------------------------------------------------

_TOKEN = re.compile(
    r'\s*(?:(?P<lit>"(?:[^"\\]|\\.)*")|(?P<cls>\[(?:[^\]\\]|\\.)*\])|'
    r"(?P<rep>\{\d+(?:,\d*)?\}|[?*+])|(?P<name>[a-zA-Z0-9-]+)|(?P<op>[()|]))"
)


def _unescape(s: str) -> str:
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t"}.get(m[1], m[1]), s)


def parse(text: str) -> dict[str, object]:
    """GBNF text -> {rule name: AST}. Raises ValueError on anything unexpected."""
    rules: dict[str, object] = {}
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        name, sep, body = line.partition("::=")
        if not sep:
            raise ValueError(f"not a rule: {line!r}")
        rules[name.strip()] = _parse_body(body)
    if "root" not in rules:
        raise ValueError("no root rule")
    return rules


def _parse_body(body: str) -> object:
    tokens: list[tuple[str, str]] = []
    pos = 0
    body = body.strip()
    while pos < len(body):
        m = _TOKEN.match(body, pos)
        if not m or m.end() == pos:
            raise ValueError(f"cannot read {body[pos:]!r}")
        kind = m.lastgroup
        assert kind is not None
        tokens.append((kind, m[kind]))
        pos = m.end()
    node, rest = _alt(tokens)
    if rest:
        raise ValueError(f"trailing {rest!r}")
    return node


def _alt(tokens):
    options = []
    seq, tokens = _seq(tokens)
    options.append(seq)
    while tokens and tokens[0] == ("op", "|"):
        seq, tokens = _seq(tokens[1:])
        options.append(seq)
    return (options[0] if len(options) == 1 else Alt(tuple(options))), tokens


def _seq(tokens):
    items = []
    while tokens and tokens[0] not in (("op", "|"), ("op", ")")):
        kind, val = tokens[0]
        tokens = tokens[1:]
        if kind == "lit":
            item: object = Lit(_unescape(val[1:-1]))
        elif kind == "cls":
            inner = _unescape(val[1:-1])
            if inner.startswith("^"):
                raise ValueError("negated classes are not used")
            ranges, i = [], 0
            while i < len(inner):
                if i + 2 < len(inner) and inner[i + 1] == "-":
                    ranges.append((inner[i], inner[i + 2]))
                    i += 3
                else:
                    ranges.append((inner[i], inner[i]))
                    i += 1
            item = Chars(tuple(ranges))
        elif kind == "name":
            item = Ref(val)
        elif (kind, val) == ("op", "("):
            item, tokens = _alt(tokens)
            if not tokens or tokens[0] != ("op", ")"):
                raise ValueError("unbalanced (")
            tokens = tokens[1:]
        else:
            raise ValueError(f"unexpected {val!r}")
        while tokens and tokens[0][0] == "rep":
            rep = tokens[0][1]
            tokens = tokens[1:]
            lo, hi = {"?": (0, 1), "*": (0, -1), "+": (1, -1)}.get(rep, (None, None))
            if lo is None:
                a, comma, b = rep[1:-1].partition(",")
                lo = int(a)
                hi = int(a) if not comma else (int(b) if b else -1)
            item = Rep(item, lo, hi)
        items.append(item)
    return (items[0] if len(items) == 1 else Seq(tuple(items))), tokens


# --- Uses ---------------------------------------------------------------------------------


def sample(rules: dict[str, object], rng: np.random.Generator, node=None) -> str:
    """One random string of the grammar (uniform choice at each alternative)."""
    node = rules["root"] if node is None else node
    if isinstance(node, Lit):
        return node.text
    if isinstance(node, Chars):
        cs = node.chars()
        return cs[int(rng.integers(len(cs)))]
    if isinstance(node, Ref):
        return sample(rules, rng, rules[node.name])
    if isinstance(node, Seq):
        return "".join(sample(rules, rng, n) for n in node.items)
    if isinstance(node, Alt):
        return sample(rules, rng, node.options[int(rng.integers(len(node.options)))])
    if isinstance(node, Rep):
        hi = node.hi if node.hi >= 0 else node.lo + 4
        n = int(rng.integers(node.lo, hi + 1))
        return "".join(sample(rules, rng, node.item) for _ in range(n))
    raise TypeError(node)


def language(rules: dict[str, object], node=None, limit: int = 100_000) -> set[str]:
    """Every string of a finite grammar (raises if it has more than ``limit``)."""
    node = rules["root"] if node is None else node
    if isinstance(node, Lit):
        out = {node.text}
    elif isinstance(node, Chars):
        out = set(node.chars())
    elif isinstance(node, Ref):
        out = language(rules, rules[node.name], limit)
    elif isinstance(node, Seq):
        out = {""}
        for item in node.items:
            part = language(rules, item, limit)
            out = {a + b for a, b in itertools.product(out, part)}
            if len(out) > limit:
                raise ValueError("language too large")
    elif isinstance(node, Alt):
        out = set().union(*(language(rules, o, limit) for o in node.options))
    elif isinstance(node, Rep):
        if node.hi < 0:
            raise ValueError("unbounded repetition")
        part = language(rules, node.item, limit)
        out = set()
        for n in range(node.lo, node.hi + 1):
            out |= {"".join(p) for p in itertools.product(part, repeat=n)}
    else:
        raise TypeError(node)
    if len(out) > limit:
        raise ValueError("language too large")
    return out


def _ends(rules, node, s: str, i: int) -> set[int]:
    """Positions where a match of ``node`` starting at ``i`` can end."""
    if isinstance(node, Lit):
        return {i + len(node.text)} if s.startswith(node.text, i) else set()
    if isinstance(node, Chars):
        ok = i < len(s) and any(lo <= s[i] <= hi for lo, hi in node.ranges)
        return {i + 1} if ok else set()
    if isinstance(node, Ref):
        return _ends(rules, rules[node.name], s, i)
    if isinstance(node, Seq):
        pos = {i}
        for item in node.items:
            pos = (
                set().union(*(_ends(rules, item, s, p) for p in pos)) if pos else set()
            )
        return pos
    if isinstance(node, Alt):
        return set().union(*(_ends(rules, o, s, i) for o in node.options))
    if isinstance(node, Rep):
        out, frontier, n = set(), {i}, 0
        while frontier and (node.hi < 0 or n <= node.hi):
            if n >= node.lo:
                out |= frontier
            if node.hi >= 0 and n == node.hi:
                break
            frontier = set().union(*(_ends(rules, node.item, s, p) for p in frontier))
            n += 1
            if n > len(s) + 1:
                break
        return out
    raise TypeError(node)


def matches(rules: dict[str, object], s: str) -> bool:
    """Does the whole of ``s`` belong to the grammar?"""
    return len(s) in _ends(rules, rules["root"], s, 0)
