"""The web page: the city view and the Oracle in a browser (Gradio), for the Space.

``mount_page(app)`` mounts the page on the OpenEnv server's FastAPI app at
``/web`` and sends ``/`` there, so one address serves people (the page) and
trainers (``/ws``, ``/reset``, ``/step``: unchanged). The page draws with the
city view's own renderer (``evgrid_render``) and never imports the desktop window
(``viz``). Gradio is imported by ``mount_page``, not by this package.

The page's Gradio app runs on an event loop of its own (``own_loop``; trainers'
WebSocket sessions step on uvicorn's: ``EVGRID_WEB_OWN_LOOP=0`` shares it, to
compare) behind ``guard.PageGuard`` (only the routes the page
uses, ids and bodies checked, a tab's end noticed), and Gradio keeps its per-session
copy of the page's settings for at most ``STATE_SESSIONS`` session ids (its default,
10,000, lets unknown clients hold about 650 MiB).
"""

from __future__ import annotations

import os
from typing import Any

from evgrid_core.optional import require

PAGE_PATH = "/web"
STATE_SESSIONS = 256  # [session ids] Gradio's per-session state kept (~66 KiB each)


def mount_page(app: Any, path: str = PAGE_PATH, sessions: Any = None) -> Any:
    """``app`` with the page at ``path`` and ``/`` redirected to it."""
    gr = require("gradio", "the web page", "web")
    from fastapi.responses import RedirectResponse
    from starlette.routing import Mount

    from .guard import PageGuard
    from .own_loop import OwnLoop, lifespan
    from .page import CSS, build_page

    page = build_page(sessions)
    page.state_session_capacity = STATE_SESSIONS  # read when Gradio's app is made

    async def to_page() -> RedirectResponse:
        return RedirectResponse(url=f"{path}/", status_code=307)

    app.add_api_route("/", to_page, methods=["GET"], include_in_schema=False)
    app.state.evgrid_page = page
    own_loop = os.environ.get("EVGRID_WEB_OWN_LOOP", "1") != "0"
    parent_lifespan = app.router.lifespan_context
    app = gr.mount_gradio_app(app, page, path=path, css=CSS, footer_links=[])
    mount = next(
        r for r in app.router.routes if isinstance(r, Mount) and r.path == path
    )
    gradio_app = mount.app
    mount.app = PageGuard(
        gradio_app,
        fn_ids=lambda: page.fns.keys(),
        on_gone=page.evgrid_sessions.close_owner,  # type: ignore[attr-defined]
    )
    if own_loop:  # Gradio's startup moves from uvicorn's loop to the page's
        app.router.lifespan_context = parent_lifespan
        mount.app = OwnLoop(mount.app)
        lifespan(app, mount.app, gradio_app)
    return app
