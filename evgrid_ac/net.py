"""The core's network description as a pandapower net, and one AC solve on it."""

from __future__ import annotations

from typing import Any

import numpy as np

from evgrid_core.distflow import NetworkState
from evgrid_core.network import BASE_MVA, Network
from evgrid_core.oltc import TAP_MAX, TAP_MIN, TAP_STEP_PU
from evgrid_core.optional import require


def _pandapower() -> Any:
    return require("pandapower", "the AC reference", "ac")


class PandapowerNet:
    """A pandapower net of ``network`` (bus i = core bus i) with one load per bus,
    solved by Newton-Raphson for each set of loads. Each feeder's substation
    transformer has the core's OLTC (``evgrid_core.oltc``) as a ratio tap on its
    11 kV side: tap n raises its no-load 11 kV voltage by n steps, as LinDistFlow's
    source does."""

    def __init__(self, network: Network) -> None:
        pp = _pandapower()
        self.pp, self.network = pp, network
        net = pp.create_empty_network(sn_mva=BASE_MVA)
        for b in network.buses:
            pp.create_bus(net, vn_kv=b.vn_kv, name=b.name)
        for s in network.slack:
            pp.create_ext_grid(net, s, vm_pu=1.0, va_degree=0.0)
        line_rows, trafo_rows = [], []
        heads = set(network.feeder_head.tolist())
        for i, br in enumerate(network.branches):
            if br.transformer is not None:
                t = br.transformer
                oltc = (
                    dict(tap_side="lv", tap_neutral=0, tap_min=TAP_MIN, tap_max=TAP_MAX,
                         tap_step_percent=TAP_STEP_PU * 100.0, tap_pos=0,
                         tap_changer_type="Ratio")
                    if i in heads else {}
                )  # fmt: skip
                pp.create_transformer_from_parameters(
                    net, br.from_bus, br.to_bus, sn_mva=t.sn_kva / 1000.0,
                    vn_hv_kv=t.vn_hv_kv, vn_lv_kv=t.vn_lv_kv, vkr_percent=t.vkr_percent,
                    vk_percent=t.vk_percent, pfe_kw=0.0, i0_percent=0.0, name=br.name,
                    **oltc,
                )  # fmt: skip
                trafo_rows.append(i)
            else:
                c = br.conductor
                assert c is not None
                pp.create_line_from_parameters(
                    net, br.from_bus, br.to_bus, length_km=br.length_km,
                    r_ohm_per_km=c.r_ohm_per_km, x_ohm_per_km=c.x_ohm_per_km,
                    c_nf_per_km=0.0, max_i_ka=c.max_i_ka, name=br.name,
                )  # fmt: skip
                line_rows.append(i)
        n = len(network.buses)
        pp.create_loads(net, list(range(n)), p_mw=np.zeros(n), q_mvar=np.zeros(n))
        self.net = net
        self.line_rows, self.trafo_rows = np.array(line_rows), np.array(trafo_rows)
        # the pandapower trafo row of each feeder's substation transformer (F,);
        # none when a feeder's head is a line (the probes' networks)
        row_of = {br: k for k, br in enumerate(trafo_rows)}
        head = network.feeder_head.tolist()
        self.head_rows = (
            np.array([row_of[h] for h in head])
            if all(h in row_of for h in head)
            else np.array([], dtype=np.int64)
        )
        self.solved = False

    def solve(
        self, p_kw: np.ndarray, q_kvar: np.ndarray, tap: np.ndarray | None = None
    ) -> NetworkState:
        """Newton-Raphson with loads ``p_kw`` [kW], ``q_kvar`` [kvar] at every bus
        and the substation OLTCs at ``tap`` (F,) (None: the nominal tap 0)."""
        net = self.net
        net.load["p_mw"] = p_kw / 1000.0
        net.load["q_mvar"] = q_kvar / 1000.0
        if len(self.head_rows):
            taps = np.zeros(len(self.head_rows), dtype=np.int64) if tap is None else tap
            net.trafo.loc[net.trafo.index[self.head_rows], "tap_pos"] = taps
        self.pp.runpp(
            net, algorithm="nr", init="results" if self.solved else "flat",
            calculate_voltage_angles=True, numba=False, tolerance_mva=1e-9,
        )  # fmt: skip
        self.solved = True
        n_br = len(self.network.branches)
        loading, losses, flow = np.zeros(n_br), np.zeros(n_br), np.zeros(n_br)
        if len(self.line_rows):
            r = net.res_line
            loading[self.line_rows] = r["loading_percent"].to_numpy() / 100
            losses[self.line_rows] = r["pl_mw"].to_numpy() * 1000.0
            flow[self.line_rows] = (
                np.hypot(r["p_from_mw"].to_numpy(), r["q_from_mvar"].to_numpy()) * 1e3
            )
        if len(self.trafo_rows):
            r = net.res_trafo
            loading[self.trafo_rows] = r["loading_percent"].to_numpy() / 100
            losses[self.trafo_rows] = r["pl_mw"].to_numpy() * 1000.0
            flow[self.trafo_rows] = (
                np.hypot(r["p_hv_mw"].to_numpy(), r["q_hv_mvar"].to_numpy()) * 1e3
            )
        vm = net.res_bus["vm_pu"].to_numpy().copy()
        return NetworkState(self.network, vm, loading, losses, flow, tap=tap)
