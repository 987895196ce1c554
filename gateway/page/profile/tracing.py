"""Recording a performance trace of a tab, and bringing it back over the link.

Chrome's Tracing domain records the whole browser, so one trace runs per browser at
a time: ``Recorder`` keeps the running one per target, and Chrome's own refusal (a
trace started elsewhere, e.g. in DevTools) becomes the same error. It is started on
the tab's session with the categories the DevTools Performance panel records, so the
saved file opens there; ``transferMode: ReturnAsStream`` with gzip compression makes
Chrome keep the trace on its side and hand over a stream handle, read back in pieces
(``gateway.page.io_stream``) — compressed, so what crosses SSH is ~10x smaller than
the JSON. Each piece is appended to the file as it is (the file *is* Chrome's gzip
stream) and fed to the streaming parser and digest in a worker thread, so neither the
trace nor its events are ever held whole, and the event loop stays free for other
calls while a large trace is parsed.

A trace nobody will read (its call failed or was cancelled) is ended in Chrome and
the stream Chrome then hands over is closed (``Recorder.abandon``, and ``stop`` when
cancelled while Chrome ends it), bounded and shielded from the cancellation: Chrome
is left with nothing of it, and the next trace can start at once.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, BinaryIO

import anyio

from gateway.concurrency import first
from gateway.errors import CaptureFailed, CdpError, GatewayError
from gateway.page.io_stream import read_stream
from gateway.page.profile.trace_stream import TraceEventStream, TraceFormatError
from gateway.page.profile.trace_summary import TraceDigest, TraceSummary

if TYPE_CHECKING:
    from gateway.browsers.browser import Browser
    from gateway.browsers.session import TabSession
    from gateway.tabs.tab import Arrival, Tab

__all__ = ["CATEGORIES", "Recorder", "Recording"]

CATEGORIES = (
    "-*", "devtools.timeline", "v8.execute", "disabled-by-default-devtools.timeline",
    "disabled-by-default-devtools.timeline.frame", "toplevel", "blink.console",
    "blink.user_timing", "latencyInfo", "disabled-by-default-devtools.timeline.stack",
    "disabled-by-default-devtools.target-rundown",
    "disabled-by-default-devtools.v8-source-rundown", "disabled-by-default-v8.cpu_profiler",
    "loading")
"""The Performance panel's own recording categories (chrome-devtools-frontend's
TimelineController), without screenshots: they would make the trace several times
larger for pictures a model does not read."""


@dataclass(frozen=True)
class Recording:
    """A running trace: on which browser and tab it was started, and whether it waits
    for ``action='stop'`` (``manual``) or ends with the call that started it."""

    session: TabSession
    manual: bool

    @property
    def browser(self) -> Browser:
        return self.session.browser

    @property
    def tab(self) -> Tab:
        return self.session.tab


WIND_DOWN_S = 5.0  # how long Chrome gets to end a closed tab's trace before a new one
SETTLE_S = 1.0  # and how long a new one waits first: started while Chrome still ended the
                # old one, a trace could start yet never complete (seen in CI, 2 runs of 6)
RETRY_S = 0.2
END_WAIT_S = 5.0  # how long ending an abandoned trace may take, even while cancelled


class Recorder:
    """The traces running now, one per target (Chrome records per browser)."""

    def __init__(self) -> None:
        self._running: dict[str, Recording] = {}
        # target name → until when Chrome may still be ending a closed tab's trace
        self._winding_down: dict[str, float] = {}

    def running(self, browser: Browser) -> Recording | None:
        found = self._running.get(browser.name)
        return found if found is not None and found.browser is browser else None

    async def start(self, session: TabSession, budget: float, *,
                    manual: bool) -> Recording:
        """Start tracing on ``tab``'s browser, or ``CaptureFailed`` if one runs there.

        A recording whose tab is gone went with it (Chrome ends a session's trace when
        the session goes): it is forgotten — no call could stop it, as the tab id it
        would name is no longer valid — and for ``WIND_DOWN_S`` a refusal from Chrome,
        which ends that trace asynchronously, is retried rather than reported."""
        browser = session.browser
        other = self.running(browser)
        if other is not None and other.tab.retired:
            self.forget(other)
            other = None
        if other is not None:
            how = (f"stop it with performance_trace(tab={other.tab.id}, action='stop')"
                   if other.manual else "it ends with the call that started it; wait for it")
            raise CaptureFailed(
                f"a performance trace is already running on target {browser.name!r} (tab "
                f"{other.tab.id}; Chrome records one per browser); {how}, then retry")
        try:
            await self._start_tracing(session, budget)
        except CdpError as exc:
            raise CaptureFailed(
                f"Chrome on target {browser.name!r} refused to start a trace ({exc.message}); "
                "it may still be finishing one the gateway ended (a dialog held the page: "
                "retry in a few seconds), or another client (DevTools, a test runner) is "
                "tracing that browser — stop it there, then retry") from None
        recording = Recording(session, manual)
        self._running[browser.name] = recording
        return recording

    async def _start_tracing(self, session: TabSession, budget: float) -> None:
        browser = session.browser
        ended = self._winding_down.get(browser.name, 0.0) - WIND_DOWN_S
        await anyio.sleep(max(0.0, ended + SETTLE_S - anyio.current_time()))
        while True:
            try:
                await session.call("Tracing.start", {
                    "transferMode": "ReturnAsStream", "streamFormat": "json",
                    "streamCompression": "gzip",
                    "traceConfig": {"includedCategories": list(CATEGORIES),
                                    "excludedCategories": ["*"]}}, timeout_s=budget)
                return
            except CdpError:
                if anyio.current_time() >= self._winding_down.get(browser.name, 0.0):
                    raise
            await anyio.sleep(RETRY_S)

    def forget(self, recording: Recording) -> None:
        """No longer running; one whose tab went is still being ended by Chrome, which
        the next start on the browser waits out (``SETTLE_S``, then ``WIND_DOWN_S``)."""
        if self._running.get(recording.browser.name) is recording:
            del self._running[recording.browser.name]
        if recording.tab.retired or recording.tab.closing:
            self._winding_down[recording.browser.name] = anyio.current_time() + WIND_DOWN_S

    async def abandon(self, recording: Recording) -> None:
        """A trace that will not be read: forget it, end it in Chrome and close the stream
        Chrome hands over — best effort, bounded, even while the call is being cancelled.
        One ``stop`` has taken is its own to end (it already forgot it)."""
        if self.running(recording.browser) is not recording:
            return
        self.forget(recording)
        session = recording.session
        complete = session.expect("Tracing.tracingComplete")
        try:
            with contextlib.suppress(GatewayError), \
                    anyio.move_on_after(END_WAIT_S, shield=True):
                await session.call("Tracing.end", timeout_s=2)
                if session.tab.dialog is None:  # a dialog holds the page: Chrome cannot finish
                    await _close_when_complete(session, complete)
        finally:
            complete.drop()

    async def stop(self, recording: Recording, file: BinaryIO, budget: float,
                   max_bytes: int) -> tuple[TraceSummary, int]:
        """End the trace, stream it into ``file`` and summarise it: (summary, bytes).

        A JavaScript dialog freezes the page, and Chrome finishes a trace only once every
        process flushed it: with one open (before or during the end) this fails at once
        with ``DialogOpen`` instead of waiting out ``budget``."""
        session, tab = recording.session, recording.tab
        if tab.dialog is not None:
            raise tab.dialog_error()
        self.forget(recording)
        if tab.session_id is None or tab.closing:
            raise CaptureFailed(f"tab {tab.id} closed while it was being traced, and its "
                                "trace with it; open the page again and record a new one")
        complete = session.expect("Tracing.tracingComplete")
        dialog = session.expect("Page.javascriptDialogOpening")
        try:
            await session.call("Tracing.end", timeout_s=budget)
            await first((complete, dialog), budget)
        except CdpError as exc:
            raise CaptureFailed(f"Chrome could not end the trace on tab {tab.id} "
                                f"({exc.message}); start a new one") from None
        except anyio.get_cancelled_exc_class():  # Chrome is ending it: release its stream
            with contextlib.suppress(GatewayError), \
                    anyio.move_on_after(END_WAIT_S, shield=True):
                await _close_when_complete(session, complete)
            raise
        finally:
            complete.drop()
            dialog.drop()
        if not complete.arrived and tab.dialog is not None:
            raise tab.dialog_error()
        if not complete.arrived:
            raise CaptureFailed(f"tab {tab.id} went away, or Chrome did not finish its trace "
                                f"within {budget:g} s; open the page again and record a new "
                                "one (a larger timeout_s gives Chrome longer)")
        _, params = complete.result()
        digest = TraceDigest(tab.target_id)
        size = await _download(session, params, file, digest, budget, max_bytes)
        names = await _describe(session, [node for node, _ in digest.shifted_nodes()], budget)
        summary = digest.summary(names)
        summary.truncated = summary.truncated or bool(params.get("dataLossOccurred"))
        return summary, size


async def _close_when_complete(session: TabSession, complete: Arrival) -> None:
    """Wait for ``Tracing.tracingComplete`` (at most ``END_WAIT_S``) and close the stream it
    hands over, unread."""
    if await complete.wait(END_WAIT_S) and complete.arrived:
        handle = complete.result()[1].get("stream")
        if handle:
            await session.call("IO.close", {"handle": handle}, timeout_s=2)


async def _download(session: TabSession, params: dict[str, Any], file: BinaryIO,
                    digest: TraceDigest, budget: float, max_bytes: int) -> int:
    """Read the trace stream into ``file`` and ``digest``; its size in bytes."""
    handle = params.get("stream")
    if not handle:
        raise CaptureFailed("Chrome finished the trace without a stream to read; retry")
    events = TraceEventStream(gzip=params.get("streamCompression") == "gzip")

    def take(data: bytes) -> None:
        file.write(data)
        for event in events.feed(data):
            digest.add(event)

    try:
        size = await read_stream(
            session, handle, take, what="trace", budget=budget, max_bytes=max_bytes,
            too_large=f"the trace is larger than max_capture_mb ({max_bytes >> 20} MB, a "
                      "target setting); record a shorter one (duration_s) or raise the limit")
        events.close()
    except TraceFormatError as exc:
        raise CaptureFailed(f"Chrome sent a trace the gateway cannot read ({exc})") from None
    return size


async def _describe(session: TabSession, nodes: list[int], budget: float
                    ) -> dict[int, str]:
    """Names of DOM nodes by backend id, as Chrome names the LCP element (``P id='x'``);
    a node no longer in the page keeps its number."""
    names = {}
    for node in nodes:
        try:
            found = await session.call("DOM.describeNode", {"backendNodeId": node},
                                       timeout_s=min(budget, 5))
        except GatewayError:
            continue
        described = found.get("node") or {}
        attributes = described.get("attributes") or []
        pairs = dict(zip(attributes[::2], attributes[1::2], strict=False))
        name = str(described.get("nodeName", "?"))
        for key in ("id", "class"):
            if pairs.get(key):
                name += f" {key}='{pairs[key][:80]}'"
                break
        names[node] = name
    return names

