"""What binds first on each feeder under lindistflow: its voltage floor or its
thermal limit (the feeder's capacity), with and without the substation OLTCs.

`python3 bench/grid_binding.py [--scenario evening_peak] [--seed 0] [--policy greedy_eta] [--no-oltc]`

One episode is played under ``"lindistflow"``; at each feeder's most loaded tick it
prints the load against the limit, the point of supply nearest its voltage floor
(its voltage, its floor: 0.91 p.u. at 11 kV, 0.901 on a station's LV side, and its
voltage with the background load alone), the OLTC's tap, the feeder's lowest voltage over the episode, and two headrooms: the MW the feeder can still carry
before its capacity (thermal), and the extra EV MW, spread over its stations in
proportion to their limits, before a point of supply reaches its floor (voltage,
exact under LinDistFlow: the deficits are linear in the stations' kW). The smaller
binds first. ``--no-oltc`` holds every tap at 0 (the network before the OLTC).
"""

from __future__ import annotations

import argparse

import numpy as np

from evgrid_core import SimConfig
from evgrid_core.distflow import voltage_deficit
from evgrid_core.grid import GRID_MODELS, GridTick, LinDistFlow
from evgrid_core.network import EV_PF, tan_phi
from evgrid_core.policies import make_policy
from evgrid_core.rollout import play_episode

NAME = "lindistflow_binding"


class _Recording(LinDistFlow):
    """LinDistFlow that keeps every tick's ``GridTick``."""

    no_oltc = False

    def __init__(self, tables, background_kw) -> None:  # noqa: ANN001
        super().__init__(tables, background_kw)
        if self.no_oltc:
            self.tap = np.zeros_like(self.tap)
        self.limits_kw = np.array([s.limit_kw for s in tables.city.stations])
        self.ticks: dict[int, GridTick] = {}
        _Recording.last = self

    def carry(self, tick, station_kw):  # noqa: ANN001, ANN201
        g = self.ticks[tick] = super().carry(tick, station_kw)
        return g


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenario", default="evening_peak")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--policy", default="greedy_eta")
    ap.add_argument("--no-oltc", action="store_true")
    args = ap.parse_args()
    _Recording.no_oltc = args.no_oltc
    GRID_MODELS[NAME] = _Recording
    try:
        play_episode(make_policy(args.policy), args.scenario, args.seed,
                     SimConfig(grid=NAME))  # fmt: skip
    finally:
        del GRID_MODELS[NAME]
    rec = _Recording.last
    net, ticks = rec.network, rec.ticks
    sens = rec.solver.deficit_sensitivity(tan_phi(EV_PF))  # (B, S) [p.u./kW]
    feeder_of = np.asarray(rec.feeders.feeder_of)
    print(f"{args.scenario}, seed {args.seed}, {args.policy}, "
          f"{'no OLTC (tap 0)' if args.no_oltc else 'OLTC'}: each feeder at its most loaded tick")  # fmt: skip
    print("| feeder | tick | load / limit [MW] | V nearest its floor [p.u.] (floor) "
          "| same, background alone | tap "
          "| lowest V in the episode [p.u.] | thermal headroom [MW] "
          "| voltage headroom [MW] | binds first |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|")
    for f in range(net.n_feeders):
        t = max(ticks, key=lambda k: ticks[k].utilisation[f])
        g, n = ticks[t], ticks[t].network
        load = g.background_kw[f] + float(g.ev_kw[f])
        thermal = g.capacity_kw[f] - load
        w = np.where(feeder_of == f, rec.limits_kw, 0.0)
        per_kw = sens @ (w / w.sum())  # (B,) deficit per kW spread over the stations
        d = voltage_deficit(net, n.vm_pu)
        on = net.supply_bus & (net.bus_feeder == f) & (per_kw > 0)
        volt = max(float(np.min(-d[on] / per_kw[on])), 0.0)
        mine = net.supply_bus & (net.bus_feeder == f)
        b = int(np.argmin(np.where(mine, n.vm_pu - net.v_floor_pu, np.inf)))
        alone = rec.solve(rec.background_p[t], rec.background_q[t], rec.tap[t])
        low = min(float(k.network.min_supply_vm_pu[f]) for k in ticks.values())
        print(f"| F{f + 1} | {t} | {load / 1e3:.2f} / {g.capacity_kw[f] / 1e3:.2f} "
              f"| {n.vm_pu[b]:.3f} ({net.v_floor_pu[b]:.3f}) | {alone.vm_pu[b]:.3f} "
              f"| {int(n.tap[f])} "
              f"| {low:.3f} | {thermal / 1e3:.2f} | {volt / 1e3:.2f} "
              f"| {'voltage' if volt < thermal else 'thermal'} |")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
