"""A tab as a video: ``record`` (``start``, then ``stop``).

Like ``pdf`` and ``screenshot``'s ``save_to`` it reads the page and changes nothing in
it, but writes a file: offered as read-only, the file only where ``save_to`` may
write, new, 0600 — reserved when the recording starts, finished when it stops (or
reaches its bound, or its tab goes, or the gateway exits: it plays up to there). A
tab that goes takes its id with it, so no ``stop`` reports that recording: its file
is at the ``path`` that ``start`` answered.
The video is VP8 in WebM, timed by the screencast (``gateway.page.capture.recording``); it
needs the extra ``chrome-ssh-gateway[video]`` (PyAV), and says so when it is missing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import BaseModel, Field

from gateway.browsers.session import TabSession
from gateway.errors import NotAllowed
from gateway.output.absent import absent
from gateway.output.files import default_save_path

from .args import TabArg
from .definition import TabCall, tab_tool
from .saving import save_path

if TYPE_CHECKING:
    from gateway.page.capture.recording import Recording

__all__ = ["TOOLS"]

MAX_BYTES = 256 * 1024 * 1024
"""A recording's file size bound (at ~1.5 Mbit/s, about 20 minutes of a busy page)."""


class Recorded(BaseModel):
    tab: int
    target: str
    path: str
    recording: bool = absent(False)
    """True after ``start``: the file is being written."""
    seconds: float | None = absent()
    frames: int | None = absent()
    bytes: int | None = absent()
    ended: str | None = absent()
    """Why it ended before ``stop`` was called (a bound reached, the file not finished)."""

    def written(self) -> list[str]:
        """The video, once finished and kept (``WritesFiles``)."""
        return [self.path] if self.frames else []


def _summary(on: TabSession, recording: Recording) -> Recorded:
    return Recorded(tab=on.tab.id, target=on.browser.name, path=str(recording.path),
                    seconds=round(recording.writer.duration_s, 3), frames=recording.writer.frames,
                    bytes=recording.size, ended=recording.why_ended or None)


@tab_tool("Record a tab as video", read_only=True, lock=False)
async def record(
    on: TabCall,
    tab: TabArg,
    action: Literal["start", "stop"],
    save_to: Annotated[str | None, Field(description="New .webm file's absolute path.",
                                         min_length=1, max_length=4096)] = None,
    max_seconds: Annotated[float, Field(ge=1, le=3600)] = 600,
) -> Recorded:
    """Record a tab as a WebM video: start, act, then stop to get the file."""
    if on.gateway.live is None:
        raise NotAllowed("this gateway was built without screencasts")
    if action == "stop":
        return _summary(on, await on.gateway.live.recordings.stop(on.tab))
    path = await save_path(on.gateway, save_to) or default_save_path("video", ".webm")
    started = await on.gateway.live.recordings.start(on, path, max_seconds=max_seconds,
                                          max_bytes=MAX_BYTES)
    return Recorded(tab=on.tab.id, target=on.browser.name, path=str(started.path),
                    recording=True)


TOOLS = (record,)
