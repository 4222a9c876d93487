"""The grid model ``"ac"``: the feeders' kW as ``FeederSum`` carries them, the
network's state by pandapower's full AC power flow (a reference, not a training
loop: see ``docs/grid.md`` for its cost per tick). Importing this registers it."""

from __future__ import annotations

import numpy as np

from evgrid_core.distflow import NetworkState
from evgrid_core.grid import NetworkGridModel, register_grid_model
from evgrid_core.tables import ScenarioTables

from .net import PandapowerNet


class ACPowerFlow(NetworkGridModel):
    """``NetworkGridModel`` solved by pandapower Newton-Raphson (one net per episode)."""

    def __init__(self, tables: ScenarioTables, background_kw: np.ndarray) -> None:
        super().__init__(tables, background_kw)
        self.pp_net = PandapowerNet(self.network)

    def solve(
        self, p_kw: np.ndarray, q_kvar: np.ndarray, tap: np.ndarray
    ) -> NetworkState:
        return self.pp_net.solve(p_kw, q_kvar, tap)


register_grid_model("ac", ACPowerFlow)
