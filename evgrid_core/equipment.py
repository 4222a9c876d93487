"""The 11 kV equipment the feeders are built from, as data with sources: ACSR
conductors (IS 398-2) and transformers (the 66/11 kV substation unit, BESCOM-sized
distribution transformers, IS 1180-1). Tags as in ``network.py``: [V] stated in the
cited source, [D] derived, [A] an assumption."""

from __future__ import annotations

import math
from dataclasses import dataclass

FREQUENCY_HZ = 50.0  # [Hz] the Indian grid

# --- Conductors -------------------------------------------------------------------
OPERATING_C = 50.0  # [degC] conductor temperature for resistance [A]
ALPHA_AL = (
    0.00403  # [1/degC] resistance temperature coefficient of aluminium (IS 398-2)
)
GMD_M = 1.0  # [m] geometric mean spacing of an 11 kV crossarm's phases [A]


@dataclass(frozen=True, slots=True)
class Conductor:
    """A line type: per-km series impedance and thermal rating (line charging of
    these short 11 kV lines is neglected: about 0.4 kvar per km at 10 nF/km [A])."""

    name: str
    r_ohm_per_km: float  # [ohm/km] at OPERATING_C
    x_ohm_per_km: float  # [ohm/km] at 50 Hz
    max_i_ka: float  # [kA] thermal rating per phase


def acsr(name: str, r20_ohm_per_km: float, diameter_mm: float, max_i_ka: float):
    """An ACSR overhead conductor from its standard data: DC resistance at 20 degC,
    overall diameter and rating; x from the crossarm spacing (``GMD_M``) and the
    conductor's geometric mean radius (0.7788 r, the solid-conductor value [A])."""
    r = r20_ohm_per_km * (1 + ALPHA_AL * (OPERATING_C - 20.0))
    gmr_m = 0.7788 * diameter_mm / 2000.0
    x = 2 * math.pi * FREQUENCY_HZ * 2e-4 * math.log(GMD_M / gmr_m)  # [ohm/km]
    return Conductor(name, r, x, max_i_ka)


# R20 and diameters: IS 398 (Part 2) ACSR tables (Rabbit 6/1/3.35 mm, 50 mm2 Al;
# Dog 6/4.72 + 7/1.57 mm, 100 mm2 Al). Ratings: a BESCOM 11 kV Rabbit line "will
# carry load up to 3,000 kVA" [V] (Deccan Herald, facts §3.2) = 157 A [D]; Dog at
# 300 A, the top of the facts' 200-300 A rule of thumb for an 11 kV feeder [A].
CONDUCTORS = (
    acsr("Rabbit", 0.5524, 10.05, 3000.0 / (math.sqrt(3) * 11.0) / 1000.0),
    acsr("Dog", 0.2792, 14.15, 0.300),
)

# --- Transformers ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TransformerType:
    """A two-winding transformer: rating, voltages and short-circuit impedance
    (no-load losses and magnetising current neglected [A])."""

    name: str
    sn_kva: float  # [kVA] rating
    vn_hv_kv: float  # [kV]
    vn_lv_kv: float  # [kV]
    vk_percent: float  # [%] short-circuit impedance on its own rating
    vkr_percent: float  # [%] its resistive part (load losses at rated current)


# 66/11 kV substation transformer: 12.5 MVA, 10 % impedance, 0.5 % load losses
# [A]: no KPTCL station data was found. Its on-load tap changer and the rule that
# sets it: ``oltc.py``. It carries this one feeder alone (the other feeders of a
# real station are not modelled) [A].
SUBSTATION_TRANSFORMER = TransformerType(
    "66/11 kV 12.5 MVA", 12500.0, 66.0, 11.0, 10.0, 0.5
)
LV_KV = 0.415  # [kV] the distribution transformers' secondary (IS 1180-1: 433 V no-load) [A: nominal ratio]
DT_SIZES_KVA = (
    25.0,
    63.0,
    100.0,
    250.0,
    500.0,
)  # [kVA] BESCOM's DT sizes [V] (NIE 2022-03-31)
DT_VK_PERCENT = 4.5  # [%] IS 1180-1 impedance for 11 kV DTs up to 630 kVA [A]
DT_VKR_PERCENT = 1.2  # [%] load losses at rated current [A]


def dt_kva(limit_kw: float) -> float | None:
    """The distribution transformer a station of ``limit_kw`` gets [kVA]; None: HT.

    The facts' mapping [A] (§3.2): 100 kVA for an AC hub, 250 kVA for 2-4 x 60 kW
    DC, 500 kVA or HT at 150 kW and more; here 100 kVA up to 100 kW, 250 kVA below
    150 kW, 500 kVA up to 500 kW, an 11 kV (HT) connection beyond.
    """
    if limit_kw <= 100.0:
        return 100.0
    if limit_kw < 150.0:
        return 250.0
    if limit_kw <= 500.0:
        return 500.0
    return None


def distribution_transformer(sn_kva: float) -> TransformerType:
    if sn_kva not in DT_SIZES_KVA:
        raise ValueError(f"{sn_kva} kVA is not a BESCOM DT size {DT_SIZES_KVA}")
    return TransformerType(
        f"11/0.415 kV {sn_kva:g} kVA",
        sn_kva,
        11.0,
        LV_KV,
        DT_VK_PERCENT,
        DT_VKR_PERCENT,
    )
