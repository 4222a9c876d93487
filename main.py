"""EV Grid Oracle: the city view. ``python3 main.py --help`` for the options.

With a display it opens a window; without one it renders offscreen and records
an MP4 into ``recordings/``.
"""

from viz.app import main

if __name__ == "__main__":
    raise SystemExit(main())
