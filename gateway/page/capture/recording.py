"""Recording a tab to a video file: ``record`` with ``start``, then ``stop``.

A recording watches the tab's screencast (``gateway.page.capture.screencast``) like a live
view does, and feeds each frame to a ``VideoWriter`` in a worker thread (FFmpeg's
work is CPU: the event loop keeps serving every other call meanwhile). It takes the
newest frame each time the writer is free, so a page that paints faster than the
encoder keeps up skips frames instead of queueing them.

Bounded: at most ``MAX_RECORDINGS`` at once in a gateway (each costs encoding CPU),
one per tab, each ``max_seconds`` long and ``max_bytes`` big at most; a recording
that reaches a bound, or whose tab goes, ends by itself and its file is finished
then. The gateway exiting finishes every file too: what was recorded stays playable.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

import anyio
import anyio.abc
import anyio.to_thread
import structlog

from gateway.errors import GatewayError, InvalidArgument
from gateway.output.files import open_private
from gateway.tabs.tab import Slot

from .video import VideoWriter

if TYPE_CHECKING:
    from gateway.browsers.browser import Browser
    from gateway.browsers.session import TabSession
    from gateway.tabs.tab import Tab

    from .screencast import Screencasts

__all__ = ["MAX_RECORDINGS", "Recording", "Recordings", "Timeline"]

log = structlog.get_logger("gateway.recording")

MAX_RECORDINGS = 4
MAX_FPS = 25
"""Frames encoded a second at most: a page that paints at 60 fps would otherwise cost a
core per recording. Between two frames the recorder waits, and then takes the newest,
so the video still ends on what the page showed last."""
STOP_TIMEOUT_S = 30.0
"""How long ``stop`` waits for the file to be finished (the encoder's last frames)."""
FIRST_FRAME_S = 3.0
"""How long ``stop`` right after ``start`` waits for the screencast's first frame: a
video needs one, and Chrome sends it only once the page paints."""


class Timeline:
    """Where a frame goes in the video. Chrome's ``timestamp`` says when the page
    painted (not when the frame crossed the SSH link), so it spaces the frames; the
    gateway's own clock anchors them to the recording's start, because the browser's
    clock is another machine's. A frame cannot have been painted after it arrived: one
    that claims so (the screencast's last frame handed over at the start, painted long
    before) moves the anchor to itself."""

    def __init__(self) -> None:
        self.start = time.monotonic()
        self._anchor: tuple[float, float] | None = None   # (timestamp, seconds in)

    def now(self) -> float:
        return time.monotonic() - self.start

    def place(self, timestamp: float | None) -> float:
        """Seconds into the video of a frame painted at Chrome's ``timestamp`` that
        arrives now."""
        arrived = self.now()
        if not isinstance(timestamp, (int, float)):
            return arrived
        if self._anchor is not None:
            painted = self._anchor[1] + timestamp - self._anchor[0]
            if painted <= arrived:
                return painted
        self._anchor = (timestamp, arrived)
        return arrived


@dataclass(eq=False)
class Recording:
    """One tab's recording, running until ``ended`` is set."""

    tab: Tab
    path: Path
    file: BinaryIO
    writer: VideoWriter
    timeline: Timeline = field(default_factory=Timeline)
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    first_frame: anyio.Event = field(default_factory=anyio.Event)
    ended: anyio.Event = field(default_factory=anyio.Event)
    why_ended: str = ""
    stopping: bool = False

    @property
    def size(self) -> int:
        return self.path.stat().st_size if self.path.exists() else 0


_ENDED: Slot[Recording] = Slot("ended recording")
"""A tab's recording that ended by itself, kept for the ``stop`` that reports it."""


class Recordings:
    """The gateway's running recordings, each a task in ``tasks``."""

    def __init__(self, tasks: anyio.abc.TaskGroup, screencasts: Screencasts) -> None:
        self._tasks = tasks
        self._screencasts = screencasts
        self._running: dict[Tab, Recording] = {}

    async def start(self, session: TabSession, path: Path, *, max_seconds: float,
                    max_bytes: int) -> Recording:
        """Start recording the session's tab into the new file ``path``; the recording
        runs on past the call, until stopped, its tab closed or its bounds reached."""
        tab = session.tab
        running = self._running.get(tab)
        if running is not None:
            raise InvalidArgument(f"tab {tab.id} is being recorded already (to "
                                  f"{running.path}); stop that first (action: stop)")
        if len(self._running) >= MAX_RECORDINGS:
            raise InvalidArgument(f"{MAX_RECORDINGS} recordings are running, the most a "
                                  "gateway runs at once; stop one first (action: stop)")
        file = open_private(path, exclusive=True)
        try:
            writer = await anyio.to_thread.run_sync(
                lambda: VideoWriter(file, max_seconds=max_seconds, max_bytes=max_bytes))
        except BaseException:
            file.close()
            path.unlink(missing_ok=True)
            raise
        tab.clear(_ENDED)  # a new recording: how the last one ended is old news
        recording = self._running[tab] = Recording(tab, path, file, writer)
        self._tasks.start_soon(self._run, session.browser, recording)
        return recording

    async def stop(self, tab: Tab) -> Recording:
        """Stop ``tab``'s recording and wait for its file to be finished; with none
        running, the last one that ended by itself is reported as it ended."""
        recording = self._running.get(tab)
        if recording is None:
            ended = tab.peek(_ENDED)
            tab.clear(_ENDED)
            if ended is not None:
                return ended
            raise InvalidArgument(f"tab {tab.id} is not being recorded; start a recording "
                                  "with action: start")
        recording.stopping = True
        with anyio.move_on_after(FIRST_FRAME_S):
            await _either(recording.first_frame, recording.ended)
        recording.scope.cancel()
        with anyio.fail_after(STOP_TIMEOUT_S):
            await recording.ended.wait()
        return recording

    async def _run(self, browser: Browser, recording: Recording) -> None:
        writer = recording.writer
        try:
            with recording.scope:
                async with self._screencasts.watch(browser, recording.tab) as mailbox:
                    while (frame := await mailbox.get()) is not None:
                        taken = recording.timeline.now()
                        at = recording.timeline.place(frame.metadata.get("timestamp"))
                        if not await anyio.to_thread.run_sync(writer.add, frame.jpeg, at):
                            break
                        if writer.frames:
                            recording.first_frame.set()
                        await anyio.sleep(max(taken + 1 / MAX_FPS - recording.timeline.now(), 0))
                    recording.why_ended = (f"the recording reached its {writer.full} bound"
                                           if writer.full else mailbox.reason or
                                           "the tab's screencast ended")
        except GatewayError as exc:
            recording.why_ended = str(exc)
        except Exception as exc:  # a bug here ends this recording, never the gateway
            log.exception("recording failed", tab=recording.tab.id)
            recording.why_ended = f"the recording failed ({type(exc).__name__}: {exc})"
        finally:
            self._running.pop(recording.tab, None)
            if not recording.stopping:
                recording.tab.put(_ENDED, recording)
            stopped_at = recording.timeline.now()
            with anyio.CancelScope(shield=True):
                try:
                    await anyio.to_thread.run_sync(writer.close, stopped_at)
                except Exception as exc:  # a file FFmpeg could not finish: said, kept
                    recording.why_ended = f"the video could not be finished: {exc}"
                    log.warning("recording not finished", tab=recording.tab.id,
                                error=str(exc))
                finally:
                    _finish_file(recording, writer.frames)
                    recording.ended.set()


def _finish_file(recording: Recording, frames: int) -> None:
    """Close the recording's file, and remove it if it holds no frame. Never raises: a
    disk that fails here (a full one, on the last flush) is said in ``why_ended`` and
    logged — it must not end the task group every recording runs in."""
    reasons = [recording.why_ended]
    try:
        recording.file.close()
    except OSError as exc:
        log.warning("recording file not closed", tab=recording.tab.id, error=str(exc))
        reasons.append(f"the file could not be written to the end ({exc})")
    if not frames:
        reasons[0] = reasons[0] or "no frame came from the tab (a page that never painted)"
        try:
            recording.path.unlink(missing_ok=True)
            reasons.append("no file was kept")
        except OSError as exc:
            log.warning("empty recording not removed", tab=recording.tab.id, error=str(exc))
            reasons.append(f"its empty file could not be removed ({exc})")
    recording.why_ended = "; ".join(filter(None, reasons))


async def _either(first: anyio.Event, second: anyio.Event) -> None:
    """Return once ``first`` or ``second`` is set."""
    async with anyio.create_task_group() as tasks:
        async def wait(event: anyio.Event) -> None:
            await event.wait()
            tasks.cancel_scope.cancel()

        tasks.start_soon(wait, first)
        tasks.start_soon(wait, second)
