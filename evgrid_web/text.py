"""The page's numbers as text, beside the frame: what the panel draws, readable
by screen readers and tests (clock, tariff, renewables, feeders, decisions with
their reward breakdown, the Oracle's raw text and latency, KPIs beside the best
heuristic's on the same seed). Every figure is read from the driver or the core.
"""

from __future__ import annotations

from html import escape

from evgrid_core import get_scenario
from evgrid_render.panel import KPI_ROWS, display_clock, util_label

from .episode import PageEpisode


def status_html(ep: PageEpisode) -> str:
    """Clock, tick, tariff, renewable share, who decides, and the episode's state."""
    c = ep.ctrl
    st = c.state
    clock, tick = display_clock(c)
    mode = "playing" if ep.playing else ("over" if ep.done else "paused")
    title = get_scenario(c.scenario).title
    return (
        f'<div id="evgrid-status">'
        f'<span id="evgrid-clock">{clock}</span> · '
        f'<span id="evgrid-tick">tick {tick}/{st["n_ticks"]}</span> · '
        f"₹{st['tariff_inr']:.2f}/kWh · "
        f"{st['renewable_share'] * 100:.0f} % renewable · "
        f'<span id="evgrid-decisions">{c.env.steps} decisions</span> · '
        f"{escape(c.policy_name)} · {escape(title)}, seed {ep.seed} · "
        f'<span id="evgrid-mode">{mode}</span>'
        "</div>"
    )


def feeders_md(ep: PageEpisode) -> str:
    """Each feeder's load (as the panel labels it) and the EVs' share of it."""
    c = ep.ctrl
    rows = ["| feeder | load | EV kW | state |", "|---|---|---|---|"]
    for f in c.state["feeders"]:
        u = f["utilisation"]
        state = (
            "over 100 %"
            if u > 1.0
            else ("above the soft limit" if u > c.soft_limit else "ok")
        )
        rows.append(
            f"| {f['name'].split(' (')[0]} | {util_label(u, c.soft_limit)} | "
            f"{f['ev_kw']:,.0f} | {state} |"
        )
    return "\n".join(rows)


def decisions_md(ep: PageEpisode) -> str:
    """The latest decisions, newest first, each with its reward breakdown; the
    Oracle's raw text and latency when the policy reported them."""
    out = []
    for d in ep.ctrl.decisions:
        head = f"**{d.clock}** {escape(d.source)}: `{escape(d.action)}`"
        if not d.valid:
            head += f" (refused: {escape(d.reason)})"
        head += f" → {d.reward:+.2f}"
        parts = ", ".join(f"{k} {v:+.2f}" for k, v in d.parts.items() if v)
        out.append(f"- {head}" + (f"<br>{parts}" if parts else ""))
        if d.debug:
            raw = str(d.debug.get("raw", ""))[:200]
            latency = d.debug.get("latency_ms")
            bits = []
            if raw:
                bits.append(f"raw `{escape(raw.strip())}`")
            if isinstance(latency, int | float):
                bits.append(f"{latency:.0f} ms")
            if d.debug.get("source") == "fallback" and d.debug.get("reason"):
                bits.append(f"fallback: {escape(str(d.debug['reason'])[:120])}")
            if bits:
                out.append("  <br>" + " · ".join(bits))
    return "\n".join(out) if out else "_no decision yet_"


def kpis_md(ep: PageEpisode) -> str:
    """This episode's KPIs (so far) beside the best heuristic's whole episode."""
    mine = ep.ctrl.env.kpi_summary()
    best = ep.best
    state = "final" if ep.ctrl.done else "so far"
    rows = [
        f"| KPI | {escape(ep.policy_name)} ({state}) | best heuristic: "
        f"{best['name']} |",
        "|---|---|---|",
    ]
    for key, label, fmt in KPI_ROWS:
        rows.append(
            f"| {label} | {fmt.format(mine[key])} | {fmt.format(best['kpis'][key])} |"
        )
    return "\n".join(rows)
