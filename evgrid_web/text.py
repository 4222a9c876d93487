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
from .pace import lagging


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
        f"{rate_html(ep)}"
        "</div>"
    )


def rate_html(ep: PageEpisode) -> str:
    """While playing: the speed asked for, the ticks/s and decisions/s really
    achieved over the last seconds, and "lagging" when they fall short."""
    if not ep.playing:
        return ""
    asked = f"asked {ep.speed:g} ticks/s"
    rate = ep.rate()
    if rate is None:
        return f'<br><span id="evgrid-rate">{asked} · real: measuring…</span>'
    lag = (
        ' · <b id="evgrid-lagging" style="color:#d33">lagging</b>'
        if lagging(rate, ep.speed)
        else ""
    )
    return (
        f'<br><span id="evgrid-rate">{asked} · real '
        f'<span id="evgrid-real-ticks">{rate.ticks_per_s:.2f}</span> ticks/s, '
        f'<span id="evgrid-real-decisions">{rate.decisions_per_s:.2f}</span> '
        f"decisions/s over the last {rate.span_s:.0f} s{lag}</span>"
    )


def queue_html(ep: PageEpisode | None) -> str:
    """The Step clicks still queued, or why the last one was refused."""
    bits = []
    if ep is not None:
        n = ep.steps.pending
        if n:
            bits.append(f"{n} Step click{'s' if n > 1 else ''} queued")
        if ep.steps.note:
            bits.append(escape(ep.steps.note))
    return f'<div id="evgrid-queue">{" · ".join(bits)}</div>'


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
