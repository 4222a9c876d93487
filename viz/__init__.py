"""The city view: a Pygame front end that reads ``evgrid_core`` and calls ``step``.

Nothing here decides a rule of the world. Entry point: ``viz.app.main`` (``main.py``).
Importing this package imports nothing heavy; pygame is imported by the modules
that draw.
"""
