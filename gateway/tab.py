"""A tab: one page target of one browser, with a process-wide integer id.

Ids are what the agent sees. They come from one counter in the gateway, are
never reused, and map to Chrome's ``targetId``. A tab is attached lazily as a
flattened session on its target's single websocket; the session id is dropped
when Chrome detaches it (or the socket closes) and re-attached on next use, so
an SSH reconnect to the same browser keeps every tab id working.

Calls on one tab are serialised by ``lock``: two agents typing into the same
page would otherwise interleave keystrokes. Different tabs never wait on each
other.
"""

from __future__ import annotations

import asyncio
import itertools
from dataclasses import dataclass, field
from typing import Any

import anyio

from .errors import TabNotFound

__all__ = ["Tab", "TabGone", "TabRegistry"]


@dataclass
class Tab:
    id: int
    target: str                      # target name
    target_id: str                   # Chrome's targetId
    title: str = ""
    url: str = ""
    session_id: str | None = None
    lock: anyio.Lock = field(default_factory=anyio.Lock)
    _waiters: list[tuple[frozenset[str], asyncio.Future[tuple[str, dict[str, Any]]]]] = field(
        default_factory=list
    )

    def on_event(self, method: str, params: dict[str, Any]) -> None:
        """Session event listener: wakes whoever waits for this event."""
        for methods, future in self._waiters:
            if method in methods and not future.done():
                future.set_result((method, params))

    def expect(self, *methods: str) -> asyncio.Future[tuple[str, dict[str, Any]]]:
        """A future for the next of ``methods``; register *before* triggering it."""
        future: asyncio.Future[tuple[str, dict[str, Any]]] = (
            asyncio.get_running_loop().create_future()
        )
        entry = (frozenset(methods), future)
        self._waiters.append(entry)
        future.add_done_callback(lambda _: self._waiters.remove(entry))
        return future

    def detach(self) -> None:
        """The session is gone (Chrome detached it or the socket closed)."""
        self.session_id = None
        for _, future in tuple(self._waiters):
            if not future.done():
                future.cancel()


@dataclass(frozen=True)
class TabGone:
    """What is left of a tab id after its page went away: the reason, for the error."""

    target: str
    reason: str


class TabRegistry:
    """The process-wide tab ids: one counter, live tabs, and why dead ids died."""

    MAX_GONE = 10_000  # reasons kept for old ids; beyond that an id is just "unknown"

    def __init__(self) -> None:
        self._next_id = itertools.count(1)
        self._live: dict[int, Tab] = {}
        self._gone: dict[int, TabGone] = {}

    def add(self, target: str, target_id: str, title: str = "", url: str = "") -> Tab:
        tab = Tab(next(self._next_id), target, target_id, title, url)
        self._live[tab.id] = tab
        return tab

    def remove(self, tab: Tab, reason: str) -> None:
        tab.detach()
        if self._live.pop(tab.id, None) is None:
            return
        if len(self._gone) >= self.MAX_GONE:
            self._gone.pop(next(iter(self._gone)))
        self._gone[tab.id] = TabGone(tab.target, reason)

    def get(self, tab_id: int) -> Tab:
        tab = self._live.get(tab_id)
        if tab is not None:
            return tab
        gone = self._gone.get(tab_id)
        if gone is not None:
            raise TabNotFound(tab_id, gone.reason)
        raise TabNotFound(tab_id, "is not a known tab id")
