"""MP4 recording: H.264 through imageio-ffmpeg's bundled ffmpeg, fragmented.

Fragmented MP4 (``-movflags frag_keyframe+empty_moov``) stays playable when the
process is killed mid-recording. Frames come from simulation time (the caller
renders one frame per sub-step), never from the wall clock. ``-fflags +bitexact``
keeps encoder version strings out of the file so one seed gives one file.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from datetime import datetime
from pathlib import Path

import pygame

from evgrid_core.optional import require

RECORDINGS = Path(__file__).resolve().parent.parent / "recordings"


def default_path(
    scenario: str, policy: str, seed: int, folder: Path = RECORDINGS
) -> Path:
    """``recordings/<scenario>_<policy>_seed<N>_<UTC time>.mp4``."""
    stamp = datetime.utcnow().strftime("%Y%m%d-%H%M%S")
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "-", f"{scenario}_{policy}_seed{seed}")
    return folder / f"{safe}_{stamp}.mp4"


class Recorder:
    """Feeds RGB frames of one size to ffmpeg; ``close()`` finishes the file."""

    def __init__(
        self, path: Path, size: tuple[int, int], fps: int = 30, crf: int = 23
    ) -> None:
        imageio_ffmpeg = require("imageio_ffmpeg", "recording", "",
                                 package="imageio-ffmpeg")  # fmt: skip
        self.path = Path(path)
        if self.path.parent.resolve() == RECORDINGS:
            RECORDINGS.mkdir(exist_ok=True)  # the default folder, the only one made
        elif not self.path.parent.is_dir():
            raise FileNotFoundError(f"the folder {self.path.parent} does not exist")
        self.size, self.fps, self.frames = size, fps, 0
        self._gen = imageio_ffmpeg.write_frames(
            str(self.path),
            size,
            fps=fps,
            codec="libx264",
            pix_fmt_in="rgb24",
            pix_fmt_out="yuv420p",
            macro_block_size=2,
            ffmpeg_log_level="error",
            output_params=[
                "-preset",
                "veryfast",
                "-crf",
                str(crf),
                "-movflags",
                "frag_keyframe+empty_moov",
                "-fflags",
                "+bitexact",
                "-flags:v",
                "+bitexact",
                "-map_metadata",
                "-1",
            ],
        )
        self._gen.send(None)

    def add(self, surface: pygame.Surface) -> None:
        if surface.get_size() != self.size:
            raise ValueError(
                f"frame size {surface.get_size()} != recording size {self.size}"
            )
        self._gen.send(pygame.image.tobytes(surface, "RGB"))
        self.frames += 1

    def close(self) -> Path:
        if self._gen is not None:
            self._gen.close()
            self._gen = None
        return self.path


# --- Filming an episode ---------------------------------------------------------------
def skip_to_tick(ctrl, first_tick: int) -> None:  # noqa: ANN001
    """Decide, unfilmed, every decision before ``first_tick``."""
    while not ctrl.done and ctrl.env_minute < first_tick * ctrl.tick_minutes:
        ctrl.display_minute = ctrl.env_minute
        ctrl.poll(block=True)


def film(
    ctrl,  # noqa: ANN001 - the episode driver (controller.Controller)
    view,  # noqa: ANN001 - the frame's drawer (view.CityView)
    surface: pygame.Surface,
    rec: Recorder,
    frames: Iterable[int],
    frames_per_tick: int,
    after_frame: Callable[[], None] | None = None,
) -> None:
    """Film frame ``k`` of ``frames`` at ``k / frames_per_tick`` ticks of simulation
    time: every decision due by then is made first (``poll(block=True)``), so the
    video is the same on a loaded machine. The desktop's ``--record`` and the web
    page's MP4 both film through here."""
    sub = ctrl.tick_minutes / frames_per_tick
    ctrl.manual = False
    view.flags.recording = True
    for k in frames:
        ctrl.display_minute = k * sub
        ctrl.poll(block=True)
        view.render(surface)
        rec.add(surface)
        if after_frame is not None:
            after_frame()
