"""A tab: one page target of one browser, with a process-wide integer id.

Ids are what the agent sees. They come from one counter in the gateway, are
never reused, and map to Chrome's ``targetId``. Every page is attached as a
flattened session on its target's single websocket as soon as the gateway sees
it, so its console, network and dialog state are collected from the start —
including what happened before the agent's first call on it. An SSH reconnect
to the same browser re-attaches and keeps every tab id.

A tab's events go to whoever subscribed to them (``Tab.subscribe``: its own logs
first, then the tracker's downloads and dialogs, a screencast, a waiter); what a layer
above keeps of a tab lives in that layer's ``Slot`` on it, so this module names no
page or live-view concept.

Calls on one tab are serialised by ``lock``: two agents typing into the same
page would otherwise interleave keystrokes. Different tabs never wait on each
other.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar, cast

import anyio

from gateway.concurrency import OneShot
from gateway.errors import DialogOpen, TabNotFound
from gateway.tabs.console_log import EVENTS as CONSOLE_EVENTS
from gateway.tabs.console_log import ConsoleLog
from gateway.tabs.network_log import NetworkLog
from gateway.tabs.routes import Routes

__all__ = ["Arrival", "Listener", "Slot", "Tab", "TabGone", "TabIds"]

Arrival = OneShot[tuple[str, dict[str, Any]]]
"""The (method, params) of an event a caller expects; dropped when the tab's session goes."""
Listener = Callable[[str, dict[str, Any]], None]
"""Takes the (method, params) of each event it subscribed to on a tab, until removed."""
T = TypeVar("T")
_UNSET: Any = object()


class Slot(Generic[T]):
    """One layer's state on every tab, declared by the module that owns it.

    The tab holds a value per slot (``Tab.state``), made on first use and dropped with
    the tab, so a layer above keeps what it knows of a tab without the tab naming it
    (the view's refs, what it emulates, a person's hold). ``replay`` names the
    session-scoped commands a value stands for: a new session of the tab (a reconnect,
    a renderer crash) is sent them again. ``gone`` is told when the tab goes (with the
    reason), for state someone waits on.
    """

    __slots__ = ("gone", "make", "name", "replay")

    def __init__(self, name: str, make: Callable[[], T] | None = None, *,
                 replay: Callable[[T], Iterable[tuple[str, dict[str, Any]]]] | None = None,
                 gone: Callable[[T, str], object] | None = None) -> None:
        self.name = name
        self.make = make
        self.replay = replay
        self.gone = gone

    def __repr__(self) -> str:
        return f"Slot({self.name!r})"


@dataclass(eq=False)  # a tab is itself: compared and hashed by identity
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
    routes: Routes = field(default_factory=Routes)  # network_route's (``interception``)
    lock: anyio.Lock = field(default_factory=anyio.Lock)
    routing: anyio.Lock = field(default_factory=anyio.Lock)  # one Fetch refresh at a time
    ready: anyio.Event = field(default_factory=anyio.Event)  # collectors on (main session)
    _state: dict[Slot[Any], Any] = field(default_factory=dict)
    # Every subscription in the order made, and by method the listeners it resolves to
    # (made at the method's first event, forgotten when a subscription comes or goes):
    # an event's dispatch is one dict lookup, however many of it flood in.
    _listeners: list[tuple[str, Listener]] = field(default_factory=list)
    _routes: dict[str, tuple[Listener, ...]] = field(default_factory=dict)
    _arrivals: list[Arrival] = field(default_factory=list)
    # sessionId → the remover of its event listener on the browser's connection: a
    # listener holds its tab (and the tab its logs), so each goes with its session.
    _unlisten: dict[str, Callable[[], None]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # The tab's own consumers, first and in this order: a main-frame navigation is
        # seen before the network log takes the request that made it.
        self._keep_console: Listener = self.console.on_event
        self.subscribe("Network.requestWillBeSent", self._on_request)
        self.subscribe("Network.", self.network.on_event)
        for method in CONSOLE_EVENTS:
            self.subscribe(method, self._keep_console)
        self.subscribe("Page.frameNavigated", self._on_navigated)
        self.subscribe("Page.loadEventFired", self._on_loaded)
        self.subscribe("Page.domContentEventFired", self._on_loaded)
        self.subscribe("Page.javascriptDialogOpening", self._on_dialog)
        self.subscribe("Page.javascriptDialogClosed", self._on_dialog)

    def listening(self, session_id: str, remove: Callable[[], None]) -> None:
        """Keep the remover of ``session_id``'s listener, to call when it goes."""
        self._unlisten[session_id] = remove

    def unlisten(self, session_id: str) -> None:
        """A session of this tab (a frame's, or its own) is gone: drop its listener."""
        remove = self._unlisten.pop(session_id, None)
        if remove is not None:
            remove()

    # -------------------------------------------------------------- owned state

    def state(self, slot: Slot[T]) -> T:
        """The tab's value of ``slot``, made (``slot.make``) on first use."""
        value = self._state.get(slot, _UNSET)
        if value is _UNSET:
            if slot.make is None:
                raise KeyError(f"{slot!r} has no value on tab {self.id}, and no maker")
            value = self._state[slot] = slot.make()
        return cast("T", value)

    def peek(self, slot: Slot[T]) -> T | None:
        """The tab's value of ``slot``, or None (none is made)."""
        return cast("T | None", self._state.get(slot))

    def put(self, slot: Slot[T], value: T) -> None:
        self._state[slot] = value

    def clear(self, slot: Slot[Any]) -> None:
        self._state.pop(slot, None)

    def session_commands(self) -> Iterator[tuple[str, dict[str, Any]]]:
        """The session-scoped commands the tab's state stands for (``Slot.replay``): a
        new session of the tab is sent them again."""
        for slot, value in tuple(self._state.items()):
            if slot.replay is not None:
                yield from slot.replay(value)

    def end(self, reason: str) -> None:
        """The tab is gone (``reason``): its sessions dropped, each slot's ``gone``
        told, its state let go."""
        self.detach()
        state, self._state = self._state, {}
        for slot, value in state.items():
            if slot.gone is not None:
                slot.gone(value, reason)

    # -------------------------------------------------------------- events

    def subscribe(self, key: str, listener: Listener) -> Callable[[], None]:
        """Send the tab's events to ``listener``: those of one method (``key``
        "Page.screencastFrame") or of a domain (``key`` ending in a dot, "Network.").
        An event's listeners are called in the order they subscribed. Returns the
        remover."""
        entry = (key, listener)
        self._listeners.append(entry)
        self._routes.clear()

        def remove() -> None:
            for i, other in enumerate(self._listeners):
                if other is entry:
                    del self._listeners[i]
                    self._routes.clear()
                    return

        return remove

    def _resolve(self, method: str) -> tuple[Listener, ...]:
        listeners = self._routes[method] = tuple(
            listener for key, listener in self._listeners
            if key == method or (key[-1] == "." and method.startswith(key)))
        return listeners

    def take_frame(self, method: str, frame: str) -> bool:
        """A session's event frame, offered unparsed (``frames``): a console event only
        the console log listens to goes into it as it came; any other is parsed."""
        listeners = self._routes.get(method)
        if listeners is None:
            listeners = self._resolve(method)
        return (len(listeners) == 1 and listeners[0] is self._keep_console
                and self.console.keep_frame(frame))

    def on_event(self, method: str, params: dict[str, Any]) -> None:
        """Session event listener: the event to each of its subscribers, in turn."""
        listeners = self._routes.get(method)
        if listeners is None:
            listeners = self._resolve(method)
        for listener in listeners:
            listener(method, params)

    def _on_request(self, method: str, params: dict[str, Any]) -> None:
        if (params.get("type") == "Document" and params.get("frameId") == self.target_id
                and params.get("requestId") == params.get("loaderId")
                and "redirectResponse" not in params):  # a redirect hop: same load
            self.console.navigated()  # a new document in the main frame
            self.network.navigated()

    def _on_navigated(self, method: str, params: dict[str, Any]) -> None:
        frame = params.get("frame", {})
        if not frame.get("parentId"):
            self.loader_id = frame.get("loaderId")
            self.url = frame.get("url", self.url)

    def _on_loaded(self, method: str, params: dict[str, Any]) -> None:
        self.loaded[method] = self.loader_id

    def _on_dialog(self, method: str, params: dict[str, Any]) -> None:
        self.dialog = params if method == "Page.javascriptDialogOpening" else None

    def dialog_answered(self) -> None:
        """The open dialog was answered: calls go through again at once (its Closed
        event comes after)."""
        self.dialog = None

    def shows(self, url: str, title: str) -> None:
        """The page itself said what it shows (a snapshot, an evaluation): what
        list_tabs says. Chrome announces a page at commit, titled with its URL, and does
        not always announce the document's title after (``Target.targetInfoChanged``)."""
        self.url, self.title = url, title

    def document_seen(self, loader_id: str) -> None:
        """A snapshot read the main frame's document before any navigation event said
        which one is current (a tab adopted as it was): that one is."""
        if self.loader_id is None:
            self.loader_id = loader_id

    def dialog_error(self) -> DialogOpen:
        dialog = self.dialog or {}
        return DialogOpen(self.id, dialog.get("type", "JavaScript"), dialog.get("message", ""))

    def expect(
        self, *methods: str, where: Callable[[dict[str, Any]], bool] | None = None
    ) -> Arrival:
        """The next of ``methods`` (for which ``where`` holds), when it comes; register
        *before* triggering the event, and ``drop()`` it when no longer waiting."""
        def done() -> None:
            for remove in removers:
                remove()
            self._arrivals.remove(arrival)

        def arrive(method: str, params: dict[str, Any]) -> None:
            if not arrival.done and (where is None or where(params)):
                arrival.set((method, params))

        arrival: Arrival = OneShot(done)
        removers = [self.subscribe(method, arrive) for method in dict.fromkeys(methods)]
        self._arrivals.append(arrival)
        return arrival

    def detach(self) -> None:
        """The session is gone (Chrome detached it or the socket closed)."""
        self.session_id = None
        self.frame_sessions.clear()
        for remove in self._unlisten.values():
            remove()
        self._unlisten.clear()
        for arrival in tuple(self._arrivals):
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
        tab.end(reason)
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
