"""The baselines' estimates, read from an observation: what a charger would draw, the
expected queue wait, the minutes to charge, the ETA, and the first-minimum choice.

Policies see the observation, not the config: they estimate with the default world's
numbers (charge efficiency). The estimates are kernels over the observation's arrays:
a policy acts at every decision, and a dozen numpy calls on 25 x 3 arrays cost more
than the step itself (``tests/core/test_core_policy_kernels.py`` compares them with the
numpy code they replaced, bit for bit). ``policies.py`` and ``candidates.py`` read them.
"""

from __future__ import annotations

import numpy as np

from .chargers import CHARGERS, N_KINDS
from .charging import plug_kw
from .config import DEFAULTS
from .jit import kernel
from .observation import EVRequest, Observation

TYPICAL_SESSION_MIN = np.array([c.typical_session_min for c in CHARGERS])  # [min] (K,)


def plug_kw_by_kind(r: EVRequest) -> np.ndarray:
    """(K,) [kW] what the request's EV would draw from each charger kind (0: cannot)."""
    out = np.empty(N_KINDS)
    _plug_kws(float(r.max_ac_kw), float(r.max_dc_kw), out)
    return out


@kernel
def _plug_kws(max_ac_kw: float, max_dc_kw: float, out) -> None:  # noqa: ANN001
    for k in range(out.size):
        out[k] = plug_kw(k, max_ac_kw, max_dc_kw)


@kernel(inline=True)
def _wait_min(plugs: int, busy: int, queue: int, typical: float) -> float:
    """[min] queue wait at arrival at one charger kind of a station: zero with a
    free plug, else a share of a session; inf where the kind has no plug."""
    if plugs <= 0:
        return np.inf
    ahead = max(0, queue - (plugs - busy) + 1)
    return ahead * typical / max(plugs, 1)


@kernel(inline=True)
def _charge_min(kw: float, kwh: float) -> float:
    """[min] to charge ``kwh`` [kWh from the grid] at ``kw`` (no taper, no caps)."""
    return kwh / max(kw, 1e-6) * 60.0


@kernel
def _wait_into(plugs, busy, queue, typical, out) -> None:  # noqa: ANN001
    for s in range(plugs.shape[0]):
        for k in range(plugs.shape[1]):
            out[s, k] = _wait_min(plugs[s, k], busy[s, k], queue[s, k], typical[k])


@kernel
def _eta_into(
    travel_min, plugs, busy, queue, mask, typical, kw, kwh: float, out
) -> None:  # noqa: ANN001, PLR0913
    for s in range(plugs.shape[0]):
        for k in range(plugs.shape[1]):
            if mask[s, k]:
                wait = _wait_min(plugs[s, k], busy[s, k], queue[s, k], typical[k])
                out[s, k] = travel_min[s] + wait + _charge_min(kw[k], kwh)
            else:
                out[s, k] = np.inf


def _need_kwh(r: EVRequest) -> float:
    """[kWh] from the grid to charge the request to its target (the default
    efficiency: policies see the observation, not the config)."""
    return max(0.0, r.target - r.soc) * r.battery_kwh / DEFAULTS.charge_efficiency


def charge_minutes(obs: Observation) -> np.ndarray:
    """(S, K) [min] to charge the request to target on each kind (no taper, no caps)."""
    r = obs.request
    assert r is not None
    kwh = _need_kwh(r)
    per_kind = np.array([_charge_min(kw, kwh) for kw in plug_kw_by_kind(r).tolist()])
    return np.broadcast_to(per_kind, obs.plugs.shape)


def expected_wait(obs: Observation) -> np.ndarray:
    """(S, K) [min] queue wait at arrival: zero with a free plug, else a share of a session."""
    out = np.empty(obs.plugs.shape)
    _wait_into(obs.plugs, obs.busy, obs.queue, TYPICAL_SESSION_MIN, out)
    return out


def eta_minutes(obs: Observation) -> np.ndarray:
    """(S, K) [min] travel + expected wait + charging; inf where routing is invalid."""
    r = obs.request
    assert r is not None
    out = np.empty(obs.plugs.shape)
    _eta_into(obs.travel_min, obs.plugs, obs.busy, obs.queue, obs.route_mask,
              TYPICAL_SESSION_MIN, plug_kw_by_kind(r), _need_kwh(r), out)  # fmt: skip
    return out


@kernel
def _first_min(score) -> int:  # noqa: ANN001
    """``np.argmin`` of the flat ``score`` (the first smallest; the first NaN if
    there is one), or -1 when no score is finite."""
    finite, nan, best = False, -1, 0
    for i in range(score.size):
        x = score[i]
        if np.isfinite(x):
            finite = True
        if x != x:
            if nan < 0:
                nan = i
        elif x < score[best] or score[best] != score[best]:
            best = i
    if not finite:
        return -1
    return nan if nan >= 0 else best


def argmin(score: np.ndarray) -> tuple[int, int] | None:
    """(station, kind) of ``np.argmin`` of an (S, K) score, or None when no score
    is finite."""
    i = _first_min(score.reshape(-1))
    if i < 0:
        return None
    K = score.shape[1]
    return i // K, i % K
