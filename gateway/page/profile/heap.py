"""Taking a heap snapshot of a tab, written to a file as it arrives.

``HeapProfiler.takeHeapSnapshot`` answers only once the whole snapshot has been sent
as ``HeapProfiler.addHeapSnapshotChunk`` events (1 MB of JSON text each) on the
tab's session. A listener on that session appends each chunk to the file the moment
it is read off the socket, so the gateway holds one chunk at a time however large the
heap; past ``max_bytes`` it stops writing, and the file is removed once Chrome is done.
The summary is read back from the file afterwards, in a worker thread
(``heap_summary``), so the event loop serves other calls meanwhile.

Progress: Chrome's ``reportHeapSnapshotProgress`` (objects done of total) while it
builds the snapshot, then the bytes received, then a final report.

Chrome cannot stop a snapshot once asked (its progress hook never aborts), and the
page's main thread is busy until it is done. A cancelled call stops listening at
once (its file is removed by the caller) and does not wait for Chrome; what Chrome
still sends of it is dropped. Chrome runs snapshots as tasks in order on the page's
thread, and ``HeapProfiler.collectGarbage`` is one more such task: the next snapshot
listens only once Chrome has answered it, so no chunk of an abandoned snapshot ever
lands in its file.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

import anyio
import anyio.to_thread

from gateway import progress
from gateway.concurrency import alongside
from gateway.errors import CaptureFailed, GatewayError
from gateway.page.profile.heap_summary import HeapFormatError, HeapSummary, summarize_snapshot

if TYPE_CHECKING:
    from gateway.browsers.session import TabSession
    from gateway.cdp.connection import CdpConnection

__all__ = ["summarize_file", "take_heap_snapshot"]

CLEANUP_S = 2.0  # how long ending the profiler may take, even while cancelled


@dataclass
class _Sink:
    """Where the chunks go: the file, until it would pass ``limit`` bytes; and how far
    Chrome is, for the call's progress."""

    file: BinaryIO
    limit: int
    written: int = 0
    chunks: int = 0
    over: bool = False
    # The bytes before the latest chunk: all a report says while chunks come, so the
    # final report (all the bytes, of as many) is always larger, as progress must be.
    before_last: int = 0
    objects: tuple[int, int] = (0, 0)  # Chrome's progress building it: (done, total)
    moved: anyio.Event = field(default_factory=anyio.Event)

    def on_event(self, method: str, params: dict[str, Any]) -> None:
        if method == "HeapProfiler.reportHeapSnapshotProgress":
            self.objects = (int(params.get("done") or 0), int(params.get("total") or 0))
            self.moved.set()
            return
        if method != "HeapProfiler.addHeapSnapshotChunk" or self.over:
            return
        data = str(params.get("chunk", "")).encode()
        if self.written + len(data) > self.limit:
            self.over = True
            return
        self.file.write(data)
        self.before_last = self.written
        self.written += len(data)
        self.chunks += 1
        self.moved.set()

    async def report_progress(self) -> None:
        """Report how far the snapshot is whenever it moved (a few times a second at
        most), until cancelled."""
        while True:
            await self.moved.wait()
            self.moved = anyio.Event()
            done, total = self.objects
            if self.chunks:
                await progress.report(self.before_last, None, "receiving the snapshot: "
                                      f"{self.before_last / 2**20:.1f} MB")
            elif total:
                await progress.report(done, total, f"heap snapshot: {done:,} of {total:,} "
                                      "objects")
            await anyio.sleep(progress.MIN_INTERVAL_S)


async def take_heap_snapshot(session: TabSession, file: BinaryIO, budget: float,
                             max_bytes: int) -> int:
    """Write a heap snapshot of ``tab`` to ``file``; its size in bytes. ``CaptureFailed``
    when it would exceed ``max_bytes`` or the tab goes away meanwhile."""
    tab = session.tab
    cdp = await session.browser.connection(budget)
    session_id = tab.session_id
    if session_id is None:
        raise CaptureFailed(f"tab {tab.id} is not attached (it may be closing); call "
                            "list_tabs and retry on a live tab")
    sink = _Sink(file, max_bytes)
    stop_listening: Callable[[], None] | None = None
    answered = False
    hint = "a large heap takes long: pass a larger timeout_s"
    try:
        await session.call("HeapProfiler.enable", timeout_s=budget)
        # after any snapshot Chrome is still taking (a cancelled call's): see the top
        await session.call("HeapProfiler.collectGarbage", timeout_s=budget,
                           timeout_hint=hint)
        stop_listening = cdp.listen(session_id, sink.on_event)
        await alongside(sink.report_progress, lambda: session.call(
            "HeapProfiler.takeHeapSnapshot",
            {"reportProgress": True, "captureNumericValue": False},
            timeout_s=budget, timeout_hint=hint))
        answered = True
    except GatewayError:
        if tab.session_id != session_id:
            raise CaptureFailed(f"tab {tab.id} went away while its heap snapshot was being "
                                "taken; open the page again and retry") from None
        raise
    finally:
        if stop_listening is not None:
            stop_listening()
        await _disable(session, cdp, session_id, wait=answered)
    if sink.over:
        raise CaptureFailed(f"the heap snapshot is larger than max_capture_mb "
                            f"({max_bytes >> 20} MB, a target setting); raise it in the "
                            "targets file, or shrink the page's heap first")
    if not sink.chunks:
        raise CaptureFailed("Chrome sent an empty heap snapshot; retry")
    await progress.report(sink.written, sink.written, "heap snapshot received: "
                          f"{sink.written / 2**20:.1f} MB", final=True)
    return sink.written


async def _disable(session: TabSession, cdp: CdpConnection, session_id: str, *,
                   wait: bool) -> None:
    """End the profiler, bounded, even while cancelled. Only after a snapshot Chrome
    finished is its answer awaited: one it is still taking (cancelled, timed out) holds
    the page's thread, and the answer would come only after it."""
    with contextlib.suppress(GatewayError), anyio.move_on_after(CLEANUP_S, shield=True):
        if wait:
            await session.call("HeapProfiler.disable", timeout_s=CLEANUP_S)
        else:
            await cdp.notify("HeapProfiler.disable", session_id=session_id)


async def summarize_file(path: Path) -> HeapSummary:
    """The summary of the snapshot saved at ``path``, read in a worker thread (left to
    finish on its own when the call is cancelled: seconds of parsing for a big one)."""

    def read() -> HeapSummary:
        with open(path, encoding="utf-8", errors="replace") as f:
            return summarize_snapshot(f)

    try:
        return await anyio.to_thread.run_sync(read, abandon_on_cancel=True)
    except HeapFormatError as exc:
        raise CaptureFailed(f"the saved heap snapshot {path} cannot be read ({exc}); "
                            "take a new one") from None
