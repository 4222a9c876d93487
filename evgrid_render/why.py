"""Why a decision was made: the options the request had, the one chosen, and
what ``greedy_eta`` would have answered in the same state (key ``W``).

The options are the core's candidates for the observation the decision saw
(``evgrid_core.candidates``: every valid ROUTE and DEFER with drive minutes,
expected wait and the feeder's headroom in MW); the nearest few by expected
plug-in are listed, the chosen one and greedy_eta's always among them. A
policy that lists its options under letters (the Oracle: ``last_debug["options"]``,
its prompt's (letter, line) pairs, reported as it asked) has exactly those listed,
in its order and with its letters, each with the candidates' figures; the
listing itself lives in ``oracle`` and is not rebuilt here. The policy's own
answer (the Oracle's letter, source and latency) is shown as it reported it.
``explain`` is the one account both the desktop's box (``why_lines``) and the
web page draw.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from evgrid_core import format_action
from evgrid_core.candidates import candidates
from evgrid_core.policies import make_policy

SHOWN = 6  # options listed


@dataclass(frozen=True)
class Option:
    line: str  # the action, as the core writes it
    drive_min: float | None  # None for a DEFER
    wait_min: float | None
    headroom_mw: float | None  # the station's feeder, 30-minute forecast
    chosen: bool
    greedy: bool
    letter: str = ""  # the policy's own name for it (the Oracle's letter), if any


def greedy_answer(obs) -> str:  # noqa: ANN001
    """What greedy_eta answers to ``obs`` (a fresh instance: no memory)."""
    policy = make_policy("greedy_eta")
    policy.reset(0)
    answer = policy.act(obs)
    return answer if isinstance(answer, str) else format_action(answer)


def options(
    obs,  # noqa: ANN001
    chosen: str,
    greedy: str,
    shown: int = SHOWN,
    offered: list | tuple | None = None,
) -> list[Option]:
    """The request's valid answers, nearest expected plug-in first (DEFERs after
    the ROUTEs), at most ``shown``, with ``chosen`` and ``greedy`` kept in.

    ``offered``: the (letter, line) pairs the policy listed (the Oracle's): then
    exactly those, in its order with their letters, and ``chosen`` and ``greedy``
    after them when the policy did not list them."""
    c = candidates(obs)
    if not len(c):
        return []
    lines = c.lines
    defer = c.column("is_defer") == 1.0
    letters: dict[int, str] = {}
    if offered:
        index = {line: i for i, line in enumerate(lines)}
        pairs = [p for p in offered if isinstance(p, list | tuple) and len(p) == 2]
        letters = {index[ln]: str(k) for k, ln in pairs if ln in index}
        keep = list(letters)
        keep += [
            index[ln]
            for ln in dict.fromkeys((chosen, greedy))
            if ln in index and index[ln] not in letters
        ]
    else:
        plug_in = np.where(defer, np.inf, c.column("travel_min") + c.column("wait_min"))
        order = list(np.lexsort((np.arange(len(c)), plug_in)))
        keep = [i for i in order if lines[i] in (chosen, greedy)]
        for i in order:
            if len(keep) >= shown:
                break
            if i not in keep:
                keep.append(i)
        keep.sort(key=order.index)
    out = []
    for i in keep:
        route = not defer[i]
        out.append(
            Option(
                lines[i],
                float(c.column("travel_min")[i]) if route else None,
                float(c.column("wait_min")[i]) if route else None,
                float(c.column("feeder_headroom_kw")[i]) / 1000.0 if route else None,
                lines[i] == chosen,
                lines[i] == greedy,
                letters.get(i, ""),
            )
        )
    return out


@dataclass(frozen=True)
class Why:
    """One decision explained: what it saw, what it was offered, the answers."""

    clock: str
    action: str  # the answer applied, as the core wrote it
    source: str  # the policy's name, or "manual"
    ev: int | None  # the request's EV (None: there was no request)
    options: list[Option]  # empty: no valid ROUTE or DEFER was left
    greedy: str  # greedy_eta's answer to the same observation ("" without a request)
    report: str  # the policy's own account (the Oracle's letter, source, latency)


def explain(d, shown: int = SHOWN) -> Why:  # noqa: ANN001 - controller.Decision
    """Decision ``d`` explained: its options (the policy's own lettered listing
    when it reported one), greedy_eta's answer and the policy's report."""
    report = ""
    dbg = d.debug or {}
    if d.debug:
        report = (
            f"answered {str(dbg.get('raw', ''))!r} by {dbg.get('source', '?')} "
            f"in {dbg.get('latency_ms', 0):.0f} ms"
        )
    if d.obs is None or d.obs.request is None:
        return Why(d.clock, d.action, d.source, None, [], "", report)
    greedy = greedy_answer(d.obs)
    offered = dbg.get("options") if isinstance(dbg.get("options"), list) else None
    rows = options(d.obs, d.action, greedy, shown, offered)
    return Why(d.clock, d.action, d.source, d.obs.request.id, rows, greedy, report)


def short_line(line: str, ev: int | None) -> str:
    """``S5 FAST`` for ``ROUTE E3 S5 FAST``, ``DEFER 15`` for ``DEFER E3 15``."""
    return line.replace(f" E{ev} ", " ").removeprefix("ROUTE ")


def why_lines(d) -> list[tuple[str, str]]:  # noqa: ANN001 - controller.Decision
    """(text, style) lines for decision ``d``: style is "head", "chosen",
    "greedy", "option" or "note"."""
    why = explain(d)
    if why.ev is None:
        return [(f"{d.clock} {d.action}: no request to explain", "note")]
    out = [(f"Why {d.clock} {d.action} ({d.source})", "head")]
    if why.report:
        out.append((why.report, "note"))
    if not why.options:
        out.append(("no valid ROUTE or DEFER was left: any answer is invalid", "note"))
        return out
    out.append((f"E{why.ev}'s options: drive · wait · feeder headroom", "note"))
    for o in why.options:
        if o.drive_min is None:
            figs = ""
        else:
            figs = (
                f"{o.drive_min:.0f} min · {o.wait_min:.0f} min · {o.headroom_mw:.2f} MW"
            )
        tags = " ".join(
            t for t, on in (("◀ chosen", o.chosen), ("greedy_eta", o.greedy)) if on
        )
        style = "chosen" if o.chosen else "greedy" if o.greedy else "option"
        name = f"{o.letter} {short_line(o.line, why.ev)}".lstrip()
        out.append((f"{name}   {figs}  {tags}".rstrip(), style))
    if why.greedy != d.action:
        out.append((f"greedy_eta would have answered {why.greedy}", "greedy"))
    else:
        out.append(("greedy_eta would have answered the same", "note"))
    return out
