"""The city view's desktop window: a Pygame front end that reads ``evgrid_core``
and calls ``step``.

Nothing here decides a rule of the world, and nothing here draws the city: the
frames come from ``evgrid_render`` (shared with the web page, ``evgrid_web``). This
package is the window, its keys, the live loop and the command line. Entry point:
``viz.app.main`` (``main.py``). Importing this package imports nothing heavy.
"""
