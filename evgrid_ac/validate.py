"""LinDistFlow against pandapower on the loads of whole episodes.

`python3 -m evgrid_ac.validate [--seed 0] [--policy greedy_eta] [--every 1]` prints
the table in docs/grid.md: per scenario, an episode run under ``"lindistflow"``;
every tick's bus loads (background spread over the buses, the stations' carried EV
kW) solved again by pandapower's Newton-Raphson; the errors of the fast model.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

import numpy as np

from evgrid_core import SCENARIOS, SimConfig
from evgrid_core.distflow import NetworkState
from evgrid_core.grid import GRID_MODELS, LinDistFlow
from evgrid_core.network import city_network
from evgrid_core.policies import make_policy
from evgrid_core.rollout import play_episode

from .net import PandapowerNet

RECORDING = "lindistflow_recording"


class _Recording(LinDistFlow):
    """LinDistFlow that keeps every tick's bus loads and state: the solve of the
    carried loads, the first in ``carry`` (the background's alone, which ``carry``
    solves next for the reward, is not kept)."""

    log: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray, NetworkState]]

    def __init__(self, tables, background_kw) -> None:  # noqa: ANN001
        super().__init__(tables, background_kw)
        self.log, self._tick, self._keep = {}, 0, False
        _Recording.last = self

    def carry(self, tick, station_kw):  # noqa: ANN001, ANN201
        self._tick, self._keep = tick, True
        return super().carry(tick, station_kw)

    def solve(
        self, p_kw: np.ndarray, q_kvar: np.ndarray, tap: np.ndarray
    ) -> NetworkState:
        state = super().solve(p_kw, q_kvar, tap)
        if self._keep:  # carry's first solve: the tick's carried loads
            self.log[self._tick] = (p_kw.copy(), q_kvar.copy(), tap, state)
            self._keep = False
        return state


@dataclass(frozen=True)
class Errors:
    """The fast model's errors against the AC reference over an episode's ticks."""

    scenario: str
    ticks: int
    min_vm_ac: float  # [p.u.] the lowest bus voltage the AC reference saw
    max_dv: float  # [p.u.] max |V_lin - V_ac| over buses and ticks
    mean_dv: float  # [p.u.] mean |V_lin - V_ac|
    max_dloading: float  # [0-1] max |loading_lin - loading_ac| over branches and ticks
    mean_dloading: float  # [0-1]
    losses_ratio: float  # LinDistFlow's summed losses / the AC reference's
    ac_ms_per_solve: float  # [ms]


def episode_loads(scenario: str, seed: int, policy: str) -> _Recording:
    GRID_MODELS[RECORDING] = _Recording
    try:
        play_episode(make_policy(policy), scenario, seed, SimConfig(grid=RECORDING))
    finally:
        del GRID_MODELS[RECORDING]
    return _Recording.last


def compare(
    scenario: str, seed: int = 0, policy: str = "greedy_eta", every: int = 1
) -> Errors:
    import time

    rec = episode_loads(scenario, seed, policy)
    ac = PandapowerNet(city_network())
    dv, dl, loss_lin, loss_ac, vmin, spent = [], [], 0.0, 0.0, np.inf, 0.0
    ticks = sorted(rec.log)[::every]
    for t in ticks:
        p, q, tap, lin = rec.log[t]
        t0 = time.perf_counter()
        ref = ac.solve(p, q, tap)
        spent += time.perf_counter() - t0
        dv.append(np.abs(lin.vm_pu - ref.vm_pu))
        dl.append(np.abs(lin.loading - ref.loading))
        loss_lin += lin.losses_kw.sum()
        loss_ac += ref.losses_kw.sum()
        vmin = min(vmin, float(ref.vm_pu.min()))
    dv_all, dl_all = np.concatenate(dv), np.concatenate(dl)
    return Errors(
        scenario, len(ticks), vmin, float(dv_all.max()), float(dv_all.mean()),
        float(dl_all.max()), float(dl_all.mean()), loss_lin / loss_ac,
        spent / len(ticks) * 1e3,
    )  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--policy", default="greedy_eta")
    ap.add_argument("--every", type=int, default=1, help="solve every Nth tick")
    ap.add_argument("--scenarios", default=",".join(SCENARIOS))
    args = ap.parse_args()
    print("| scenario | ticks | lowest V (AC) [p.u.] | max abs dV [p.u.] | mean abs dV [p.u.] "
          "| max abs d loading [%-pt] | mean abs d loading [%-pt] | losses lin/AC | AC ms/solve |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|")
    for sc in args.scenarios.split(","):
        e = compare(sc, args.seed, args.policy, args.every)
        print(f"| {sc} | {e.ticks} | {e.min_vm_ac:.4f} | {e.max_dv:.4f} | {e.mean_dv:.4f} | "
              f"{e.max_dloading * 100:.2f} | {e.mean_dloading * 100:.2f} | "
              f"{e.losses_ratio:.3f} | {e.ac_ms_per_solve:.0f} |")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
