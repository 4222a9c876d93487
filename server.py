"""The EV Grid Space: the OpenEnv server with the web page mounted.

``python server.py [--host H] [--port P]``, or ``uvicorn server:app`` (what the
Docker image runs). Trainers use ``/ws`` (and ``/reset``, ``/step``, ``/health``,
``/schema``, ``/metadata``); people open ``/`` (the page, at ``/web``).
``EVGRID_WEB=0`` serves the OpenEnv server alone (``evgrid serve`` does too). The
app itself lives in ``evgrid_openenv.app`` and the page in ``evgrid_web``; importing
OpenEnv's server and Gradio takes seconds, so nothing in the core or the city view
imports this file.
"""

from __future__ import annotations

import os

from evgrid_openenv.app import build_app, main


def with_page(app):  # noqa: ANN001, ANN201
    """``app`` with the web page, unless ``EVGRID_WEB=0``."""
    if os.environ.get("EVGRID_WEB", "1") == "0":
        return app
    from evgrid_web import mount_page

    return mount_page(app)


app = with_page(build_app())

if __name__ == "__main__":
    raise SystemExit(main(extend=with_page))
