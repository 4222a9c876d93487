"""EVs: vehicle classes and the seeded arrival process (the exogenous world).

Arrivals and every EV attribute are drawn at reset from their own random stream,
so no policy can change who arrives, where, or with how much charge.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .chargers import inlet_of
from .jit import kernel
from .pcg import poisson, uniform

# --- Vehicle classes ----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class EVClass:
    name: str
    share: float  # [0-1] of arrivals
    batteries_kwh: tuple[float, ...]  # [kWh] drawn uniformly
    max_ac_kw: float  # [kW] on-board charger limit
    max_dc_kw: float  # [kW] 0 = no DC inlet
    km_per_kwh: float  # [km/kWh] real-world efficiency
    soc_range: tuple[float, float]  # [0-1] state of charge on request
    target_soc: float  # [0-1] leaves when reached (the lowest target drawn)
    target_max: float  # [0-1] highest target drawn; DC sessions above 80 % taper
    patience_min: tuple[float, float]  # [min] gives up if not plugged in by then
    critical_prob: float  # [0-1] chance of a hard deadline
    deadline_min: tuple[float, float]  # [min] a critical EV must plug in within


# Cars: Tata Nexon EV 30.2/40.5 kWh, MG ZS EV 44.5/50.3 kWh [V]; 7.2 kW AC [V];
# 50 kW DC and 7 km/kWh [A]. Three-wheelers: Mahindra Treo about 7.4 kWh [U],
# Bharat AC-001 3.3 kW outlets [V], no DC [A]. Fleet cabs: 26-30 kWh sedans on
# 7.2 kW AC and 30 kW DC [A], more often on a booking deadline [A]. Targets are
# drawn between target_soc and target_max [A]: DC power tapers above 80 % SoC.
EV_CLASSES = (
    EVClass("car", 0.55, (30.2, 40.5, 44.5, 50.3), 7.2, 50.0, 7.0, (0.10, 0.45), 0.80, 0.95, (45, 90), 0.08, (25, 45)),
    EVClass("3w", 0.25, (5.4, 7.4, 8.0), 3.3, 0.0, 14.0, (0.10, 0.40), 0.90, 1.00, (30, 60), 0.02, (20, 40)),
    EVClass("cab", 0.20, (26.0, 30.2), 7.2, 30.0, 7.5, (0.08, 0.35), 0.80, 0.90, (25, 50), 0.30, (15, 35)),
)  # fmt: skip
CLASS_NAMES = tuple(c.name for c in EV_CLASSES)

# --- Arrival process -------------------------------------------------------------------
# EVs per hour that ask the dispatcher for a public charger, hours 00..23 [A].
# No Indian session-level data was found [U] (facts §4); the shape follows the
# feeder's morning/evening peaks, scaled so public plugs are busy at the peak.
ARRIVALS_PER_HOUR = np.array(
    [
        4,
        3,
        2,
        2,
        3,
        6,
        12,
        20,
        28,
        30,
        26,
        22,
        20,
        20,
        22,
        26,
        32,
        40,
        44,
        42,
        34,
        22,
        12,
        6,
    ],
    dtype=float,
)
# Origin weights by locality [A]: IT corridors and transit hubs send more EVs.
ORIGIN_WEIGHT = {
    "Whitefield (ITPL/TTMC)": 2.0,
    "Electronic City": 2.0,
    "Marathahalli": 1.8,
    "Bellandur": 1.8,
    "Sarjapur Road (Doddakannelli/Wipro)": 1.5,
    "Koramangala": 1.6,
    "Nagawara (Manyata Tech Park)": 1.6,
    "HSR Layout": 1.4,
    "Majestic (Kempegowda Bus Stn / KSR)": 1.5,
    "Indiranagar": 1.3,
    "Central Silk Board (junction)": 0.3,
    "Kudlu Gate (Hosur Road)": 0.5,
}


@dataclass(frozen=True)
class Arrivals:
    """Every EV of one episode, as arrays indexed by EV number (id = index + 1)."""

    tick: np.ndarray  # request tick
    minute: np.ndarray  # [min since episode start] request time
    klass: np.ndarray  # index into EV_CLASSES
    node: np.ndarray  # index into City.nodes
    battery_kwh: np.ndarray
    soc: np.ndarray  # [0-1]
    target: np.ndarray  # [0-1]
    max_ac_kw: np.ndarray
    max_dc_kw: np.ndarray
    km_per_kwh: np.ndarray
    patience_min: np.ndarray
    critical: np.ndarray  # bool
    deadline_min: np.ndarray  # [min after request] (inf when not critical)

    def __len__(self) -> int:
        return len(self.tick)


class EVLists:
    """The episode's EVs as Python lists, for scalar look-ups on the hot path.

    The same numbers as ``Arrivals`` (and request + deadline / patience as
    minutes since the episode started): indexing a list costs a fraction of
    indexing a numpy array, and a decision reads a dozen of these.
    """

    __slots__ = ("battery_kwh", "critical", "deadline_minute", "inlet", "klass",
                 "km_per_kwh", "max_ac_kw", "max_dc_kw", "node", "patience_minute",
                 "request_minute", "target")  # fmt: skip

    def __init__(self, a: Arrivals) -> None:
        self.klass: list[int] = a.klass.tolist()
        self.node: list[int] = a.node.tolist()
        self.battery_kwh: list[float] = a.battery_kwh.tolist()
        self.target: list[float] = a.target.tolist()
        self.max_ac_kw: list[float] = a.max_ac_kw.tolist()
        self.max_dc_kw: list[float] = a.max_dc_kw.tolist()
        self.km_per_kwh: list[float] = a.km_per_kwh.tolist()
        self.critical: list[bool] = a.critical.tolist()
        self.inlet: list[int] = inlet_of(a.max_ac_kw, a.max_dc_kw).tolist()
        # [min since start] first request; plug in by (critical EVs); give up after
        self.request_minute: list[float] = a.minute.tolist()
        self.deadline_minute: list[float] = (a.minute + a.deadline_min).tolist()
        self.patience_minute: list[float] = (a.minute + a.patience_min).tolist()


def draw_arrivals(
    rng: np.ndarray,
    *,
    start_minute: int,
    n_ticks: int,
    tick_minutes: int,
    node_weights: np.ndarray,
    arrival_scale: float = 1.0,
    critical_scale: float = 1.0,
) -> Arrivals:
    """Draw one episode's arrivals from the stream ``rng`` (``pcg.stream``): Poisson
    per tick, attributes per EV."""
    lam = arrival_rates(start_minute, n_ticks, tick_minutes, arrival_scale)
    tick, minute, klass, node, out = draw_fleet(
        rng, lam, cdf_of(node_weights), critical_scale, tick_minutes
    )
    return Arrivals(
        tick=tick,
        minute=minute,
        klass=klass,
        node=node,
        battery_kwh=out[0],
        soc=out[1],
        target=out[2],
        max_ac_kw=out[3],
        max_dc_kw=out[4],
        km_per_kwh=out[5],
        patience_min=out[6],
        critical=out[7] > 0,
        deadline_min=out[8],
    )


def arrival_rates(
    start_minute: int, n_ticks: int, tick_minutes: int, arrival_scale: float
) -> np.ndarray:
    """The expected requests in each tick (the Poisson means of ``draw_evs``)."""
    minutes = start_minute + tick_minutes * np.arange(n_ticks)
    hours = (minutes // 60) % 24
    return ARRIVALS_PER_HOUR[hours] * arrival_scale * tick_minutes / 60.0


def cdf_of(weights: np.ndarray) -> np.ndarray:
    """The cumulative shares ``draw_evs`` searches, as ``Generator.choice`` with
    ``p = weights / weights.sum()`` builds them (and refuses what it refuses)."""
    total = weights.sum()
    if not (total > 0 and np.isfinite(total) and (weights >= 0).all()):
        raise ValueError(f"weights must be non-negative with a positive sum: {weights}")
    cdf = (weights / total).cumsum()
    cdf /= cdf[-1]
    return cdf


@kernel
def pick(rng, cdf, n: int):  # noqa: ANN001, ANN201
    """``n`` indices drawn from the stream ``rng`` with the shares ``cdf``: numpy's
    ``Generator.choice`` (``cdf.searchsorted(rng.random(n), side="right")``)."""
    out = np.empty(n, dtype=np.int64)
    for i in range(n):
        out[i] = np.searchsorted(cdf, uniform(rng), side="right")
    return out


@kernel
def draw_evs(rng, lam, class_cdf, node_cdf):  # noqa: ANN001, ANN201
    """One episode's EVs from the arrivals' stream ``rng`` (``pcg.stream``), in the
    order numpy's vectorised calls drew them: the requests in each tick (Poisson,
    means ``lam``), then each EV's class, then its origin node, then six uniforms
    each (``draw_attributes``' ``u``). Returns (tick, class, node, u)."""
    counts = np.empty(lam.size, dtype=np.int64)
    for t in range(lam.size):
        counts[t] = poisson(rng, lam[t])
    n = int(counts.sum())
    tick = np.empty(n, dtype=np.int64)
    k = 0
    for t in range(lam.size):
        for _ in range(counts[t]):
            tick[k] = t
            k += 1
    klass = pick(rng, class_cdf, n)
    node = pick(rng, node_cdf, n)
    u = np.empty((n, 6))
    for i in range(n):
        for j in range(6):
            u[i, j] = uniform(rng)
    return tick, klass, node, u


CLASS_CDF = cdf_of(np.array([c.share for c in EV_CLASSES]))
CLASS_CDF.flags.writeable = False

# The classes as numbers for ``draw_attributes``: one row per class, and the
# batteries padded with NaN (a class draws among its own count).
CLASS_TABLE = np.array([[len(c.batteries_kwh), *c.soc_range, c.target_soc, c.target_max,
                          *c.patience_min, c.critical_prob, *c.deadline_min, c.max_ac_kw,
                          c.max_dc_kw, c.km_per_kwh] for c in EV_CLASSES])  # fmt: skip
BATTERIES = np.full((len(EV_CLASSES), max(len(c.batteries_kwh) for c in EV_CLASSES)),
                     np.nan)  # fmt: skip
for _k, _c in enumerate(EV_CLASSES):
    BATTERIES[_k, : len(_c.batteries_kwh)] = _c.batteries_kwh
N_DRAWN = (
    9  # battery, soc, target, max AC, max DC, km/kWh, patience, critical, deadline
)


@kernel
def draw_fleet(rng, lam, node_cdf, critical_scale: float, tick_minutes: int) -> tuple:  # noqa: ANN001
    """One episode's EVs from the arrivals' stream ``rng`` (``draw_evs``, then
    ``draw_attributes``): (tick, request minute, class, node, attributes (N_DRAWN, n)).
    An EV is due at the start of its tick."""
    tick, klass, node, u = draw_evs(rng, lam, CLASS_CDF, node_cdf)
    out = np.empty((N_DRAWN, tick.size))
    draw_attributes(klass, u, CLASS_TABLE, BATTERIES, critical_scale, out)
    return tick, (tick * tick_minutes).astype(np.float64), klass, node, out


@kernel
def draw_attributes(klass, u, table, batteries, critical_scale: float, out) -> None:  # noqa: ANN001
    """Each EV's attributes from its class and its six uniform draws ``u`` (n, 6),
    into ``out`` (9, n): numpy's rounding (``np.round``: rint of x * 10**d / 10**d)."""
    for i in range(len(klass)):
        k, c = klass[i], table[klass[i]]
        out[0, i] = batteries[k, int(u[i, 0] * c[0])]
        out[1, i] = np.rint((c[1] + u[i, 1] * (c[2] - c[1])) * 100.0) / 100.0
        out[2, i] = np.rint((c[3] + u[i, 5] * (c[4] - c[3])) * 100.0) / 100.0
        out[3, i], out[4, i], out[5, i] = c[10], c[11], c[12]
        out[6, i] = np.rint(c[5] + u[i, 2] * (c[6] - c[5]))
        critical = u[i, 3] < min(1.0, c[7] * critical_scale)
        out[7, i] = 1.0 if critical else 0.0
        out[8, i] = np.rint(c[8] + u[i, 4] * (c[9] - c[8])) if critical else np.inf


def arrivals_from_records(records: list[dict], nodes: tuple[str, ...]) -> Arrivals:
    """Build a hand-made set of arrivals (probe tests, custom studies).

    Each record: ``tick``, ``klass`` (car|3w|cab), ``node`` (locality name),
    ``soc``; optional ``battery_kwh``, ``target``, ``patience_min``,
    ``deadline_min`` (makes the EV critical). Class defaults fill the rest.
    """
    by_name = {c.name: i for i, c in enumerate(EV_CLASSES)}
    records = sorted(records, key=lambda r: r["tick"])
    k = [by_name[r["klass"]] for r in records]
    cls = [EV_CLASSES[i] for i in k]

    def col(key: str, default) -> np.ndarray:  # noqa: ANN001
        return np.array(
            [r.get(key, default(c)) for r, c in zip(records, cls, strict=True)],
            dtype=float,
        )

    deadline = col("deadline_min", lambda c: np.inf)
    tick = np.array([r["tick"] for r in records], dtype=np.int64)
    return Arrivals(
        tick=tick,
        minute=tick.astype(float) * 5.0,
        klass=np.array(k, dtype=np.int64),
        node=np.array([nodes.index(r["node"]) for r in records], dtype=np.int64),
        battery_kwh=col("battery_kwh", lambda c: c.batteries_kwh[0]),
        soc=col("soc", lambda c: c.soc_range[0]),
        target=col("target", lambda c: c.target_soc),
        max_ac_kw=col("max_ac_kw", lambda c: c.max_ac_kw),
        max_dc_kw=col("max_dc_kw", lambda c: c.max_dc_kw),
        km_per_kwh=col("km_per_kwh", lambda c: c.km_per_kwh),
        patience_min=col("patience_min", lambda c: c.patience_min[1]),
        critical=np.isfinite(deadline),
        deadline_min=deadline,
    )
