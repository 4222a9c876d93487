"""The EV Grid Space: the OpenEnv server with the web page mounted.

``python server.py [--host H] [--port P]``, or ``uvicorn server:app`` with the
transport's flags (what the Docker image runs: ``evgrid_openenv.transport``).
Trainers use ``/ws`` (and ``/reset``, ``/step``, ``/health``, ``/schema``,
``/metadata``); people open ``/`` (the page, at ``/web``). ``EVGRID_WEB=0`` serves
the OpenEnv server alone (``evgrid serve`` does too). The app itself lives in
``evgrid_openenv.app`` and the page in ``evgrid_web``; importing OpenEnv's server
and Gradio takes seconds, so nothing in the core or the city view imports this file.

``app`` is built on first use (``uvicorn server:app`` asks for it), so ``python
server.py``, which builds its own from the command line's options, builds the app
and the page once.
"""

from __future__ import annotations

import os
from typing import Any

from evgrid_openenv.app import build_app, main


def with_page(app):  # noqa: ANN001, ANN201
    """``app`` with the web page, unless ``EVGRID_WEB=0``."""
    if os.environ.get("EVGRID_WEB", "1") == "0":
        return app
    from evgrid_web import mount_page

    return mount_page(app)


def __getattr__(name: str) -> Any:
    """``server.app``: the app with the page, built on first use (PEP 562)."""
    if name != "app":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    app = globals()["app"] = with_page(build_app())
    return app


if __name__ == "__main__":
    raise SystemExit(main(extend=with_page))
