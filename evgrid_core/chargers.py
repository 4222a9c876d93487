"""The charger kinds: one table, read by every layer (rules, policies, wire, viewer).

A kind is a row of ``CHARGERS``; its index is its value in ``ChargerKind`` and its
position in every per-kind array (plugs per station, ``CHARGER_KW``, the route
mask's columns). Adding a kind is adding a row here and a plug count per station
(``city._STATIONS``); the viewer draws its sprite from the row's colour.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

import numpy as np

from .jit import kernel


@dataclass(frozen=True, slots=True)
class ChargerSpec:
    """One charger kind: what the world needs and how the viewer shows it."""

    name: str  # the word in an action line (ROUTE E1 S5 FAST)
    kw: float  # [kW] rated power of one plug
    dc: bool  # DC (needs the EV's DC inlet) or AC
    typical_session_min: float  # [min] a session, as policies estimate queue waits [A]
    colour: tuple[int, int, int]  # RGB in the city view (plugs, legend, sprite)
    sprite: str  # the city view's sprite name (viz/sprites/<sprite>.png)

    @property
    def label(self) -> str:
        """e.g. 'FAST 30 kW DC' (prompts, wire descriptions, the panel)."""
        return f"{self.name} {self.kw:g} kW {'DC' if self.dc else 'AC'}"


# 7.2-7.4 kW single-phase AC is typical for cars; CCS2 DC 25-60 kW in the city,
# 120-150 kW on highway plans [V] (NITI e-AMRIT; BESCOM NH-48 plan, Moneycontrol
# 2023-05-29). Typical session lengths are assumptions [A].
CHARGERS: tuple[ChargerSpec, ...] = (
    ChargerSpec("SLOW", 7.0, False, 120.0, (110, 190, 255), "slow"),  # Type-2 AC
    ChargerSpec("FAST", 30.0, True, 45.0, (120, 230, 150), "fast"),  # CCS2
    ChargerSpec("ULTRA", 150.0, True, 25.0, (250, 140, 240), "ultra"),  # CCS2
)

# The table's columns as the forms the code indexes by kind.
ChargerKind = IntEnum(  # the kinds by name; the value indexes per-kind arrays
    "ChargerKind", [(c.name, i) for i, c in enumerate(CHARGERS)], module=__name__
)
N_KINDS = len(CHARGERS)
KIND_NAMES: tuple[str, ...] = tuple(c.name for c in CHARGERS)
KINDS = tuple(ChargerKind(i) for i in range(len(CHARGERS)))  # by index, no enum call
CHARGER_KW = np.array([c.kw for c in CHARGERS])  # [kW] (N_KINDS,)
CHARGER_KW.flags.writeable = False
CHARGER_DC: tuple[bool, ...] = tuple(c.dc for c in CHARGERS)


@kernel
def vehicle_kw_of(kind: int, max_ac_kw: float, max_dc_kw: float) -> float:
    """[kW] the most an EV takes from a charger of ``kind`` (a plain int): 0 = it
    cannot use it.

    The one statement of which kinds an EV can use (by its AC and DC inlets).
    """
    return max_dc_kw if CHARGER_DC[kind] else max_ac_kw


def vehicle_kw(kind: int, max_ac_kw: float, max_dc_kw: float) -> float:
    """``vehicle_kw_of`` for any kind (a ``ChargerKind`` too) and number."""
    return vehicle_kw_of(int(kind), float(max_ac_kw), float(max_dc_kw))


@kernel(inline=True)
def inlet(max_ac_kw: float, max_dc_kw: float) -> int:
    """An EV's inlets as one index: 1 * (has AC) + 2 * (has DC)."""
    return (1 if max_ac_kw > 0 else 0) + (2 if max_dc_kw > 0 else 0)


@kernel
def inlets_into(max_ac_kw, max_dc_kw, out) -> None:  # noqa: ANN001
    """``inlet`` of each EV, into ``out``."""
    for i in range(out.size):
        out[i] = inlet(max_ac_kw[i], max_dc_kw[i])


def inlet_of(max_ac_kw: np.ndarray, max_dc_kw: np.ndarray) -> np.ndarray:
    """EVs' inlets as one index each (``inlet``)."""
    out = np.empty(len(max_ac_kw), dtype=np.int64)
    inlets_into(
        np.asarray(max_ac_kw, dtype=float), np.asarray(max_dc_kw, dtype=float), out
    )
    return out


# (4, N_KINDS) bool: the charger kinds an EV can take, by inlet index.
KINDS_BY_INLET = np.array(
    [[vehicle_kw(k, i & 1, i & 2) > 0 for k in range(N_KINDS)] for i in range(4)]
)
KINDS_BY_INLET.flags.writeable = False
