"""Evaluation: paired policy comparisons, statistics, plots, the hindsight optimum.

Sits on top of ``evgrid_core``. scipy, highspy and matplotlib (the ``eval``
extra) are imported where they are used.
"""
