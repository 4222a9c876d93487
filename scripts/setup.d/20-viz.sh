#!/usr/bin/env bash
# The city view. MODE=main: nothing beyond the core install (pygame-ce, imageio,
# imageio-ffmpeg with its own ffmpeg; the font ships in evgrid_render/fonts/);
# MODE=test adds Xvfb, xdotool and ImageMagick for the real-window test.
set -euo pipefail
if [ "$MODE" = test ]; then
    need=()
    command -v Xvfb >/dev/null 2>&1 || need+=(xvfb)
    command -v xdotool >/dev/null 2>&1 || need+=(xdotool)
    [ -x /usr/bin/import ] || need+=(imagemagick)
    if [ ${#need[@]} -gt 0 ]; then
        SUDO=""
        [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1 && SUDO="sudo"
        $SUDO apt-get update -q
        DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${need[@]}"
    fi
fi
# The viewer's Python needs are in the core's dependencies; check they import.
PYGAME_HIDE_SUPPORT_PROMPT=1 "$PY" -c "import pygame, imageio, imageio_ffmpeg" \
    || "$PY" -m pip install -q "pygame-ce>=2.5" "imageio>=2.34" "imageio-ffmpeg>=0.5"
