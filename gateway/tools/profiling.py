"""Profiling a tab: a performance trace with its summary, and a heap snapshot with its.

Both read the page and change nothing in it, but write a file (like ``screenshot``
with ``save_to``): read-only mode keeps them. Without ``save_to`` the file goes to a
fresh name in the temp directory; either way the result says where. The captures
come back streamed and bounded (``gateway.page.profile.tracing`` and ``gateway.page.profile.heap``);
the results are summaries sized for a model, the files are for DevTools.

Progress: a trace reports its seconds of ``duration_s``, then the bytes read back; a
heap snapshot Chrome's own progress, then the bytes. A cancelled call stops what it
started (the trace ended in Chrome, the snapshot no longer read) and leaves no file.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import anyio
from pydantic import BaseModel, Field

from gateway import progress
from gateway.errors import CaptureFailed, InvalidArgument, NotAllowed
from gateway.output.absent import absent
from gateway.page.profile.heap import summarize_file, take_heap_snapshot
from gateway.page.profile.heap_summary import HeapSummary
from gateway.page.profile.trace_summary import TraceSummary
from gateway.page.profile.tracing import Recorder, Recording

from .args import TabArg, TimeoutArg
from .definition import TabCall, tab_tool
from .saving import save_new, save_path

__all__ = ["TOOLS"]

SaveTo = Annotated[str | None, Field(max_length=4096)]
HEAP_TIMEOUT_S = 120.0
"""A heap snapshot's default bound (``timeout_s`` overrides it): Chrome took 10-45 s
for a 50 MB heap on the busy test machine, more than a command's usual 30 s."""


class TraceResult(BaseModel):
    tab: int
    target: str
    recording: bool = absent(False)  # true only for action="start"
    path: str | None = absent()
    bytes: int | None = absent()
    summary: TraceSummary | None = absent()

    def written(self) -> list[str]:
        """The trace file, when one was saved (``WritesFiles``)."""
        return [self.path] if self.path else []


class HeapSnapshot(HeapSummary):
    tab: int
    target: str
    path: str
    file_bytes: int

    def written(self) -> list[str]:
        """The snapshot file (``WritesFiles``)."""
        return [self.path]




RECORDER = Recorder()
"""The traces running now (Chrome records one per browser): one table for the process."""


@tab_tool("Record a performance trace", read_only=True,
          changes=lambda arguments: "tab" if arguments.get("reload") else "nothing")
async def performance_trace(
    on: TabCall,
    tab: TabArg,
    duration_s: Annotated[float, Field(gt=0, le=60)] = 5.0,
    reload: bool = False,
    action: Literal["start", "stop"] | None = None,
    save_to: SaveTo = None,
    timeout_s: TimeoutArg = None,
) -> TraceResult:
    """Trace duration_s (of a reload?), or start/stop around your steps; returns load
    timings, LCP, CLS, long tasks, main-thread time, the gzipped trace's path."""
    browser = on.browser
    max_bytes = browser.config.max_capture_mb << 20
    if reload and on.gateway.registry.config.read_only:
        raise NotAllowed("reload is refused in read-only mode (--read-only): it reloads "
                         "the page; trace without it, or reload the page yourself first")
    path = await save_path(on.gateway, save_to)  # refused before recording
    if action == "stop":
        recording = RECORDER.running(browser)
        if recording is None or not recording.manual:
            busy = (f" (tab {recording.tab.id} is recording for duration_s; that call "
                    "ends it)" if recording is not None else "")
            raise CaptureFailed(f"no performance trace started with action='start' is "
                                f"running on target {browser.name!r}{busy}; start one "
                                f"with performance_trace(tab={on.tab.id}, action='start')")
        if recording.tab.dialog is not None:  # it goes on recording: stop after answering
            raise recording.tab.dialog_error()
    else:
        if action == "start" and save_to is not None:
            raise InvalidArgument("save_to belongs to the call with action='stop'")
        recording = await RECORDER.start(on, on.budget, manual=action == "start")
        try:
            if reload:
                await on.call("Page.reload", timeout_s=on.budget)
            if action == "start":
                return TraceResult(tab=on.tab.id, target=browser.name, recording=True)
            await _record_for(recording, duration_s)
        except BaseException:
            await RECORDER.abandon(recording)
            raise
    summary: TraceSummary | None = None

    async def write(file: Any) -> int:
        nonlocal summary
        summary, written = await RECORDER.stop(recording, file, on.budget, max_bytes)
        return written

    try:
        saved, size = await save_new(path, "trace", ".json.gz", write)
    except BaseException:  # Chrome must not go on tracing (the file may not open)
        await RECORDER.abandon(recording)
        raise
    return TraceResult(tab=recording.tab.id, target=browser.name, path=str(saved),
                       bytes=size, summary=summary)

@tab_tool("Take a heap snapshot", read_only=True)
async def heap_snapshot(
    on: TabCall,
    tab: TabArg,
    save_to: SaveTo = None,
    timeout_s: TimeoutArg = None,
) -> HeapSnapshot:
    """Take a heap snapshot; returns its path, the 10 constructors with the largest
    self size, detached DOM nodes."""
    browser = on.browser
    budget = timeout_s or max(on.budget, HEAP_TIMEOUT_S)

    async def write(file: Any) -> int:
        return await take_heap_snapshot(on, file, budget,
                                        browser.config.max_capture_mb << 20)

    path, size = await save_new(await save_path(on.gateway, save_to), "heap",
                              ".heapsnapshot", write)
    try:
        summary = await summarize_file(path)
    except anyio.get_cancelled_exc_class():
        path.unlink(missing_ok=True)  # cancelled while summing up: no file either
        raise
    return HeapSnapshot(tab=on.tab.id, target=browser.name, path=str(path), file_bytes=size,
                        **summary.model_dump())


TRACE_TICK_S = 0.5  # how often a recording trace reports its seconds


async def _record_for(recording: Recording, duration_s: float) -> None:
    """Let the trace run ``duration_s`` (its progress: seconds of it), or until the tab
    goes away (its waiters are cancelled when its session detaches) or its renderer
    crashes."""
    ended = recording.tab.expect("Inspector.targetCrashed", "Inspector.detached")
    start = anyio.current_time()
    try:
        while True:
            elapsed = min(anyio.current_time() - start, duration_s)
            await progress.report(elapsed, duration_s, f"tracing {elapsed:.1f} of "
                                  f"{duration_s:g} s", final=elapsed >= duration_s)
            if elapsed >= duration_s:
                return
            if await ended.wait(min(TRACE_TICK_S, duration_s - elapsed)):
                raise CaptureFailed(f"tab {recording.tab.id} went away (closed or crashed) "
                                    "during the trace; open the page again and record a "
                                    "new one")
    finally:
        ended.drop()


TOOLS = (performance_trace, heap_snapshot)
