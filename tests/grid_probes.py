"""Probe networks small enough to compute by hand, shared by the LinDistFlow tests
(tests/core/test_grid_network.py) and the AC reference's (tests/ac/)."""

import numpy as np

from evgrid_core.equipment import Conductor, TransformerType
from evgrid_core.network import Branch, Bus, Network


def two_bus() -> Network:
    """11 kV slack, 1 km of a 1 + 2j ohm/km line, the load at the far end."""
    line = Conductor("probe", 1.0, 2.0, 0.2)
    return Network(
        (Bus("slack", 11.0, 0, "grid"), Bus("load", 11.0, 0, "locality")),
        (Branch("line", 0, 1, 1.0, line),),
        (0,),
        np.zeros((1, 2)),
        np.array([1]),
        np.array([-1]),
    )


def three_bus() -> Network:
    """66 kV slack, a 10 MVA 66/11 kV transformer (vk 8 %, vkr 1 %) to bus A, 2 km
    of a 0.3 + 0.35j ohm/km line to bus B."""
    tx = TransformerType("probe 10 MVA", 10_000.0, 66.0, 11.0, 8.0, 1.0)
    line = Conductor("probe", 0.3, 0.35, 0.3)
    buses = (Bus("slack", 66.0, 0, "grid"), Bus("A", 11.0, 0, "substation"),
             Bus("B", 11.0, 0, "locality"))  # fmt: skip
    return Network(
        buses,
        (Branch("tx", 0, 1, transformer=tx), Branch("line", 1, 2, 2.0, line)),
        (0,),
        np.zeros((1, 3)),
        np.array([2]),
        np.array([-1]),
    )
