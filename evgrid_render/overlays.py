"""Boxes over the map: help, station details, the manual composer, messages.

Each goes where ``MapLayer.overlays`` finds room clear of the stations, their
names and the overlays drawn before it (help alone is a centred modal box). Text
is wrapped to the box, never cut.
"""

from __future__ import annotations

import pygame

from evgrid_core import CHARGERS, format_action
from evgrid_core.observation import HT_FLOOR_PU

from . import theme
from .events import active_events
from .feeder_rows import feeder_figures, util_label
from .panel import KEYS_HELP
from .scene import dt_overloaded

LINE = 18  # [px] a 12 pt line


def _box(surf: pygame.Surface, rect: pygame.Rect) -> None:
    shade = pygame.Surface(rect.size, pygame.SRCALPHA)
    shade.fill((14, 17, 24, 226))
    surf.blit(shade, rect.topleft)
    pygame.draw.rect(surf, theme.PANEL_EDGE, rect, 1, border_radius=4)


Line = tuple[str, theme.Colour, bool]  # text, colour, bold


def _wrapped(text: theme.TextCache, lines: list[Line], width: int) -> list[Line]:
    out = []
    for s, colour, bold in lines:
        out += [(w, colour, bold) for w in theme.wrap(text, s, 12, width - 20, bold)]
    return out


def _draw_lines(surf, text, rect: pygame.Rect, lines: list[Line]) -> None:  # noqa: ANN001
    _box(surf, rect)
    y = rect.y + 7
    for s, colour, bold in lines:
        surf.blit(text.get(s, 12, colour, bold), (rect.x + 10, y))
        y += LINE


def _place_box(
    layer,
    text,
    lines: list[Line],
    widths,
    prefer,
    avoid,  # noqa: ANN001
) -> tuple[pygame.Rect, list[Line]]:
    """The first of ``widths`` whose wrapped box fits clear of the stations."""
    best = None
    for w in widths:
        wrapped = _wrapped(text, lines, w)
        rect = layer.overlays.spot((w, 14 + LINE * len(wrapped)), prefer, avoid)
        if layer.overlays.clear(rect, avoid):
            return rect, wrapped
        best = best or (rect, wrapped)
    return best


def draw_help(
    surf: pygame.Surface, map_rect: pygame.Rect, text: theme.TextCache
) -> pygame.Rect:
    rect = pygame.Rect(0, 0, 420, 24 + 18 * len(KEYS_HELP))
    rect.center = map_rect.center
    _box(surf, rect)
    y = rect.y + 12
    for key, what in KEYS_HELP:
        surf.blit(text.get(key, 13, theme.ACCENT, True), (rect.x + 16, y))
        surf.blit(text.get(what, 13, theme.TEXT), (rect.x + 140, y))
        y += 18
    return rect


def draw_station_details(
    surf, layer, text, ctrl, station: int, avoid=()
) -> pygame.Rect:  # noqa: ANN001
    lines = station_lines(ctrl, station)
    m = layer.rect
    rect, wrapped = _place_box(
        layer, text, lines, (300,), (m.x + 160, m.y + 90), tuple(avoid)
    )
    _draw_lines(surf, text, rect, wrapped)
    return rect


def station_lines(ctrl, station: int) -> list[Line]:  # noqa: ANN001
    """The station pop-up's lines: its feeder in MW against the limit, the
    events there, plugs, queues, the drive from the request."""
    st = ctrl.state["stations"][station - 1]
    city_st = ctrl.env.city.stations[station - 1]
    f = ctrl.state["feeders"][st["feeder"] - 1]
    shed = float(ctrl.obs.feeder_shed_kw[f["id"] - 1])
    mw, ev = feeder_figures(f)  # load/limit [MW], "EV x.xx"
    lines: list[Line] = [
        (f"S{st['id']} {st['name']}", theme.TEXT, True),
        (city_st.node, theme.TEXT_DIM, False),
        (
            f"feeder F{f['id']} {f['name']}: {mw} MW "
            f"({util_label(f['utilisation'], ctrl.soft_limit)}), {ev} MW"
            + (f", shed {shed / 1000.0:.2f} MW" if shed > 0 else ""),
            theme.OVER if shed > 0 else theme.TEXT,
            False,
        ),
        (
            "open" if st["open"] else "closed",
            theme.OK if st["open"] else theme.BAD,
            False,
        ),
        (f"load {st['load_kw']:.0f} / {st['cap_kw']:.0f} kW", theme.TEXT, False),
    ]
    volts, dt = ctrl.obs.feeder_min_voltage_pu, ctrl.obs.station_transformer_loading
    if volts is not None and dt is not None:  # the network grid models only
        loading = float(dt[station - 1])
        v = float(volts[f["id"] - 1])
        lines.append(
            (
                f"transformer {loading * 100:.0f} % of rating  ·  feeder lowest "
                f"{v:.3f} p.u.",
                theme.OVER if dt_overloaded(loading) or v < HT_FLOOR_PU else theme.TEXT,
                False,
            )
        )
    for k, c in enumerate(CHARGERS):
        if st["plugs"][k]:
            lines.append(
                (
                    f"{c.name} {c.kw:g} kW: {st['busy'][k]}/{st['plugs'][k]} busy, "
                    f"queue {st['queue'][k]}",
                    theme.KIND_COLOURS[k],
                    False,
                )
            )
    tick = min(int(ctrl.display_minute // ctrl.tick_minutes), ctrl.state["n_ticks"] - 1)
    for e in active_events(ctrl.events, tick):  # an event here or on its feeder
        if e.station == station or e.feeder == f["id"]:
            lines.append((f"⚡ {e.label}", theme.EVENT, False))
    if st.get("load_shift_until_tick") is not None:
        lines.append(
            (
                f"load-shifted until tick {st['load_shift_until_tick']}",
                theme.WARN,
                False,
            )
        )
    ev = ctrl.selected_ev() if ctrl.manual else None
    if ev is not None:
        city = ctrl.env.city
        km = city.road_km[city.node_index(ev["node"]), station - 1]
        lines.append((f"E{ev['id']}: {km:.1f} km by road", theme.ACCENT, False))
    elif ctrl.obs.request is not None:
        minutes = ctrl.obs.travel_min[station - 1]
        lines.append(
            (f"E{ctrl.obs.request.id}: {minutes:.0f} min drive", theme.ACCENT, False)
        )
    return lines


def manual_lines(ctrl) -> list[Line]:  # noqa: ANN001
    """The composer's text: the selected EV (not necessarily the core's current
    request), the composed action with its station's name, the core's verdict."""
    lines: list[Line] = [("MANUAL CONTROL", theme.ACCENT, True)]
    ev = ctrl.selected_ev()
    if ev is None:
        lines.append(("no request to decide", theme.TEXT_DIM, False))
    else:
        pending = ctrl.state["pending"]
        place = ev["node"].split(" (")[0]
        lines.append(
            (
                f"E{ev['id']} {ev['class']} at {place}  ·  "
                f"{pending.index(ev['id']) + 1} of {len(pending)} waiting",
                theme.TEXT,
                True,
            )
        )
        req = ctrl.obs.request
        reach = (
            f"  ·  range {req.range_km:.0f} km"
            if req is not None and req.id == ev["id"]
            else ""
        )
        lines.append(
            (
                f"SoC {ev['soc'] * 100:.0f} % → {ev['target'] * 100:.0f} %{reach}"
                + ("  ·  CRITICAL" if ev["critical"] else ""),
                theme.BAD if ev["critical"] else theme.TEXT_DIM,
                False,
            )
        )
        action = ctrl.manual_action()
        station = getattr(action, "station", None)
        name = ctrl.state["stations"][station - 1]["name"] if station else ""
        lines.append(
            (
                f"> {format_action(action)}" + (f"  → {name}" if name else ""),
                theme.ROUTE,
                True,
            )
        )
        ok, reason = ctrl.manual_check()
        lines.append(
            ("the core accepts it: Enter sends it", theme.OK, False)
            if ok
            else (f"not valid: {reason}", theme.BAD, False)
        )
    if ctrl.message and not ctrl.message.startswith("manual control"):
        lines.append(
            (
                ctrl.message,
                theme.BAD if ctrl.message.startswith("not sent") else theme.TEXT_DIM,
                False,
            )
        )
    lines.append(
        (
            "A verb · Tab EV · ↑↓ station · ←→ kind/value · Enter send",
            theme.TEXT_DIM,
            False,
        )
    )
    return lines


def draw_manual(surf, layer, text, ctrl, avoid=()) -> pygame.Rect:  # noqa: ANN001
    m = layer.rect
    widths = [w for w in (440, 380, 320, 280) if w <= m.w - 32] or [m.w - 32]
    prefer = (m.x + 12 + widths[0] // 2, m.bottom - 100)
    rect, wrapped = _place_box(
        layer, text, manual_lines(ctrl), widths, prefer, tuple(avoid)
    )
    _draw_lines(surf, text, rect, wrapped)
    return rect


def draw_message(surf, layer, text, message: str, avoid=(), dy: int = 0) -> pygame.Rect:  # noqa: ANN001
    m = layer.rect
    width = min(460, m.w - 32)
    natural = text.get(message, 12).get_width() + 20
    widths = [min(width, natural)] + [w for w in (360, 280) if w < min(width, natural)]
    prefer = (m.centerx, m.y + 24 + dy)
    rect, wrapped = _place_box(
        layer, text, [(message, theme.TEXT, False)], widths, prefer, tuple(avoid)
    )
    _draw_lines(surf, text, rect, wrapped)
    return rect


WHY_STYLES = {
    "head": (theme.TEXT, True),
    "chosen": (theme.ROUTE, True),
    "greedy": (theme.ACCENT, False),
    "option": (theme.TEXT, False),
    "note": (theme.TEXT_DIM, False),
}


def draw_why(surf, layer, text, ctrl, cache: dict, avoid=()) -> pygame.Rect | None:  # noqa: ANN001
    """The last decision's options (key W): ``why.why_lines``, worked out once
    per decision (kept in ``cache``); None before any decision."""
    from .why import why_lines

    if not ctrl.decisions:
        return None
    d = ctrl.decisions[0]
    if cache.get("decision") is not d:
        cache["decision"], cache["lines"] = d, why_lines(d)
    lines: list[Line] = [(s, *WHY_STYLES[style]) for s, style in cache["lines"]]
    m = layer.rect
    widths = [w for w in (470, 420, 360) if w <= m.w - 32] or [m.w - 32]
    rect, wrapped = _place_box(
        layer,
        text,
        lines,
        widths,
        (m.x + 12 + widths[0] // 2, m.bottom - 120),
        tuple(avoid),
    )
    _draw_lines(surf, text, rect, wrapped)
    return rect
