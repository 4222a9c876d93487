"""Voltages on the map and in the panel, under a network grid model.

The map draws each feeder's 11 kV line sections (locality to locality, along the
roads) and its buses in the colour of their voltage against their floor, from the
limit band the core holds (``NetworkState.network.v_floor_pu``: 0.91 p.u. at 11 kV,
IE Rules rule 54): red below the floor, amber within ``NEAR_PU`` of it, green
above. The panel lists each feeder's lowest point of supply in kV (the core's
``NetworkState.min_supply_kv``: its p.u. times its nominal kV) under a legend of
those colours. Everything drawn is read from the core's ``NetworkState``; nothing
here computes a voltage or a limit.
"""

from __future__ import annotations

import pygame

from evgrid_core.distflow import NetworkState
from evgrid_core.network import Network

from . import theme

NEAR_PU = 0.02  # [p.u.] within this above its floor a bus shows amber
VOLT_OK: theme.Colour = (64, 156, 96)  # above it: a quieter green than the gauges' OK
LINE_W = 3  # [px] a section's width on the map
MAP_KINDS = ("substation", "locality")  # the 11 kV buses placed at a locality


def voltage_colour(v: float, floor: float) -> theme.Colour:
    """A bus's colour: red below its floor, amber near it, green above."""
    if v < floor:
        return theme.OVER
    return theme.WARN if v < floor + NEAR_PU else VOLT_OK


def kv_label(kv: float) -> str:
    """A voltage in kV: two decimals at 11 kV, three on a station's LV side."""
    return f"{kv:.2f} kV" if kv >= 1.0 else f"{kv:.3f} kV"


class VoltageMap:
    """The network's 11 kV sections and buses at their localities' pixels."""

    def __init__(self, network: Network, node_px: dict[str, tuple[float, float]]):
        buses = network.buses
        on_map = [b.kind in MAP_KINDS and b.node in node_px for b in buses]
        # (parent px, child px, child bus): the sections between two localities
        self.sections = [
            (node_px[buses[br.from_bus].node], node_px[buses[br.to_bus].node], br.to_bus)
            for br in network.branches
            if br.conductor is not None and on_map[br.from_bus] and on_map[br.to_bus]
        ]  # fmt: skip
        self.buses = [(node_px[b.node], i) for i, b in enumerate(buses) if on_map[i]]
        self.substations = {i for i, b in enumerate(buses) if b.kind == "substation"}

    def colours(self, state: NetworkState) -> list[theme.Colour]:
        """(B,) each bus's colour in ``state``."""
        floor = state.network.v_floor_pu
        return [
            voltage_colour(v, f)
            for v, f in zip(state.vm_pu.tolist(), floor.tolist(), strict=True)
        ]

    def draw(self, surf: pygame.Surface, state: NetworkState) -> None:
        """The sections, highest voltage first so a low one is never covered, then
        the buses (the substation a square)."""
        colour, vm = self.colours(state), state.vm_pu
        for a, b, bus in sorted(self.sections, key=lambda s: -vm[s[2]]):
            pygame.draw.line(surf, colour[bus], a, b, LINE_W)
        for (x, y), bus in sorted(self.buses, key=lambda s: -vm[s[1]]):
            if bus in self.substations:
                pygame.draw.rect(surf, colour[bus], (x - 4, y - 4, 9, 9))
            else:
                pygame.draw.circle(surf, colour[bus], (x, y), 4)


def draw_voltage_block(
    surf: pygame.Surface, text: theme.TextCache, state: NetworkState, x: int, y: int,
    w: int,
) -> tuple[int, dict[int, tuple[str, pygame.Rect]]]:  # fmt: skip
    """Under the feeder rows: the map's voltage legend, then each feeder's lowest
    point of supply in kV (``F4 min 0.376 kV``: a station's LV side), in its colour. The y below it, and per feeder id the
    kV text and where it went (tests)."""
    cx = x
    for label, colour in (
        ("11 kV lines: ok", VOLT_OK),
        (f"< {NEAR_PU:g} p.u. above floor", theme.WARN),
        ("below floor", theme.OVER),
    ):
        pygame.draw.line(surf, colour, (cx, y + 7), (cx + 12, y + 7), LINE_W)
        img = text.get(label, 10, theme.TEXT_DIM)
        surf.blit(img, (cx + 15, y + 1))
        cx += 15 + img.get_width() + 10
    y += 15
    net, out = state.network, {}
    cols = 3
    col_w = w // cols
    for f, (bus, kv) in enumerate(
        zip(state.min_supply_bus.tolist(), state.min_supply_kv.tolist(), strict=True)
    ):
        colour = voltage_colour(float(state.vm_pu[bus]), float(net.v_floor_pu[bus]))
        s = f"F{f + 1} min {kv_label(kv)}"
        img = text.get(s, 10, colour, True)
        pos = (x + (f % cols) * col_w, y + (f // cols) * 13)
        surf.blit(img, pos)
        out[f + 1] = (s, img.get_rect(topleft=pos))
    rows = -(-net.n_feeders // cols)
    return y + rows * 13 + 2, out
