"""The EV Grid OpenEnv server: ``python server.py [--host H] [--port P]``.

Also ``uvicorn server:app`` (what the Docker image runs) and ``evgrid serve``.
The app itself lives in ``evgrid_openenv.app``; importing OpenEnv's server takes
several seconds, so nothing in the core or the city view imports this file.
"""

from __future__ import annotations

from evgrid_openenv.app import build_app, main

app = build_app()

if __name__ == "__main__":
    raise SystemExit(main())
