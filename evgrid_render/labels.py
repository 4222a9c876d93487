"""Placing labels and boxes on the map so that none overlaps another or a station.

One greedy pass: the required items (a station's plugs and name) first, the most
constrained of them first, each at its first candidate position that lies inside
the bounds and clear of every obstacle and of every item placed before it; then
the optional items (localities, lakes, roads) in their order, left out when no
candidate is clear. Overlays (the manual box, messages, station details) take the
clear spot nearest to where they prefer to be (``free_spot``).
"""

from __future__ import annotations

import random
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass

import pygame

Pos = tuple[int, int]


@dataclass(frozen=True)
class Item:
    """A box of ``size`` to place at one of ``candidates`` (top-left corners)."""

    key: Hashable
    size: tuple[int, int]
    candidates: tuple[Pos, ...]  # in order of preference
    required: bool = True


def around(
    box: pygame.Rect,
    size: tuple[int, int],
    gap: int = 2,
    rings: Sequence[int] = (0,),
    slides: Sequence[float] = (0.0,),
) -> tuple[Pos, ...]:
    """Top-left corners for a ``size`` box beside ``box``: below, above, right,
    left, then the four corners; again slid along each side by ``slides`` (a
    fraction of the box's own length) and ``rings`` pixels farther out."""
    w, h = size
    out: list[Pos] = []
    for d in rings:
        g = gap + d
        for f in slides:
            cx = box.centerx - w // 2 + round(f * w / 2)
            cy = box.centery - h // 2 + round(f * h)
            out += [
                (cx, box.bottom + g),
                (cx, box.top - h - g),
                (box.right + g, cy),
                (box.left - w - g, cy),
            ]
        out += [
            (box.right + g - w // 3, box.bottom + g),
            (box.left - w - g + w // 3, box.bottom + g),
            (box.right + g - w // 3, box.top - h - g),
            (box.left - w - g + w // 3, box.top - h - g),
        ]
    return tuple(out)


def _clear(rect: pygame.Rect, bounds: pygame.Rect, taken: list[pygame.Rect]) -> bool:
    return bounds.contains(rect) and rect.collidelist(taken) == -1


def _overlap(rect: pygame.Rect, taken: Iterable[pygame.Rect]) -> int:
    total = 0
    for t in taken:
        c = rect.clip(t)
        total += c.w * c.h
    return total


def _greedy(
    order: Sequence[Item], obstacles: list[pygame.Rect], bounds: pygame.Rect
) -> tuple[dict[Hashable, pygame.Rect], float]:
    """One greedy pass in ``order``; (boxes, cost): a required item's cost is its
    candidate's rank, an overlap or a left-out optional item costs far more."""
    taken = list(obstacles)
    out: dict[Hashable, pygame.Rect] = {}
    cost = 0.0
    for it in order:
        rects = [pygame.Rect(p, it.size) for p in it.candidates]
        best = next((i for i, r in enumerate(rects) if _clear(r, bounds, taken)), None)
        if best is None:
            if not it.required or not rects:
                cost += 50.0
                continue
            inside = [i for i, r in enumerate(rects) if bounds.contains(r)]
            best = min(
                inside or range(len(rects)), key=lambda i: _overlap(rects[i], taken)
            )
            cost += 1e4
        cost += best if it.required else 0.0
        out[it.key] = rects[best]
        taken.append(rects[best])
    return out, cost


def place(
    items: Sequence[Item],
    obstacles: Iterable[pygame.Rect],
    bounds: pygame.Rect,
    tries: int = 40,
) -> dict[Hashable, pygame.Rect]:
    """Where each item goes; an optional item with no clear candidate is absent.

    Greedy passes over the required items in several orders (the most constrained
    first, then seeded shuffles), the optional ones after them; the pass whose
    required items sit nearest their first choices wins. A required item with no
    clear candidate takes the one that overlaps least (the tests check that the
    city's labels never need it at the shipped sizes).
    """
    obstacles = list(obstacles)

    def free_count(it: Item) -> int:
        return sum(
            _clear(pygame.Rect(p, it.size), bounds, obstacles) for p in it.candidates
        )

    required = sorted(
        (it for it in items if it.required),
        key=lambda it: (free_count(it), str(it.key)),
    )
    optional = [it for it in items if not it.required]
    rng = random.Random(0)  # the same layout every time for one size
    best: tuple[dict[Hashable, pygame.Rect], float] | None = None
    order = list(required)
    for k in range(max(1, tries)):
        if k:
            order = list(required)
            rng.shuffle(order)
        result = _greedy(order + optional, obstacles, bounds)
        if best is None or result[1] < best[1]:
            best = result
    return best[0]


def free_spot(
    size: tuple[int, int],
    bounds: pygame.Rect,
    taken: Sequence[pygame.Rect],
    prefer: Pos,
    step: int = 8,
) -> pygame.Rect:
    """The ``size`` box inside ``bounds`` clear of ``taken`` whose centre is
    nearest ``prefer``; the one overlapping least when none is clear."""
    w, h = size
    w, h = min(w, bounds.w), min(h, bounds.h)
    xs = list(range(bounds.left, bounds.right - w + 1, step)) or [bounds.left]
    ys = list(range(bounds.top, bounds.bottom - h + 1, step)) or [bounds.top]
    xs.append(bounds.right - w)
    ys.append(bounds.bottom - h)
    px, py = prefer[0] - w / 2, prefer[1] - h / 2
    spots = sorted(
        ((x, y) for x in xs for y in ys),
        key=lambda p: (p[0] - px) ** 2 + (p[1] - py) ** 2,
    )
    taken = list(taken)
    for x, y in spots:
        r = pygame.Rect(x, y, w, h)
        if r.collidelist(taken) == -1:
            return r
    return min(
        (pygame.Rect(x, y, w, h) for x, y in spots), key=lambda r: _overlap(r, taken)
    )
