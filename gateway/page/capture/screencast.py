"""A tab's screencast, fanned out to whoever watches it (a live view; later a recorder).

Chrome sends a ``Page.screencastFrame`` only when the page paints, and only while its
frames are acknowledged (``Page.screencastFrameAck``): an unacknowledged frame stops
the stream. So every frame is acknowledged the moment it arrives, whoever watches,
and each watcher gets a one-slot ``Mailbox`` that keeps only the newest frame: a
viewer that reads slowly (or not at all) skips frames instead of making the gateway
hold them. The screencast runs only while at least one watcher is subscribed: the
first starts it, the last one leaving (or the tab going) stops it.
"""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc
import structlog

from gateway.errors import CdpError, GatewayError, TargetUnavailable

if TYPE_CHECKING:
    from gateway.browsers.browser import Browser
    from gateway.tabs.tab import Tab

__all__ = ["Frame", "Mailbox", "Screencasts"]

log = structlog.get_logger("gateway.screencast")

SCREENCAST = {"format": "jpeg", "quality": 70, "maxWidth": 1280, "maxHeight": 1280}
"""JPEG at the page's own size up to 1280 px a side: legible, ~25 kB a frame."""
CHECK_S = 1.0
"""How often a screencast with no frames looks whether its tab went or its session changed."""
START_S = 10.0
"""How long one attempt to start the screencast waits (for the browser, then Chrome)."""
ACK_WAIT_S = 5.0
"""How long acknowledging a frame waits for a browser that is reconnecting."""
RETRY_S = 0.25
"""How soon a screencast Chrome refused (a page mid-commit, a browser reconnecting) is
asked for again."""


@dataclass(frozen=True)
class Frame:
    """One painted frame: the JPEG and Chrome's metadata for it (``offsetTop``,
    ``pageScaleFactor``, ``deviceWidth``/``Height``, ``scrollOffsetX/Y``, ``timestamp``)."""

    jpeg: bytes
    metadata: dict[str, Any]


class Mailbox:
    """The newest frame not yet taken, one slot: a new frame replaces an unread one.

    ``closed`` says the screencast ended (its tab went), and ``reason`` why (the tab's
    own reason, "tab 7 was closed"): ``get`` then returns None."""

    def __init__(self) -> None:
        self._frame: Frame | None = None
        self._arrived = anyio.Event()
        self.closed = False
        self.reason = ""
        self.dropped = 0
        """Frames replaced before they were read (a slow viewer)."""

    def put(self, frame: Frame) -> None:
        if self._frame is not None:
            self.dropped += 1
        self._frame = frame
        self._arrived.set()

    def close(self, reason: str = "") -> None:
        self.closed, self.reason = True, reason
        self._arrived.set()

    async def get(self) -> Frame | None:
        """The next frame, waiting for one; None once closed."""
        while self._frame is None and not self.closed:
            await self._arrived.wait()
            self._arrived = anyio.Event()
        frame, self._frame = self._frame, None
        return frame


@dataclass(eq=False)
class _Cast:
    """One tab's screencast and its watchers."""

    browser: Browser
    tab: Tab
    watchers: set[Mailbox] = field(default_factory=set)
    acks: list[int] = field(default_factory=list)  # frames' sessionIds still to acknowledge
    wake: anyio.Event = field(default_factory=anyio.Event)
    latest: Frame | None = None

    def on_frame(self, method: str, params: dict[str, Any]) -> None:
        """The tab's ``Page.screencastFrame``: kept for the watchers, acknowledged by ``run``."""
        ack = params.get("sessionId")
        if type(ack) is int:
            self.acks.append(ack)
        try:
            frame = Frame(base64.b64decode(params.get("data", ""), validate=True),
                          dict(params.get("metadata") or {}))
        except ValueError:
            log.debug("screencast frame not base64; skipped", tab=self.tab.id)
        else:
            self.latest = frame
            for mailbox in self.watchers:
                mailbox.put(frame)
        self.wake.set()


class Screencasts:
    """Every tab's screencast, each running in ``tasks`` while anyone watches."""

    def __init__(self, tasks: anyio.abc.TaskGroup) -> None:
        self._tasks = tasks
        self._casts: dict[Tab, _Cast] = {}

    def watched(self) -> dict[int, int]:
        """The tabs whose screencast runs now (by id), and how many watch each."""
        return {tab.id: len(cast.watchers) for tab, cast in self._casts.items()}

    @asynccontextmanager
    async def watch(self, browser: Browser, tab: Tab) -> AsyncIterator[Mailbox]:
        """Frames of ``tab`` for as long as the block runs; the newest frame already
        painted, if any, comes first (a page that does not change sends no new one)."""
        mailbox = Mailbox()
        cast = self._casts.get(tab)
        if cast is None:
            cast = self._casts[tab] = _Cast(browser, tab)
            self._tasks.start_soon(self._run, cast)
        elif cast.latest is not None:
            mailbox.put(cast.latest)
        cast.watchers.add(mailbox)
        try:
            yield mailbox
        finally:
            cast.watchers.discard(mailbox)
            cast.wake.set()

    async def _run(self, cast: _Cast) -> None:
        """Start the screencast, acknowledge each frame as it comes, stop it when the
        last watcher left; start it again on a new session (a reconnect, a crash). A
        browser that is reconnecting (however long) is waited for while the tab lives:
        the watchers hear only of the tab's end, with its reason."""
        tab = cast.tab
        remove = tab.subscribe("Page.screencastFrame", cast.on_frame)
        session: str | None = None
        why = ""
        try:
            while cast.watchers and not tab.retired:
                if session is None or tab.session_id != session:
                    session = await self._start(cast)
                    if session is None:  # mid-commit, or reconnecting: once more soon
                        await anyio.sleep(RETRY_S)
                        continue
                if cast.acks:
                    await _acknowledge(cast, _take(cast.acks))
                with anyio.move_on_after(CHECK_S):
                    await cast.wake.wait()
                if not cast.acks:
                    cast.wake = anyio.Event()
        except GatewayError as exc:  # the tab went: the watchers hear it
            log.debug("screencast ended", tab=tab.id, error=str(exc))
            why = str(exc)
        finally:
            remove()
            del self._casts[tab]
            if tab.retired:
                why = f"tab {tab.id} {tab.why_retired or 'is gone'}"
            for mailbox in cast.watchers:
                mailbox.close(why)
            if session is not None and not tab.retired and tab.session_id == session:
                with anyio.move_on_after(2, shield=True):
                    await _quietly(cast, "Page.stopScreencast")

    async def _start(self, cast: _Cast) -> str | None:
        """The session the screencast now runs on; None when it cannot start for now
        ("Not attached to an active page": a new tab committing its first page; or its
        browser reconnecting, which ``tab_call`` waits for ``START_S`` at most)."""
        try:
            await cast.browser.tab_call(cast.tab, "Page.startScreencast", SCREENCAST,
                                        timeout_s=START_S)
        except (CdpError, TargetUnavailable) as exc:
            log.debug("screencast not started yet", tab=cast.tab.id, error=str(exc))
            return None
        return cast.tab.session_id


async def _acknowledge(cast: _Cast, frames: list[int]) -> None:
    """Let Chrome send the next frame, without waiting for its answer (sixty a second:
    a wait each would cost a timer and a wake-up). A refused one (a page mid-navigation,
    a frame of the session before) only goes unanswered, and so does one whose browser
    is reconnecting: the new session's screencast starts afresh."""
    session = cast.tab.session_id
    if session is not None:
        try:
            cdp = await cast.browser.connection(ACK_WAIT_S)
            for frame in frames:
                await cdp.notify("Page.screencastFrameAck", {"sessionId": frame},
                                 session_id=session)
        except (CdpError, TargetUnavailable) as exc:
            log.debug("screencast frame not acknowledged", tab=cast.tab.id, error=str(exc))


def _take(acks: list[int]) -> list[int]:
    taken = acks[:]
    acks.clear()
    return taken


async def _quietly(cast: _Cast, method: str) -> None:
    try:
        await cast.browser.tab_call(cast.tab, method, timeout_s=2)
    except GatewayError as exc:
        log.debug("screencast stop failed", tab=cast.tab.id, error=str(exc))
