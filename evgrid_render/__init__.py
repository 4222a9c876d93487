"""The city view's drawing and its episode driver, shared by both front ends.

The desktop window (``viz``: keys, the live loop, ``main.py``) and the web page
(``evgrid_web``) draw the same frames with this package and import nothing of each
other. ``controller`` drives an episode without pygame; ``view.CityView`` draws one
frame (map layer + panel + overlays) into any pygame Surface, offscreen included;
``recorder`` films frames from simulation time into an MP4. Importing this package
imports nothing heavy; pygame is imported by the modules that draw.
"""
