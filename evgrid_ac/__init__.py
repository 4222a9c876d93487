"""The AC power-flow reference: pandapower's Newton-Raphson on the core's networks.

A layer above the core (it imports ``evgrid_core``; the core never imports it).
Its net is built from ``evgrid_core.network`` (one description, no second copy of a
number), and ``import evgrid_ac.model`` registers the grid model ``"ac"``, which
``SimConfig(grid="ac")`` finds through the ``evgrid.grid_models`` entry points.
Needs pandapower: ``pip install 'ev-grid-oracle[ac]'``. Imports nothing heavy here.
"""
