"""A tab: one page target of one browser, with a process-wide integer id.

Ids are what the agent sees. They come from one counter in the gateway, are
never reused, and map to Chrome's ``targetId``. Every page is attached as a
flattened session on its target's single websocket as soon as the gateway sees
it, so its console, network and dialog state are collected from the start —
including what happened before the agent's first call on it. An SSH reconnect
to the same browser re-attaches and keeps every tab id.

Calls on one tab are serialised by ``lock``: two agents typing into the same
page would otherwise interleave keystrokes. Different tabs never wait on each
other.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import anyio

from gateway.browsers.console_log import EVENTS as CONSOLE_EVENTS
from gateway.browsers.console_log import ConsoleLog
from gateway.browsers.network_log import NetworkLog
from gateway.browsers.routes import Routes
from gateway.concurrency import OneShot
from gateway.errors import DialogOpen, TabNotFound

__all__ = ["Arrival", "Hold", "Tab", "TabGone", "TabIds", "Tap"]

Arrival = OneShot[tuple[str, dict[str, Any]]]
"""The (method, params) of an event a caller expects; dropped when the tab's session goes."""
_Waiter = tuple[frozenset[str], Arrival, "Callable[[dict[str, Any]], bool] | None"]
Tap = Callable[[dict[str, Any]], None]
"""Takes every event of one method on a tab (a screencast's frames), until removed."""


@dataclass
class Hold:
    """A person holds the tab (``handoff``): the agent's tools that change it are refused
    until ``released`` is set (the person pressed Done) or ``until`` (monotonic) passes."""

    reason: str
    until: float
    released: anyio.Event = field(default_factory=anyio.Event)
    # once released: "done" (the person), "expired", "tab closed" or "gateway exiting"
    ended: str | None = None

    def active(self) -> bool:
        return not self.released.is_set() and time.monotonic() < self.until

    def end(self, how: str) -> bool:
        """End the hold now, for ``how`` (as "expired" once ``until`` passed); False when
        it had ended already or ends otherwise."""
        if self.released.is_set():
            return False
        self.ended = how if time.monotonic() < self.until else "expired"
        self.released.set()
        return self.ended == how


@dataclass(eq=False)  # a tab is itself: compared and hashed by identity (page-layer state keys)
class Tab:
    id: int
    target: str                      # target name
    target_id: str                   # Chrome's targetId (also the main frame's id)
    title: str = ""
    url: str = ""
    context: str | None = None       # the named browser context it is in (contexts.py)
    session_id: str | None = None
    frame_sessions: dict[str, str] = field(default_factory=dict)  # OOPIF frameId → session
    console: ConsoleLog = field(default_factory=ConsoleLog)
    network: NetworkLog = field(default_factory=NetworkLog)
    dialog: dict[str, Any] | None = None   # Page.javascriptDialogOpening params while open
    loader_id: str | None = None           # the main frame's current document
    adopted: bool = False                  # the gateway works on it (PageTracker.adopt)
    closing: bool = False                  # close_tab is under way
    retired: bool = False                  # gone from its browser (closed, crashed, lost)
    why_retired: str = ""                  # "was closed", "crashed (…)": said to its viewers
    loaded: dict[str, str | None] = field(default_factory=dict)  # load event → its document
    # What the tab emulates (the emulate tool's record, shown by list_tabs), and the
    # session-scoped CDP commands that make it so (method → params): a session gone
    # (a reconnect, a renderer crash) loses them, so a new one gets them again.
    emulating: dict[str, Any] = field(default_factory=dict)
    overrides: dict[str, dict[str, Any]] = field(default_factory=dict)
    routes: Routes = field(default_factory=Routes)  # network_route's, kept like overrides
    lock: anyio.Lock = field(default_factory=anyio.Lock)
    hold: Hold | None = None               # a person has it (handoff), while active()
    routing: anyio.Lock = field(default_factory=anyio.Lock)  # one Fetch refresh at a time
    ready: anyio.Event = field(default_factory=anyio.Event)  # collectors on (main session)
    _waiters: list[_Waiter] = field(default_factory=list)
    _taps: dict[str, list[Tap]] = field(default_factory=dict)
    # sessionId → the remover of its event listener on the browser's connection: a
    # listener holds its tab (and the tab its logs), so each goes with its session.
    _unlisten: dict[str, Callable[[], None]] = field(default_factory=dict)

    def listening(self, session_id: str, remove: Callable[[], None]) -> None:
        """Keep the remover of ``session_id``'s listener, to call when it goes."""
        self._unlisten[session_id] = remove

    def unlisten(self, session_id: str) -> None:
        """A session of this tab (a frame's, or its own) is gone: drop its listener."""
        remove = self._unlisten.pop(session_id, None)
        if remove is not None:
            remove()

    def tap(self, method: str, tap: Tap) -> Callable[[], None]:
        """Send every ``method`` event of the tab's own session to ``tap`` (a stream,
        where ``expect`` waits for one); returns its remover."""
        self._taps.setdefault(method, []).append(tap)

        def remove() -> None:
            taps = self._taps.get(method, [])
            if tap in taps:
                taps.remove(tap)
            if not taps:
                self._taps.pop(method, None)

        return remove

    def held(self) -> Hold | None:
        """The person's hold on this tab, while it lasts."""
        return self.hold if self.hold is not None and self.hold.active() else None

    def take_frame(self, method: str, frame: str) -> bool:
        """A session's event frame, offered unparsed (``frames``): a console event nobody
        taps or waits for goes into the console as it came; any other is parsed."""
        if method not in CONSOLE_EVENTS or method in self._taps or any(
                method in methods for methods, _, _ in self._waiters):
            return False
        return self.console.keep_frame(frame)

    def on_event(self, method: str, params: dict[str, Any]) -> None:
        """Session event listener: feeds the collectors and wakes waiters."""
        if self._taps:
            for tap in tuple(self._taps.get(method, ())):
                tap(params)
        if method.startswith("Network."):
            if (method == "Network.requestWillBeSent" and params.get("type") == "Document"
                    and params.get("frameId") == self.target_id
                    and params.get("requestId") == params.get("loaderId")
                    and "redirectResponse" not in params):  # a redirect hop: same load
                self.console.navigated()  # a new document in the main frame
                self.network.navigated()
            self.network.on_event(method, params)
        elif method in CONSOLE_EVENTS:
            self.console.on_event(method, params)
        elif method == "Page.frameNavigated":
            frame = params.get("frame", {})
            if not frame.get("parentId"):
                self.loader_id = frame.get("loaderId")
                self.url = frame.get("url", self.url)
        elif method in ("Page.loadEventFired", "Page.domContentEventFired"):
            self.loaded[method] = self.loader_id
        elif method == "Page.javascriptDialogOpening":
            self.dialog = params
        elif method == "Page.javascriptDialogClosed":
            self.dialog = None
        for methods, arrival, where in tuple(self._waiters):
            if method in methods and not arrival.done and (where is None or where(params)):
                arrival.set((method, params))

    def dialog_error(self) -> DialogOpen:
        dialog = self.dialog or {}
        return DialogOpen(self.id, dialog.get("type", "JavaScript"), dialog.get("message", ""))

    def expect(
        self, *methods: str, where: Callable[[dict[str, Any]], bool] | None = None
    ) -> Arrival:
        """The next of ``methods`` (for which ``where`` holds), when it comes; register
        *before* triggering the event, and ``drop()`` it when no longer waiting."""
        arrival: Arrival = OneShot(lambda: self._waiters.remove(entry))
        entry: _Waiter = (frozenset(methods), arrival, where)
        self._waiters.append(entry)
        return arrival

    def detach(self) -> None:
        """The session is gone (Chrome detached it or the socket closed)."""
        self.session_id = None
        self.frame_sessions.clear()
        for remove in self._unlisten.values():
            remove()
        self._unlisten.clear()
        for _, arrival, _ in tuple(self._waiters):
            arrival.drop()


@dataclass(frozen=True)
class TabGone:
    """What is left of a tab id after its page went away: the reason, for the error."""

    target: str
    reason: str


class TabIds:
    """The process-wide tab ids: one counter, live tabs, and why dead ids died."""

    MAX_GONE = 10_000  # reasons kept for old ids; beyond that an id is just "unknown"

    def __init__(self) -> None:
        self._next_id = itertools.count(1)
        self._live: dict[int, Tab] = {}
        self._gone: dict[int, TabGone] = {}

    def add(self, target: str, target_id: str, *, console_buffer: int = 1000,
            network_buffer: int = 1000) -> Tab:
        tab = Tab(next(self._next_id), target, target_id,
                  console=ConsoleLog(console_buffer), network=NetworkLog(network_buffer))
        self._live[tab.id] = tab
        return tab

    def remove(self, tab: Tab, reason: str) -> None:
        tab.detach()
        if tab.hold is not None:  # a person cannot act on a tab that is gone
            tab.hold.end("tab closed")
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
