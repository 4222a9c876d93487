"""The page's "why" box: why a decision was made, for the latest decision or one
picked from the log.

The account is the city view's own (``evgrid_render.why.explain``, key ``W`` on
the desktop): the request's options from the core's candidates (the Oracle's
lettered listing, as it reported it, when the Oracle decided), each with its
drive, expected wait and feeder headroom in MW, the one chosen, and greedy_eta's
answer to the same observation. Here it is an HTML table, every text escaped.
"""

from __future__ import annotations

from html import escape
from typing import Any

from evgrid_render.why import explain, short_line

WEB_SHOWN = 8  # options listed for a policy with no listing of its own
NO_WHY = '<div id="evgrid-why">no decision yet</div>'


def _label(number: int, d: Any) -> str:
    return f"#{number} {d.clock} {d.source}: {d.action}"


class WhyBox:
    """Which of the listed decisions a tab's box explains (the latest unless one
    was picked), and each explanation worked out once."""

    def __init__(self) -> None:
        self.pick: int | None = None  # a decision's number; None: the latest
        self._html: dict[int, str] = {}
        self.sent: tuple | None = None  # the choices the tab has now

    @staticmethod
    def listed(ctrl: Any) -> list[tuple[int, Any]]:
        """(number, decision) for the decisions the log lists, newest first; the
        number counts the episode's decisions from 1."""
        n = len(ctrl.log)
        return [(n - i, d) for i, d in enumerate(ctrl.decisions)]

    def current(self, ctrl: Any) -> tuple[int, Any] | None:
        listed = self.listed(ctrl)
        if not listed:
            return None
        return next((x for x in listed if x[0] == self.pick), listed[0])

    def choose(self, ctrl: Any, value: object) -> None:
        """The tab picked ``value`` (a decision's number, as text): the newest
        one, or one no longer listed, means "follow the latest"."""
        try:
            number = int(str(value)[:12])
        except ValueError:
            number = None
        listed = self.listed(ctrl)
        known = {n for n, _ in listed}
        newest = listed[0][0] if listed else None
        self.pick = number if number in known and number != newest else None

    def choices(self, ctrl: Any) -> tuple[list[tuple[str, str]], str | None]:
        """The picker's (label, value) pairs and its value."""
        listed = self.listed(ctrl)
        pairs = [(_label(n, d), str(n)) for n, d in listed]
        now = self.current(ctrl)
        return pairs, (str(now[0]) if now else None)

    def html(self, ctrl: Any) -> str:
        now = self.current(ctrl)
        if now is None:
            return NO_WHY
        number, d = now
        if number not in self._html:
            keep = {n for n, _ in self.listed(ctrl)}
            self._html = {k: v for k, v in self._html.items() if k in keep}
            self._html[number] = why_html(number, d)
        return self._html[number]


def why_html(number: int, d: Any) -> str:
    """Decision ``d`` explained as HTML (escaped)."""
    why = explain(d, WEB_SHOWN)
    e = escape
    chosen = next((o for o in why.options if o.chosen), None)
    letter = f" <b>{e(chosen.letter)}</b>:" if chosen and chosen.letter else ""
    out = [
        '<div id="evgrid-why">',
        f'<div id="evgrid-why-head">#{number} {e(why.clock)} {e(why.source)} chose'
        f"{letter} <code>{e(why.action)}</code></div>",
    ]
    if why.report:
        out.append(f'<div id="evgrid-why-report">{e(why.report)}</div>')
    if why.ev is None:
        out.append("<div>no request to explain</div></div>")
        return "\n".join(out)
    if not why.options:
        out.append("<div>no valid ROUTE or DEFER was left: any answer is invalid</div>")
    else:
        out.append(
            f"<div>E{why.ev}'s options"
            + (
                " (the letters it was offered)"
                if any(o.letter for o in why.options)
                else ""
            )
            + ":</div>"
        )
        out.append(
            '<table id="evgrid-why-options"><thead><tr><th>letter</th><th>option</th>'
            "<th>drive</th><th>expected wait</th><th>feeder headroom</th><th></th>"
            "</tr></thead><tbody>"
        )
        for o in why.options:
            tags = [
                t for t, on in (("◀ chosen", o.chosen), ("greedy_eta", o.greedy)) if on
            ]
            figs = (
                ["", "", ""]
                if o.drive_min is None
                else [
                    f"{o.drive_min:.0f} min",
                    f"{o.wait_min:.0f} min",
                    f"{o.headroom_mw:.2f} MW",
                ]
            )
            cls = "chosen" if o.chosen else "greedy" if o.greedy else "option"
            cells = [o.letter, short_line(o.line, why.ev), *figs, " · ".join(tags)]
            out.append(
                f'<tr class="evgrid-why-{cls}" data-line="{e(o.line)}">'
                + "".join(f"<td>{e(c)}</td>" for c in cells)
                + "</tr>"
            )
        out.append("</tbody></table>")
    same = why.greedy == why.action
    g = next((o for o in why.options if o.greedy), None)
    named = f" ({e(g.letter)})" if g and g.letter else ""
    out.append(
        '<div id="evgrid-why-greedy">greedy_eta would have answered '
        + ("the same" if same else f"<code>{e(why.greedy)}</code>{named}")
        + "</div></div>"
    )
    return "\n".join(out)
