"""The core's speed shortcuts, in one place: how an observation is built quickly.

An observation is built at every decision (the server builds one per step for each
of up to 64 sessions), so two steps of the plain path are skipped here. Each gives
exactly what the plain path gives; ``tests/core/test_core_fast.py`` compares the two
at every step of every scenario. Elsewhere (``observation.py``) the plain path reads
as the rule.

``built(cls, **fields)``
    A frozen dataclass without its generated ``__init__``, which sets each field
    through ``object.__setattr__``: a fifth of the cost of an observation. Safe for
    ``Observation`` and ``EVRequest``: every field is given (``tick_memo`` too), and
    neither has a ``__post_init__``. Guard:
    ``test_core_observation_equals_the_one_its_init_builds``.

``city_part_of_the_tick(w, done, build)``
    The observation's city part (its read-only arrays, and a memo where the text's
    head lines are written once), built once per tick and shared by that tick's
    decisions; it is kept in ``World.obs_cache``. Safe because between two decisions
    of a tick only a LOAD_SHIFT changes the city (station caps and the shifts left):
    the part is keyed by the tick, the LOAD_SHIFTs made in it and whether the
    episode is over, and its arrays are read-only, so no holder can change another's.
    Guards: ``test_core_observation_shared_per_tick_equals_a_fresh_one`` (a fresh
    part at every step of every scenario under four policies),
    ``test_core_observation_arrays_are_read_only``,
    ``test_core_observation_copy_starts_its_own_memo``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from .world import World

T = TypeVar("T")
CityPart = tuple[dict[str, Any], dict[str, Any]]  # (fields, the tick's text memo)


def built(cls: type[T], **fields: Any) -> T:
    """An instance of the frozen dataclass ``cls`` holding ``fields`` (all of them).

    The same object its ``__init__`` builds (tested), without that ``__init__``.
    """
    obj = object.__new__(cls)
    obj.__dict__.update(fields)
    return obj


def city_part_of_the_tick(
    w: World, done: bool, build: Callable[[World], dict[str, Any]]
) -> CityPart:
    """``build(w)`` and a fresh memo, made once per tick and LOAD_SHIFT.

    ``build`` is the plain path; its result is shared until the tick ends, a
    LOAD_SHIFT changes the city or the episode ends (tests compare it with a fresh
    one at every step). ``w.obs_cache = None`` forces the plain path.
    """
    key = (w.tick, w.shifts_this_tick, done)
    cached = w.obs_cache
    if cached is not None and cached[0] == key:
        return cached[1]
    part = (build(w), {})
    w.obs_cache = (key, part)
    return part
