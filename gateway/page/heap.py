"""Taking a heap snapshot of a tab, written to a file as it arrives.

``HeapProfiler.takeHeapSnapshot`` answers only once the whole snapshot has been sent
as ``HeapProfiler.addHeapSnapshotChunk`` events (about 1 MB of JSON text each) on the
tab's session. A listener on that session appends each chunk to the file the moment
it is read off the socket, so the gateway holds one chunk at a time however large the
heap; past ``max_bytes`` it stops writing, and the file is removed once Chrome is done.
The summary is read back from the file afterwards, in a worker thread
(``heap_summary``), so the event loop serves other calls meanwhile.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

import anyio.to_thread

from gateway.errors import CaptureFailed, GatewayError
from gateway.page.heap_summary import HeapFormatError, HeapSummary, summarize_snapshot

if TYPE_CHECKING:
    from gateway.browsers.browser import Browser
    from gateway.browsers.tab import Tab

__all__ = ["summarize_file", "take_heap_snapshot"]


@dataclass
class _Sink:
    """Where the chunks go: the file, until it would pass ``limit`` bytes."""

    file: BinaryIO
    limit: int
    written: int = 0
    chunks: int = 0
    over: bool = False

    def on_event(self, method: str, params: dict[str, Any]) -> None:
        if method != "HeapProfiler.addHeapSnapshotChunk" or self.over:
            return
        data = str(params.get("chunk", "")).encode()
        if self.written + len(data) > self.limit:
            self.over = True
            return
        self.file.write(data)
        self.written += len(data)
        self.chunks += 1


async def take_heap_snapshot(browser: Browser, tab: Tab, file: BinaryIO, budget: float,
                             max_bytes: int) -> int:
    """Write a heap snapshot of ``tab`` to ``file``; its size in bytes. ``CaptureFailed``
    when it would exceed ``max_bytes`` or the tab goes away meanwhile."""
    cdp = await browser.connection(budget)
    session = tab.session_id
    if session is None:
        raise CaptureFailed(f"tab {tab.id} is not attached (it may be closing); call "
                            "list_tabs and retry on a live tab")
    sink = _Sink(file, max_bytes)
    stop_listening = cdp.listen(session, sink.on_event)
    try:
        await browser.tab_call(tab, "HeapProfiler.enable", timeout_s=budget)
        await browser.tab_call(tab, "HeapProfiler.takeHeapSnapshot",
                               {"reportProgress": False, "captureNumericValue": False},
                               timeout_s=budget,
                               timeout_hint="a large heap takes long: pass a larger timeout_s")
    except GatewayError:
        if tab.session_id != session:
            raise CaptureFailed(f"tab {tab.id} went away while its heap snapshot was being "
                                "taken; open the page again and retry") from None
        raise
    finally:
        stop_listening()
        with contextlib.suppress(GatewayError), anyio.move_on_after(2, shield=True):
            await browser.tab_call(tab, "HeapProfiler.disable", timeout_s=2)
    if sink.over:
        raise CaptureFailed(f"the heap snapshot is larger than max_capture_mb "
                            f"({max_bytes >> 20} MB, a target setting); raise it in the "
                            "targets file, or shrink the page's heap first")
    if not sink.chunks:
        raise CaptureFailed("Chrome sent an empty heap snapshot; retry")
    return sink.written


async def summarize_file(path: Path) -> HeapSummary:
    """The summary of the snapshot saved at ``path``, read in a worker thread."""

    def read() -> HeapSummary:
        with open(path, encoding="utf-8", errors="replace") as f:
            return summarize_snapshot(f)

    try:
        return await anyio.to_thread.run_sync(read)
    except HeapFormatError as exc:
        raise CaptureFailed(f"the saved heap snapshot {path} cannot be read ({exc}); "
                            "take a new one") from None
