"""The hindsight optimum's MILP of one episode (``optimum.py`` solves and replays it):
the model over the plan options, and a selection's price and feasibility.

One binary per plan option (``plan_options.py``), one option per EV; plugs and
station limits as hard rows; feeder capacity hard (a plan never sheds) and the
soft limit's excess as a slack paid ``grid_stress``; under ``lindistflow`` the
network's voltage deficits and DT overloads as slacks paid ``undervoltage`` and
``transformer_overload`` (``grid.LinearLimits``). Exact within its plan class on
the linear grid models (``LINEAR_GRIDS``), refused on the others (``check_grid``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from evgrid_core import EVGridEnv, SimConfig
from evgrid_core.chargers import N_KINDS
from evgrid_core.grid import LinDistFlow, LinearLimits
from evgrid_core.network import TRANSFORMER_LIMIT
from evgrid_core.optional import require
from evgrid_core.trace import EpisodeTrace

from .plan_options import Options

FEEDER_MARGIN_KW = 1e-5  # [kW] kept below capacity: solver tolerances never shed
# The grid models whose limits are linear in the loads: the model is exact on them.
LINEAR_GRIDS = ("feeder_sum", "lindistflow")


def _require_scipy():  # noqa: ANN202
    return require("scipy.sparse", "the hindsight optimum", "eval")


# --- Model ----------------------------------------------------------------------------
@dataclass
class Model:
    """min c.x + offset  s.t.  lo <= A x <= hi, x[:n_options] binary, the rest >= 0."""

    c: np.ndarray
    A: Any  # scipy.sparse csr
    lo: np.ndarray
    hi: np.ndarray
    n_options: int
    offset: float  # [reward units] constant part of the grid terms
    slack_row: np.ndarray  # the row of each slack column (x[n_options:])
    n_rows: dict[str, int] = field(default_factory=dict)
    offset_parts: dict[str, float] = field(default_factory=dict)  # cost offsets
    # reward key -> its slack columns (grid_stress; under lindistflow undervoltage
    # and transformer_overload too)
    slack_cols: dict[str, slice] = field(default_factory=dict)


def check_grid(config: SimConfig) -> None:
    """The model is exact for the linear grid models only: a one-line error else."""
    if config.grid not in LINEAR_GRIDS:
        raise ValueError(
            f"the optimum's model is linear in the loads: grid model {config.grid!r} "
            f"is not; use one of {', '.join(LINEAR_GRIDS)}"
        )


def grid_limits(env: EVGridEnv) -> LinearLimits | None:
    """The episode's linearised network limits (lindistflow), None for the feeder sum."""
    check_grid(env.config)
    grid = env.world.grid  # the optimum reads the episode's model, as the trace does
    return grid.linear_limits() if isinstance(grid, LinDistFlow) else None


def build_model(
    trace: EpisodeTrace,
    config: SimConfig,
    opts: Options,
    limits: LinearLimits | None = None,
) -> Model:
    """The MILP over the given options (see the module docstring); ``limits``
    (``grid_limits``) adds the network's voltage and DT rows (lindistflow)."""
    sp = _require_scipy()
    w = config.weights
    T, S = trace.n_ticks, len(trace.limit_kw)
    F = trace.background_kw.shape[1]
    dt_h = config.tick_minutes / 60.0
    n = len(opts)
    rows: list[np.ndarray] = []
    cols: list[np.ndarray] = []
    vals: list[np.ndarray] = []
    lo: list[np.ndarray] = []
    hi: list[np.ndarray] = []
    n_rows: dict[str, int] = {}
    base = 0

    def block(name: str, count: int, lower: np.ndarray, upper: np.ndarray) -> int:
        nonlocal base
        start = base
        lo.append(lower)
        hi.append(upper)
        n_rows[name] = count
        base += count
        return start

    ev = np.array(opts.ev)
    station = np.array(opts.station)
    kind = np.array(opts.kind)
    arrive = np.array(opts.arrive_tick)
    lengths = np.array([len(e) for e in opts.energy])
    # One option per EV.
    r0 = block("assign", trace.n_evs, np.ones(trace.n_evs), np.ones(trace.n_evs))
    rows.append(r0 + ev)
    cols.append(np.arange(n))
    vals.append(np.ones(n))
    # Session ticks of every option, flattened.
    has = lengths > 0
    o_idx = np.repeat(np.flatnonzero(has), lengths[has])
    t_idx = np.concatenate(
        [arrive[o] + np.arange(lengths[o]) for o in np.flatnonzero(has)]
        or [np.zeros(0, int)]
    )
    e_val = np.concatenate(
        [opts.energy[o] for o in np.flatnonzero(has)] or [np.zeros(0)]
    )
    # Plugs per (station, kind, tick).
    K = trace.plugs.shape[1]
    r1 = block(
        "plugs",
        S * K * T,
        np.full(S * K * T, -np.inf),
        np.repeat(trace.plugs.reshape(-1), T).astype(float),
    )
    rows.append(r1 + (station[o_idx] * K + kind[o_idx]) * T + t_idx)
    cols.append(o_idx)
    vals.append(np.ones(len(o_idx)))
    # Station limits, only where the plugs together could exceed them.
    kw = np.array(opts.plug_kw)
    worst = np.zeros(S)
    for s in range(S):
        for k in range(N_KINDS):
            on = (station == s) & (kind == k)
            worst[s] += trace.plugs[s, k] * (kw[on].max() if on.any() else 0.0)
    tight = np.flatnonzero(worst > trace.limit_kw + 1e-9)
    if len(tight):
        pos = -np.ones(S, dtype=int)
        pos[tight] = np.arange(len(tight))
        r2 = block(
            "station_limit",
            len(tight) * T,
            np.full(len(tight) * T, -np.inf),
            np.repeat(trace.limit_kw[tight], T),
        )
        sel = pos[station[o_idx]] >= 0
        rows.append(r2 + pos[station[o_idx[sel]]] * T + t_idx[sel])
        cols.append(o_idx[sel])
        vals.append(kw[o_idx[sel]])
    # Feeders: the soft limit's excess is paid (grid_stress, one slack per feeder and
    # tick); capacity is a hard limit, as the world sheds EV charging above it (a
    # plan never sheds, so it never pays `peak`).
    bg = trace.background_kw
    cap = trace.capacity_kw
    f_idx = trace.feeder_of[station[o_idx]]
    soft_col = n + np.arange(F * T)
    r = block(
        "feeder_soft",
        F * T,
        np.full(F * T, -np.inf),
        (config.soft_limit * cap - bg).T.reshape(-1),
    )
    rows += [r + f_idx * T + t_idx, r + np.arange(F * T)]
    cols += [o_idx, soft_col]
    vals += [e_val / dt_h, -np.ones(F * T)]
    slack_row = r + np.arange(F * T)
    # grid.feeder_protection sheds EV load above max(0, capacity - background); the
    # tight-feeder test checks that a plan breaks this row exactly when the env sheds.
    headroom = np.maximum(0.0, cap - bg - FEEDER_MARGIN_KW)
    r = block("feeder_capacity", F * T, np.full(F * T, -np.inf), headroom.T.reshape(-1))
    rows.append(r + f_idx * T + t_idx)
    cols.append(o_idx)
    vals.append(e_val / dt_h)
    c = np.concatenate([np.array(opts.cost), np.full(F * T, w.grid_stress * dt_h)])
    offset_parts = {
        "grid_stress": -dt_h
        * w.grid_stress
        * float(np.maximum(0.0, bg - config.soft_limit * cap).sum()),
    }
    slack_cols = {"grid_stress": slice(n, n + F * T)}
    n_cols = n + F * T
    if limits is not None:  # the network's limits, one slack per row
        station_kw = e_val / dt_h  # [kW] each session tick's draw
        for key, (r_, c_, v_, lower, upper, offset) in _network_rows(
            limits, config, trace, station[o_idx], t_idx, o_idx, station_kw
        ).items():
            count = len(upper)
            r = block(key, count, lower, upper)
            slack = n_cols + np.arange(count)
            rows += [r + r_, r + np.arange(count)]
            cols += [c_, slack]
            vals += [v_, -np.ones(count)]
            slack_row = np.concatenate([slack_row, r + np.arange(count)])
            c = np.concatenate([c, np.full(count, getattr(w, key) * dt_h)])
            offset_parts[key] = -dt_h * getattr(w, key) * offset
            slack_cols[key] = slice(n_cols, n_cols + count)
            n_cols += count
    offset = sum(offset_parts.values())
    A = sp.csr_matrix(
        (np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
        shape=(base, n_cols),
    )
    return Model(
        c,
        A,
        np.concatenate(lo),
        np.concatenate(hi),
        n,
        float(offset),
        slack_row,
        n_rows,
        offset_parts,
        slack_cols,
    )


NetworkRows = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, float]


def _network_rows(
    limits: LinearLimits,
    config: SimConfig,
    trace: EpisodeTrace,
    st: np.ndarray,
    t_idx: np.ndarray,
    o_idx: np.ndarray,
    station_kw: np.ndarray,
) -> dict[str, NetworkRows]:
    """The lindistflow rows, by reward key: (row within the block, column, value,
    lower, upper, the cost the background alone leaves [p.u. or kVA x ticks]).

    ``undervoltage``: per point of supply and tick, its deficit = base + the
    stations' kW x sensitivity, paid above 0 by the row's slack; the background's
    own deficit is the offset (the world charges what EV load adds). Rows only
    where the stations at their limits could take the bus below its floor.
    ``transformer_overload``: per station DT and tick, kVA = kW / pf, paid above
    its rating; rows only where the station's limit could exceed it.
    """
    T = trace.n_ticks
    base = limits.base_deficit_pu[:T]  # (T, B)
    sens = limits.deficit_per_kw  # (B, S)
    worst = base + sens @ trace.limit_kw  # (T, B) every station at its limit
    t_b, b = np.nonzero((worst > 0.0) & limits.supply_bus)
    pos = -np.ones(base.shape, dtype=int)
    pos[t_b, b] = np.arange(len(b))
    # every (session tick, bus its station's kW reaches) pair, at-risk buses only
    reached = sens.T > 0.0  # (S, B)
    width = max(1, int(reached.sum(axis=1).max()))
    buses = np.full((len(reached), width), -1)
    for s_, row in enumerate(reached):
        buses[s_, : row.sum()] = np.flatnonzero(row)
    i_s = np.repeat(np.arange(len(st)), width)
    b_s = buses[st].reshape(-1)
    keep = b_s >= 0
    i_s, b_s = i_s[keep], b_s[keep]
    keep = pos[t_idx[i_s], b_s] >= 0
    i_s, b_s = i_s[keep], b_s[keep]
    v = sens[b_s, st[i_s]] * station_kw[i_s]
    out = {
        "undervoltage": (
            pos[t_idx[i_s], b_s], o_idx[i_s], v,
            np.full(len(b), -np.inf), -base[t_b, b],
            float(np.maximum(0.0, base[t_b, b]).sum()),
        )
    }  # fmt: skip
    # DTs: the rating may be swapped per tick; NaN (HT) never binds.
    rating = TRANSFORMER_LIMIT * limits.dt_kva[:T]  # (T, S)
    reach = trace.limit_kw * limits.kva_per_kw  # (S,) [kVA] at the station's limit
    t_s, s_s = np.nonzero(reach[None, :] > np.nan_to_num(rating, nan=np.inf))
    dpos = -np.ones(rating.shape, dtype=int)
    dpos[t_s, s_s] = np.arange(len(s_s))
    sel = dpos[t_idx, st] >= 0
    out["transformer_overload"] = (
        dpos[t_idx[sel], st[sel]], o_idx[sel], station_kw[sel] * limits.kva_per_kw,
        np.full(len(s_s), -np.inf), rating[t_s, s_s], 0.0,
    )  # fmt: skip
    return out


def price_selection(model: Model, chosen: list[int]) -> float:
    """The model's return for one option per EV (slacks at their cheapest)."""
    return -(float(model.c @ full_point(model, chosen)) + model.offset)


def full_point(model: Model, chosen: list[int]) -> np.ndarray:
    """x for one option per EV, each slack at its cheapest: max(0, its row's excess)."""
    n = model.n_options
    x = np.zeros(len(model.c))
    x[chosen] = 1.0
    ax = model.A @ x
    x[n:] = np.maximum(0.0, ax[model.slack_row] - model.hi[model.slack_row])
    return x


def selection_feasible(model: Model, chosen: list[int]) -> bool:
    """Does one option per EV respect every hard row (plugs, station limits, capacity)?"""
    x = np.zeros(len(model.c))
    x[chosen] = 1.0
    hard = np.ones(len(model.hi), dtype=bool)
    hard[model.slack_row] = False
    ax = (model.A @ x)[hard]
    return bool(
        np.all(ax <= model.hi[hard] + 1e-9) and np.all(ax >= model.lo[hard] - 1e-9)
    )
