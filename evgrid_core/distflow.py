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

The substation transformers' on-load tap changers (``oltc.py``) set each feeder's
source: at tap n every bus below the 66 kV slack starts from ``(1 + n step)^2``
instead of 1, the 11 kV side's no-load voltage.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from .network import BASE_MVA, TRANSFORMER_LIMIT, Network
from .oltc import tap_ratio


def voltage_deficit(net: Network, vm_pu: np.ndarray) -> np.ndarray:
    """(B,) [p.u.] ``(floor^2 - v^2) / (2 floor)`` at every bus: how far below its
    voltage floor each bus is (negative: above it), on the squared voltage."""
    floor = net.v_floor_pu
    return (floor * floor - vm_pu * vm_pu) / (2.0 * floor)


@dataclass(frozen=True)
class NetworkState:
    """What the network's buses and branches did in one tick (any solver).

    The reward's network parts (``reward.network_terms``), the KPIs and the
    observation read the summaries below, computed when first read. The grid model
    adds the tick's transformer ratings (``dt_kva``, a scenario can swap a DT) and
    the voltage deficits of the background alone (``background_deficit_pu``: what
    no dispatch changes).
    """

    network: Network
    vm_pu: np.ndarray  # (B,) [p.u.] bus voltage magnitude
    loading: np.ndarray  # (Br,) [0-1] branch current / rating
    losses_kw: np.ndarray  # (Br,) [kW] branch series losses
    flow_kva: np.ndarray  # (Br,) [kVA] apparent power into each branch (parent end)
    dt_kva: np.ndarray | None = None  # (S,) [kVA] DT ratings now; None: the network's
    background_deficit_pu: np.ndarray | None = None  # (B,) the background's alone
    tap: np.ndarray | None = None  # (F,) each substation OLTC's tap (``oltc.py``)

    @cached_property
    def voltage_deficit_pu(self) -> np.ndarray:
        """(B,) [p.u.] how far each point of supply is below its floor (0 above it).

        Measured on the squared voltage, ``(floor^2 - v^2) / (2 floor)``: within
        0.0005 p.u. of ``floor - v`` down to 0.03 p.u. below, and linear in the loads
        under LinDistFlow (``v^2`` is), so the optimum's model charges it exactly.
        """
        d = voltage_deficit(self.network, self.vm_pu)
        return np.where(self.network.supply_bus & (d > 0.0), d, 0.0)

    @cached_property
    def undervoltage(self) -> np.ndarray:
        """(F,) bool: a point of supply of the feeder is below its voltage floor."""
        net = self.network
        below = self.voltage_deficit_pu > 0.0
        return np.bincount(net.bus_feeder, below, minlength=net.n_feeders) > 0

    @cached_property
    def min_supply_vm_pu(self) -> np.ndarray:
        """(F,) [p.u.] each feeder's lowest voltage at a point of supply."""
        net = self.network
        out = np.full(net.n_feeders, np.inf)
        on = net.supply_bus
        np.minimum.at(out, net.bus_feeder[on], self.vm_pu[on])
        return out

    @cached_property
    def min_supply_bus(self) -> np.ndarray:
        """(F,) each feeder's point of supply with the lowest voltage (bus index;
        the first on a tie)."""
        net = self.network
        vm = np.where(net.supply_bus, self.vm_pu, np.inf)
        out = np.zeros(net.n_feeders, dtype=np.int64)
        for f in range(net.n_feeders):
            out[f] = int(np.argmin(np.where(net.bus_feeder == f, vm, np.inf)))
        return out

    @cached_property
    def min_supply_kv(self) -> np.ndarray:
        """(F,) [kV] that bus's voltage: its p.u. times its nominal kV."""
        kv = np.array([self.network.buses[b].vn_kv for b in self.min_supply_bus])
        return self.vm_pu[self.min_supply_bus] * kv

    @cached_property
    def dt_rating_kva(self) -> np.ndarray:
        """(S,) [kVA] each station's DT rating this tick (NaN: an HT station)."""
        return self.network.station_dt_kva if self.dt_kva is None else self.dt_kva

    @cached_property
    def dt_overload_kva(self) -> np.ndarray:
        """(S,) [kVA] the apparent power each station's DT carries above its rating
        times ``TRANSFORMER_LIMIT`` (0 for an HT station)."""
        br = self.network.station_branch
        flow = np.where(br >= 0, self.flow_kva[np.maximum(br, 0)], 0.0)
        over = flow - TRANSFORMER_LIMIT * self.dt_rating_kva
        return np.where(over > 0.0, over, 0.0)  # NaN (HT) compares False

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
        """(S,) [0-1] each station's distribution transformer: the kVA it carries
        over its rating this tick (NaN: an HT station). By kVA, not current, so it
        is above ``TRANSFORMER_LIMIT`` exactly when ``dt_overload_kva`` is above 0."""
        br = self.network.station_branch
        flow = np.where(br >= 0, self.flow_kva[np.maximum(br, 0)], np.nan)
        return flow / self.dt_rating_kva

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
        self.head = network.feeder_head
        self.below_slack = np.ones(n_bus, dtype=bool)
        self.below_slack[list(network.slack)] = False

    def source_v2(self, tap: np.ndarray | None) -> np.ndarray | float:
        """(B,) each bus's squared no-load voltage at the OLTCs' taps (F,): the
        slack's 1, its feeder's ``tap_ratio^2`` below the substation; 1 if None."""
        if tap is None:
            return 1.0
        ratio = tap_ratio(tap)[self.network.bus_feeder]
        return np.where(self.below_slack, ratio * ratio, 1.0)

    def head_drop(self, p_kw: np.ndarray, q_kvar: np.ndarray) -> np.ndarray:
        """(..., F) [p.u.] how far each feeder's busbar's squared voltage falls
        below its source's through the substation transformer, ``2 (r P + x Q)``
        at the feeder's head, with loads ``p_kw``, ``q_kvar`` (..., B): what the
        OLTC's regulator sees (``oltc.tap_schedule``)."""
        D, h, s = self.D, self.head, self.scale
        P, Q = p_kw @ D[h].T * s, q_kvar @ D[h].T * s
        return 2.0 * (self.r[h] * P + self.x[h] * Q)

    def solve(
        self, p_kw: np.ndarray, q_kvar: np.ndarray, tap: np.ndarray | None = None
    ) -> NetworkState:
        """The state with loads ``p_kw`` [kW], ``q_kvar`` [kvar] at every bus (B,)
        and the substation OLTCs at ``tap`` (F,) (None: the nominal tap 0)."""
        D, s = self.D, self.scale
        P, Q = D @ p_kw * s, D @ q_kvar * s  # (Br,) [p.u.] flows
        # (B,) the slack rows stay 1: no branch lies above them
        v2 = self.source_v2(tap) - 2.0 * ((self.r * P + self.x * Q) @ D)
        vm = np.sqrt(v2)
        S2 = P * P + Q * Q
        losses = self.r * S2 / v2[self.parent] / s
        flow = np.sqrt(S2)
        loading = flow / vm[self.child] / self.rating
        return NetworkState(self.network, vm, loading, losses, flow / s, tap=tap)

    def deficit_sensitivity(self, kvar_per_kw: float) -> np.ndarray:
        """(B, S) [p.u. per kW] how much each bus's ``voltage_deficit_pu`` (before
        its floor at 0) grows per kW a station draws at ``kvar_per_kw``: from
        ``v^2 = 1 - 2 D^T (r D p + x D q)``, ``(D^T diag(r + x tan phi) D) / floor``
        at the station's bus. Exact: the deficit is linear in the loads."""
        net, D = self.network, self.D
        per_kw = (D.T * (self.r + self.x * kvar_per_kw)) @ D[:, net.station_bus]
        return per_kw * self.scale / net.v_floor_pu[:, None]
