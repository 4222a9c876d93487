"""The web page: the city view and the Oracle in a browser (Gradio), for the Space.

``mount_page(app)`` mounts the page on the OpenEnv server's FastAPI app at
``/web`` and sends ``/`` there, so one address serves people (the page) and
trainers (``/ws``, ``/reset``, ``/step``: unchanged). The page draws with the
city view's own renderer (``evgrid_render``) and never imports the desktop window
(``viz``). Gradio is imported by ``mount_page``, not by this package.
"""

from __future__ import annotations

from typing import Any

PAGE_PATH = "/web"


def mount_page(app: Any, path: str = PAGE_PATH, sessions: Any = None) -> Any:
    """``app`` with the page at ``path`` and ``/`` redirected to it."""
    try:
        import gradio as gr
    except ImportError as e:  # pragma: no cover - gradio comes with openenv
        raise RuntimeError(
            f"the web page needs gradio ({e}): python3 -m pip install -e '.[web]'"
        ) from None
    from fastapi.responses import RedirectResponse

    from .page import CSS, build_page

    page = build_page(sessions)

    async def to_page() -> RedirectResponse:
        return RedirectResponse(url=f"{path}/", status_code=307)

    app.add_api_route("/", to_page, methods=["GET"], include_in_schema=False)
    app.state.evgrid_page = page
    return gr.mount_gradio_app(app, page, path=path, css=CSS, footer_links=[])
