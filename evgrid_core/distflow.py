"""The network's state in a tick, and the linearised DistFlow that computes it fast.

LinDistFlow (Baran & Wu 1989, the DistFlow branch equations with the loss terms
dropped): on a radial network each branch carries the loads downstream of it, and
each bus's squared voltage falls from its parent's by twice the branch's r P + x Q
(per unit). So with ``D`` the (branches x buses) 0/1 matrix "bus k lies below
branch b", the flows are ``P = D p`` and the squared voltages are
``v^2 = 1 - 2 D^T (r P + x Q)``: two matrix products per tick, built once per
network. Losses are estimated from those flows (``r (P^2 + Q^2) / v_parent^2``),
loading as ``|S| / v_child`` against each branch's rating. Its error against the
full AC power flow (``evgrid_ac``) is measured in ``docs/grid.md``.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from .network import BASE_MVA, Network


@dataclass(frozen=True)
class NetworkState:
    """What the network's buses and branches did in one tick (any solver).

    Observation-free diagnostics: nothing in the reward or the observation reads
    them (yet). The per-feeder summaries are computed when first read.
    """

    network: Network
    vm_pu: np.ndarray  # (B,) [p.u.] bus voltage magnitude
    loading: np.ndarray  # (Br,) [0-1] branch current / rating
    losses_kw: np.ndarray  # (Br,) [kW] branch series losses

    @cached_property
    def min_vm_pu(self) -> np.ndarray:
        """(F,) [p.u.] each feeder's lowest bus voltage."""
        out = np.full(self.network.n_feeders, np.inf)
        np.minimum.at(out, self.network.bus_feeder, self.vm_pu)
        return out

    @cached_property
    def feeder_losses_kw(self) -> np.ndarray:
        """(F,) [kW] each feeder's series losses, its transformers' included."""
        net = self.network
        return np.bincount(net.branch_feeder, self.losses_kw, minlength=net.n_feeders)

    @cached_property
    def substation_loading(self) -> np.ndarray:
        """(F,) [0-1] each feeder's 66/11 kV transformer."""
        return self.loading[self.network.feeder_head]

    @cached_property
    def station_transformer_loading(self) -> np.ndarray:
        """(S,) [0-1] each station's distribution transformer (NaN: an HT station)."""
        br = self.network.station_branch
        return np.where(br >= 0, self.loading[np.maximum(br, 0)], np.nan)

    @cached_property
    def max_line_loading(self) -> np.ndarray:
        """(F,) [0-1] each feeder's most loaded line section."""
        net = self.network
        out = np.zeros(net.n_feeders)
        lines = np.array([b.conductor is not None for b in net.branches])
        np.maximum.at(out, net.branch_feeder[lines], self.loading[lines])
        return out


class LinDistFlowSolver:
    """LinDistFlow on one network: matrices built once, a tick is a few products."""

    def __init__(self, network: Network) -> None:
        self.network = network
        n_bus = len(network.buses)
        D = np.zeros((len(network.branches), n_bus))
        below: list[list[int]] = [[] for _ in range(n_bus)]  # branches above a bus
        for i, b in enumerate(network.branches):  # parents first
            below[b.to_bus] = [*below[b.from_bus], i]
        for k, above in enumerate(below):
            D[above, k] = 1.0
        self.D = D
        self.r, self.x = network.impedance_pu()
        self.rating = network.rating_pu()
        self.parent = np.array([b.from_bus for b in network.branches])
        self.child = np.array([b.to_bus for b in network.branches])
        self.scale = 1.0 / (1000.0 * BASE_MVA)  # kW -> p.u.

    def solve(self, p_kw: np.ndarray, q_kvar: np.ndarray) -> NetworkState:
        """The state with loads ``p_kw`` [kW], ``q_kvar`` [kvar] at every bus (B,)."""
        D, s = self.D, self.scale
        P, Q = D @ p_kw * s, D @ q_kvar * s  # (Br,) [p.u.] flows
        v2 = 1.0 - 2.0 * ((self.r * P + self.x * Q) @ D)  # (B,) slack rows stay 1
        vm = np.sqrt(v2)
        S2 = P * P + Q * Q
        losses = self.r * S2 / v2[self.parent] / s
        loading = np.sqrt(S2) / vm[self.child] / self.rating
        return NetworkState(self.network, vm, loading, losses)
