#!/usr/bin/env bash
# The web page (evgrid_web/, mounted by server.py): both modes install the `web`
# extra (Gradio 6.31.0, which the server extra's openenv also brings). MODE=test adds
# what the browser tests drive: Debian's chromium (Playwright never downloads a
# browser here; the tests point it at /usr/bin/chromium) and Playwright 1.65.2 from
# PyPI (its Python package only: no `playwright install`).
set -euo pipefail
if ! "$PY" -c "import importlib.metadata as m, sys; sys.exit(m.version('gradio') != '6.31.0')" 2>/dev/null; then
    "$PY" -m pip install -q -e ".[web]"
fi
if [ "$MODE" = test ]; then
    if [ ! -x /usr/bin/chromium ]; then
        $SUDO apt-get update -q
        DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends chromium
    fi
    "$PY" -c "import importlib.metadata as m, sys; sys.exit(m.version('playwright') != '1.65.2')" 2>/dev/null \
        || "$PY" -m pip install -q "playwright==1.65.2"
    "$PY" -c "import playwright.sync_api" >/dev/null
fi
"$PY" -c "import gradio, PIL" >/dev/null
