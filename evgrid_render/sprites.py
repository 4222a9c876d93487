"""Sprites for the city view, drawn with pygame at 4x and smoothscaled down.

``python3 -m evgrid_render.sprites`` writes them as PNGs into ``viz/sprites/``
(committed: the folder the design card names for them); at run time
``sprite(name, size)`` loads the PNG, or draws it when the file is missing, and
caches each size once. ``viz/sprites/`` is a data folder the renderer reads, not a
module: the renderer imports nothing of ``viz`` (tests/test_layers.py).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import cache, partial
from pathlib import Path

import pygame

from evgrid_core import CHARGERS

# viz/ and evgrid_render/ sit side by side in the checkout and in site-packages
# (viz's package data), so the folder is found the same way in both.
SPRITE_DIR = Path(__file__).resolve().parents[1] / "viz" / "sprites"
BASE = 64  # [px] size of the committed PNGs
SS = 4  # supersampling factor

White = (245, 247, 250)


def _poly(surf: pygame.Surface, pts: list[tuple[float, float]], colour) -> None:
    s = surf.get_width() / 64.0
    pygame.draw.polygon(surf, colour, [(x * s, y * s) for x, y in pts])


def _bolt(surf: pygame.Surface, colour=(255, 214, 64)) -> None:
    _poly(
        surf,
        [(36, 4), (14, 36), (30, 36), (24, 60), (50, 24), (34, 24), (42, 4)],
        colour,
    )


def _ev(surf: pygame.Surface) -> None:
    """A car seen from above, pointing right, with a bolt on the roof."""
    s = surf.get_width() / 64.0
    body = pygame.Rect(int(6 * s), int(18 * s), int(52 * s), int(28 * s))
    pygame.draw.rect(surf, White, body, border_radius=int(10 * s))
    pygame.draw.rect(
        surf, (40, 46, 60), body, width=int(2.5 * s), border_radius=int(10 * s)
    )
    glass = pygame.Rect(int(34 * s), int(22 * s), int(12 * s), int(20 * s))
    pygame.draw.rect(surf, (60, 120, 180), glass, border_radius=int(4 * s))
    rear = pygame.Rect(int(12 * s), int(23 * s), int(8 * s), int(18 * s))
    pygame.draw.rect(surf, (60, 120, 180), rear, border_radius=int(3 * s))
    small = pygame.Surface((int(22 * s), int(22 * s)), pygame.SRCALPHA)
    _bolt(small, (255, 190, 0))
    surf.blit(small, (int(19 * s), int(21 * s)))


def _charger(surf: pygame.Surface, colour, bolts: int) -> None:
    """A charging post with a cable; ``bolts`` bolts mark the kind (slow: one)."""
    s = surf.get_width() / 64.0
    post = pygame.Rect(int(14 * s), int(6 * s), int(26 * s), int(52 * s))
    pygame.draw.rect(surf, colour, post, border_radius=int(6 * s))
    pygame.draw.rect(
        surf, (30, 34, 44), post, width=int(2.5 * s), border_radius=int(6 * s)
    )
    screen = pygame.Rect(int(18 * s), int(11 * s), int(18 * s), int(12 * s))
    pygame.draw.rect(surf, (30, 40, 56), screen, border_radius=int(2 * s))
    pygame.draw.lines(
        surf,
        (30, 34, 44),
        False,
        [(40 * s, 30 * s), (52 * s, 30 * s), (52 * s, 50 * s), (46 * s, 56 * s)],
        int(4 * s),
    )
    for i in range(bolts):
        b = pygame.Surface((int(14 * s), int(14 * s)), pygame.SRCALPHA)
        _bolt(b, (30, 34, 44))
        surf.blit(b, (int((17 + 7 * i - 3.5 * (bolts - 1)) * s), int(30 * s)))


def _sun(surf: pygame.Surface) -> None:
    s = surf.get_width() / 64.0
    c = (32 * s, 32 * s)
    for i in range(12):
        a = i * math.pi / 6
        pygame.draw.line(
            surf,
            (255, 196, 40),
            (c[0] + 18 * s * math.cos(a), c[1] + 18 * s * math.sin(a)),
            (c[0] + 29 * s * math.cos(a), c[1] + 29 * s * math.sin(a)),
            int(4 * s),
        )
    pygame.draw.circle(surf, (255, 214, 64), c, 14 * s)


def _feeder(surf: pygame.Surface) -> None:
    """A transmission pylon."""
    s = surf.get_width() / 64.0
    col, w = (200, 210, 226), int(3.5 * s)
    legs = [(20, 60), (32, 6), (44, 60)]
    pygame.draw.lines(surf, col, False, [(x * s, y * s) for x, y in legs], w)
    for y, half in ((18, 20), (30, 16)):
        pygame.draw.line(
            surf, col, ((32 - half) * s, y * s), ((32 + half) * s, y * s), w
        )
    for a, b in (((24, 44), (40, 44)), ((22, 52), (42, 38)), ((42, 52), (22, 38))):
        pygame.draw.line(
            surf, col, (a[0] * s, a[1] * s), (b[0] * s, b[1] * s), int(2.5 * s)
        )


def _station(surf: pygame.Surface) -> None:
    """A round station marker: white disc with a bolt (tinted at draw time)."""
    s = surf.get_width() / 64.0
    pygame.draw.circle(surf, White, (32 * s, 32 * s), 29 * s)
    pygame.draw.circle(surf, (30, 34, 44), (32 * s, 32 * s), 29 * s, int(3 * s))
    b = pygame.Surface((int(40 * s), int(40 * s)), pygame.SRCALPHA)
    _bolt(b, (30, 34, 44))
    surf.blit(b, (int(12 * s), int(12 * s)))


DRAWERS: dict[str, Callable[[pygame.Surface], None]] = {
    "ev": _ev,
    # a charging post per charger kind, in the kind's colour, with k + 1 bolts
    **{
        c.sprite: partial(_charger, colour=c.colour, bolts=k + 1)
        for k, c in enumerate(CHARGERS)
    },
    "bolt": _bolt,
    "sun": _sun,
    "feeder": _feeder,
    "station": _station,
}


def draw_sprite(name: str, size: int = BASE) -> pygame.Surface:
    """Draw sprite ``name`` at ``size`` px (supersampled, then smoothscaled)."""
    big = pygame.Surface((size * SS, size * SS), pygame.SRCALPHA)
    DRAWERS[name](big)
    return pygame.transform.smoothscale(big, (size, size))


@cache
def sprite(name: str, size: int) -> pygame.Surface:
    """The sprite at ``size`` px: from its PNG when present, else drawn now."""
    path = SPRITE_DIR / f"{name}.png"
    if path.exists():
        img = pygame.image.load(str(path))
        if pygame.display.get_init() and pygame.display.get_surface() is not None:
            img = img.convert_alpha()
        return (
            img
            if img.get_width() == size
            else pygame.transform.smoothscale(img, (size, size))
        )
    return draw_sprite(name, size)


def write_pngs(folder: Path = SPRITE_DIR) -> list[Path]:
    """Draw every sprite at ``BASE`` px into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for name in DRAWERS:
        path = folder / f"{name}.png"
        pygame.image.save(draw_sprite(name, BASE), str(path))
        out.append(path)
    return out


if __name__ == "__main__":
    for p in write_pngs():
        print(p)
