"""Why a decision was made: the options the request had, the one chosen, and
what ``greedy_eta`` would have answered in the same state (key ``W``).

The options are the core's candidates for the observation the decision saw
(``evgrid_core.candidates``: every valid ROUTE and DEFER with drive minutes,
expected wait and the feeder's headroom in MW); the nearest few by expected
plug-in are listed, the chosen one and greedy_eta's always among them. The
Oracle's own answer (its letter, source and latency) is shown as it reported it
(``last_debug``); its prompt's lettered listing lives in ``oracle`` and is not
rebuilt here.
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


def greedy_answer(obs) -> str:  # noqa: ANN001
    """What greedy_eta answers to ``obs`` (a fresh instance: no memory)."""
    policy = make_policy("greedy_eta")
    policy.reset(0)
    answer = policy.act(obs)
    return answer if isinstance(answer, str) else format_action(answer)


def options(obs, chosen: str, greedy: str, shown: int = SHOWN) -> list[Option]:  # noqa: ANN001
    """The request's valid answers, nearest expected plug-in first (DEFERs after
    the ROUTEs), at most ``shown``, with ``chosen`` and ``greedy`` kept in."""
    c = candidates(obs)
    if not len(c):
        return []
    lines = c.lines
    defer = c.column("is_defer") == 1.0
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
            )
        )
    return out


def why_lines(d) -> list[tuple[str, str]]:  # noqa: ANN001 - controller.Decision
    """(text, style) lines for decision ``d``: style is "head", "chosen",
    "greedy", "option" or "note"."""
    if d.obs is None or d.obs.request is None:
        return [(f"{d.clock} {d.action}: no request to explain", "note")]
    greedy = greedy_answer(d.obs)
    rows = options(d.obs, d.action, greedy)
    out = [(f"Why {d.clock} {d.action} ({d.source})", "head")]
    if d.debug:
        dbg = d.debug
        out.append(
            (
                f"answered {str(dbg.get('raw', ''))!r} by {dbg.get('source', '?')} "
                f"in {dbg.get('latency_ms', 0):.0f} ms",
                "note",
            )
        )
    if not rows:
        out.append(("no valid ROUTE or DEFER was left: any answer is invalid", "note"))
        return out
    out.append(
        (f"E{d.obs.request.id}'s options: drive · wait · feeder headroom", "note")
    )
    for o in rows:
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
        short = o.line.replace(f" E{d.obs.request.id} ", " ").removeprefix("ROUTE ")
        out.append((f"{short}   {figs}  {tags}".rstrip(), style))
    if greedy != d.action:
        out.append((f"greedy_eta would have answered {greedy}", "greedy"))
    else:
        out.append(("greedy_eta would have answered the same", "note"))
    return out
