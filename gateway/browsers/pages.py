"""A browser's pages as tabs: Chrome's target events in, ``Tab`` objects and sessions out.

Tabs are tracked from Chrome's own target events (``Target.setDiscoverTargets``),
so ``list_tabs`` is answered from memory, and every page is auto-attached
(``Target.setAutoAttach`` at browser level, pausing new pages until their
collectors are enabled) so console, network and dialogs are seen from the
start. Cross-site iframes are child sessions of their page's, feeding the
same tab. On every (re)connect the known tabs are reconciled with
``Target.getTargets``: a page that still exists keeps its id; one that
vanished is retired with a reason that says whether the browser restarted.

Every session's listener is removed when the session goes (detached, page
closed, socket closed): a listener holds its tab, and the tab up to a thousand
console and network entries each. A page's own session is watched for a console flood
(``console_flood``): then its console is sampled, not read message by message.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable
from typing import Any

import anyio
import structlog

from gateway.browsers.contexts import BrowserContexts, Call
from gateway.browsers.interception import (
    FETCH_ENABLE,
    FETCH_METHODS,
    fetch_command,
    intercepting,
    send_answer,
    take,
    went,
)
from gateway.browsers.scope import PageScope, scope_mode
from gateway.browsers.uploads import Uploads
from gateway.cdp.connection import CdpConnection
from gateway.cdp.frames import FrameTaker
from gateway.config import TargetConfig
from gateway.errors import GatewayError, TabNotFound
from gateway.tabs.console_flood import FloodGuard
from gateway.tabs.routes import Route, Routes
from gateway.tabs.tab import Tab, TabIds

__all__ = ["DIALOG_SAFE", "GEOLOCATION", "SETUP_TIMEOUT_S", "PageTracker"]

log = structlog.get_logger("gateway.target")

SETUP_TIMEOUT_S = 10.0
# Domains a tab's collectors need: console + exceptions, browser log, network, page events.
_TAB_DOMAINS = ("Runtime.enable", "Log.enable", "Page.enable")
_NETWORK_ENABLE = {"maxTotalBufferSize": 64 * 1024 * 1024,
                   "maxResourceBufferSize": 16 * 1024 * 1024}
# A tab the gateway works on acts as the focused one: Chrome would otherwise keep all
# but the newest tab hidden (``visibilityState``) and throttle their timers to about
# once a second (measured on Chromium 156: 3 timer ticks a second instead of 97). It is
# never turned on for a tab nobody asked the gateway about: that would change how a
# person's or a test framework's background tabs run (visible, focused, unthrottled).
_FOCUSED = ("Emulation.setFocusEmulationEnabled", {"enabled": True})
GEOLOCATION = "Emulation.setGeolocationOverride"
"""The override of an emulated position (``page.emulation``): it comes with a grant of
the geolocation permission to the tab's browser context, withdrawn here too."""
_DOWNLOAD_EVENTS = ("Page.downloadWillBegin", "Page.downloadProgress")  # to ``downloaded``
# Cross-site iframes run in their own process: Chrome hands them over as child
# sessions of the page's session, paused until their collectors are on.
# A page's (and a frame's) auto-attach takes every child target, not only iframes.
# Measured on Chromium 156: with ``waitForDebuggerOnStart`` the renderer starts each
# dedicated worker paused, and a worker the filter leaves out is never attached and so
# never resumed — every web worker of every page (a site's search, a PDF viewer, an
# editor) stood still while the gateway was attached. So each child that is not an
# iframe is attached, let run at once and detached again (``_let_go``): the page runs
# exactly as without the gateway, its children only one round trip later.
_CHILD_ATTACH = {"autoAttach": True, "waitForDebuggerOnStart": True, "flatten": True,
                 "filter": [{"type": "browser", "exclude": True},
                            {"type": "tab", "exclude": True}, {}]}
# While a dialog is open the renderer runs nothing; these still work (they are
# answered by the browser process), everything else on the tab fails fast.
# Network.getResponseBody is not among them: Chromium answers it from the page's
# own process, so during a dialog it would wait out its whole timeout.
# Tracing and IO are the browser's too: a trace must be ended and read back (and so not
# left recording, which would refuse every later trace) while an alert() is open.
# The screencast is the browser's as well: a live view goes on showing the dialog.
DIALOG_SAFE = frozenset({"Page.handleJavaScriptDialog", "Network.getRequestPostData",
                         "Network.getCookies", "Target.getTargetInfo", "Tracing.end",
                         "IO.read", "IO.close", "Page.startScreencast",
                         "Page.stopScreencast", *FETCH_METHODS})


class PageTracker:
    """The tabs of one browser, kept in step with Chrome's targets and sessions."""

    def __init__(self, name: str, config: TargetConfig, tab_ids: TabIds,
                 uploads: Uploads) -> None:
        self._name = name
        self.uploads = uploads  # a retired tab's staged files go with it
        self._config = config
        self._tab_ids = tab_ids
        # (a person's own browser is told apart once connected: ``Browser._setup``)
        self.scope = PageScope(scope_mode(config.tabs, config.handed_tabs, personal=False),
                               config.handed_tabs)
        self.tabs: dict[str, Tab] = {}            # targetId → Tab
        self._attaching: set[str] = set()         # agent scope: attaches asked for
        self._sessions: dict[str, Tab] = {}       # sessionId → Tab
        self._closing: dict[str, anyio.Event] = {}  # targetId → set once Chrome destroyed it
        self.contexts = BrowserContexts()
        # told of a page's download events (``Downloads``): Chrome sends them to a page
        # session without any change to where the browser saves
        self.downloaded: Callable[[str, dict[str, Any], Tab], None] | None = None
        self._tasks: anyio.abc.TaskGroup | None = None
        self._cdp: CdpConnection | None = None
        self._log = log.bind(target=name)

    def serve(self, cdp: CdpConnection, tasks: anyio.abc.TaskGroup) -> None:
        """Follow ``cdp``'s target events; session set-ups run in ``tasks``."""
        self._tasks, self._cdp = tasks, cdp
        cdp.listen(None, lambda method, params: self._on_browser_event(cdp, method, params))

    def disconnected(self) -> None:
        """The socket closed: every session (and its listener) went with it."""
        self._tasks = self._cdp = None
        for tab in self.tabs.values():
            tab.detach()
        self._sessions.clear()
        self._attaching.clear()
        for destroyed in self._closing.values():  # reconcile says what is left
            destroyed.set()
        self._closing.clear()
        self.contexts.forget()

    def reconcile(self, infos: list[dict[str, Any]], restarted: bool) -> None:
        """Match known tabs with Chrome's pages after a (re)connect."""
        pages = {i["targetId"]: i for i in infos
                 if i.get("type") == "page" and self.scope.admits(i)}
        for target_id, tab in list(self.tabs.items()):
            if target_id not in pages:
                why = (f"was in the browser on {self._name!r}, which restarted; it is gone"
                       if restarted else "was closed while the gateway was disconnected")
                self.retire(tab, why)
        for info in pages.values():
            self.attach_soon(self.track(info))

    def retire_all(self, reason: str) -> None:
        for tab in list(self.tabs.values()):
            self.retire(tab, reason)

    # ---------------------------------------------------------------- events

    def _on_browser_event(self, cdp: CdpConnection, method: str, params: dict[str, Any]) -> None:
        if method in ("Target.targetCreated", "Target.targetInfoChanged"):
            info = params.get("targetInfo", {})
            if (info.get("type") == "page" and info.get("targetId") not in self._closing
                    and self.scope.admits(info)):
                self.attach_soon(self.track(info))
        elif method == "Target.targetDestroyed":
            target_id = params.get("targetId", "")
            tab = self.tabs.get(target_id)
            if tab is not None:
                self.retire(tab, "was closed by close_tab" if tab.closing else "was closed")
            destroyed = self._closing.pop(target_id, None)
            if destroyed is not None:
                destroyed.set()
        elif method == "Target.attachedToTarget":
            info = params.get("targetInfo", {})
            if (info.get("type") == "page" and self._tasks is not None
                    and info.get("targetId") not in self._closing):
                self._attaching.discard(info.get("targetId", ""))
                if not self.scope.admits(info):  # never ours: let it go at once
                    self._tasks.start_soon(self._send_quietly, cdp, "Target.detachFromTarget",
                                           {"sessionId": params["sessionId"]}, None)
                    return
                tab = self.track(info)
                self.bind(cdp, tab, params["sessionId"])
                self._tasks.start_soon(self.prepare, cdp, tab, params["sessionId"],
                                       bool(params.get("waitingForDebugger")))
        elif method == "Target.detachedFromTarget":
            session = params.get("sessionId", "")
            tab = self._sessions.pop(session, None)
            if tab is not None:
                # Chrome answers nothing more on a detached session: what is in flight
                # there would only run into its timeout. (Chrome may detach a page it
                # closes before it answers the close: then the close is the reason.)
                _fail_in_flight(cdp, tab, session, "was closed by close_tab" if tab.closing
                                else "went away mid-call (closed or crashed)")
                tab.detach()
        elif method == "Target.targetCrashed":
            tab = self.tabs.get(params.get("targetId", ""))
            if tab is not None:
                self.retire(tab, f"crashed ({params.get('status', 'unknown status')})")

    def attach_soon(self, tab: Tab) -> None:
        """With ``agent`` scope nothing is auto-attached (a person's new page would start
        paused): each page of the agent's is attached when it becomes known, once;
        ``Target.attachedToTarget`` sets it up as an auto-attached one is."""
        if (not self.scope.agent_only or tab.session_id is not None or self._cdp is None
                or self._tasks is None or tab.target_id in self._attaching):
            return
        self._attaching.add(tab.target_id)
        self._tasks.start_soon(self._send_quietly, self._cdp, "Target.attachToTarget",
                               {"targetId": tab.target_id, "flatten": True}, None)

    def track(self, info: dict[str, Any]) -> Tab:
        tab = self.tabs.get(info["targetId"])
        if tab is None:
            tab = self._tab_ids.add(self._name, info["targetId"],
                                     console_buffer=self._config.console_buffer,
                                     network_buffer=self._config.network_buffer)
            self.tabs[tab.target_id] = tab
            for method in _DOWNLOAD_EVENTS:
                tab.subscribe(method, functools.partial(self._on_download, tab))
            tab.subscribe("Page.javascriptDialogOpening", functools.partial(self._on_dialog, tab))
        tab.title = info.get("title", tab.title)
        tab.url = info.get("url", tab.url)
        if "browserContextId" in info:
            tab.context = self.contexts.name_of(info["browserContextId"])
        return tab

    def _on_download(self, tab: Tab, method: str, params: dict[str, Any]) -> None:
        """A page's ``Page.download*`` event, to the browser's downloads."""
        if self.downloaded is not None:
            self.downloaded(method, params, tab)

    def _on_dialog(self, tab: Tab, method: str, params: dict[str, Any]) -> None:
        """A dialog opened (the tab noted it first): what is in flight on the tab's
        sessions cannot be answered until it closes, so it fails now."""
        if self._cdp is not None and tab.session_id is not None:
            error = tab.dialog_error()
            for sid in (tab.session_id, *tab.frame_sessions.values()):
                self._cdp.fail_session(sid, error, DIALOG_SAFE)

    def retire(self, tab: Tab, reason: str) -> None:
        """The tab is gone for good: what is still in flight on its sessions fails now
        with ``reason`` (a call waiting behind close_tab said the page gave no answer
        once its timeout ran out: Chrome's detach arrives after the tab is retired)."""
        tab.retired, tab.why_retired = True, reason
        self.tabs.pop(tab.target_id, None)
        self.scope.forget(tab.target_id)
        if tab.session_id is not None:
            self._sessions.pop(tab.session_id, None)
            if self._cdp is not None:
                _fail_in_flight(self._cdp, tab, tab.session_id, reason)
        self._withdraw_position_grant(tab)  # (while its state still says what it emulated)
        self._tab_ids.remove(tab, reason)
        self.uploads.release(tab)

    async def close(self, tab: Tab, reason: str, call: Call, wait_s: float) -> None:
        """Close the tab's page through the browser (a hung page too) and return once
        Chrome destroyed it (bounded by ``wait_s``): neither list_tabs nor Chrome's own
        target list shows it any more, and the files staged for its uploads are removed.
        The tab is retired with ``reason`` as soon as Chrome accepts. Chrome sends the
        page's last ``targetInfoChanged`` (detached) after answering ``closeTarget``
        (measured on Chromium 156, 5 closes of 5): tracked, it listed the closed page
        again, under a new tab id, until its ``targetDestroyed`` came — so a target
        being closed is not tracked again."""
        destroyed = self._closing.setdefault(tab.target_id, anyio.Event())
        tab.closing = True
        try:
            await call("Target.closeTarget", {"targetId": tab.target_id})
        except BaseException:
            self._closing.pop(tab.target_id, None)
            raise
        finally:
            tab.closing = False
        if not tab.retired:  # (its targetDestroyed may have come before the answer)
            self.retire(tab, reason)
        with anyio.move_on_after(wait_s):
            await destroyed.wait()
        await self.uploads.sweep()  # the files it was handed are gone when it is

    def _withdraw_position_grant(self, gone: Tab) -> None:
        """A tab that emulated a position had the geolocation permission granted to its
        browser context (``page.emulation``); when the last such tab of the default
        context goes, so does the grant. (A named context ends with its last tab.)"""
        if (not _emulates_position(gone) or gone.context is not None
                or self._tasks is None or self._cdp is None
                or any(_emulates_position(other) and other.context is None
                       for other in self.tabs.values())):
            return
        self._tasks.start_soon(self._send_quietly, self._cdp, "Browser.resetPermissions",
                               {}, None)

    # -------------------------------------------------------------- sessions

    def bind(self, cdp: CdpConnection, tab: Tab, session_id: str,
             frame_id: str | None = None) -> None:
        """Route a session's events to its tab: the page's own (``frame_id`` None) or
        that of one of its out-of-process iframes, which feed the same collectors."""
        if frame_id is None:
            tab.session_id = session_id
            self._sessions[session_id] = tab
        else:
            tab.frame_sessions[frame_id] = session_id

        def on_event(method: str, params: dict[str, Any]) -> None:
            if method == "Target.attachedToTarget":
                info = params.get("targetInfo", {})
                child = params.get("sessionId")
                if self._tasks is None or not isinstance(child, str):
                    return
                if info.get("type") == "iframe":
                    self.bind(cdp, tab, child, info["targetId"])
                    self._tasks.start_soon(self.prepare, cdp, tab, child,
                                           bool(params.get("waitingForDebugger")))
                else:  # a worker, a worklet: not ours to watch, never to hold up
                    self._tasks.start_soon(_let_go, cdp, session_id, child)
                return
            if method == "Target.detachedFromTarget":
                gone = params.get("targetId")
                if gone is not None:
                    child = tab.frame_sessions.pop(gone, None)
                    if child is not None:
                        tab.unlisten(child)
                return
            if method == "Fetch.requestPaused":
                self._paused(cdp, tab, session_id, params)
                return
            tab.on_event(method, params)

        take: FrameTaker = tab.take_frame
        if frame_id is None and self._tasks is not None:  # a console flood is shed at source
            take = FloodGuard(
                tab.console,
                lambda method: cdp.send(method, session_id=session_id,
                                        timeout_s=SETUP_TIMEOUT_S),
                lambda: tab.session_id == session_id and cdp.is_open,
                self._tasks).watch(take)
        tab.listening(session_id, cdp.listen(session_id, on_event, take=take))

    async def prepare(self, cdp: CdpConnection, tab: Tab, session: str, waiting: bool) -> None:
        """Turn on a (frame) session's collectors and attach its cross-site iframes,
        then let a paused new page run."""
        try:
            async with anyio.create_task_group() as tg:
                for method in _TAB_DOMAINS:
                    tg.start_soon(self._send_quietly, cdp, method, None, session)
                tg.start_soon(self._send_quietly, cdp, "Network.enable", _NETWORK_ENABLE, session)
                tg.start_soon(self._send_quietly, cdp, "Target.setAutoAttach", _CHILD_ATTACH,
                              session)
                if session == tab.session_id:
                    if tab.adopted:
                        tg.start_soon(self._send_quietly, cdp, *_FOCUSED, session)
                    # What the tab's state set on its old session (an emulation's
                    # overrides) died with it: again.
                    for method, params in tab.session_commands():
                        tg.start_soon(self._send_quietly, cdp, method, params, session)
                tg.start_soon(self._route_new, cdp, tab, session)
        finally:
            if waiting:
                await cdp.notify("Runtime.runIfWaitingForDebugger", session_id=session)
            if session == tab.session_id:
                tab.ready.set()

    def _paused(self, cdp: CdpConnection, tab: Tab, session: str,
                params: dict[str, Any]) -> None:
        """A request of a routed tab waits for an answer (``interception``): send it; a
        route that has just had its last match may leave tabs with no route."""
        if self._tasks is None or not isinstance(params.get("requestId"), str):
            return  # the connection is closing: Chrome lets paused requests go with it
        taken = take(tab, self.contexts, params)
        self._tasks.start_soon(send_answer, cdp, tab, session, taken.route, taken.method,
                               taken.params)
        if taken.expired:
            self.refresh_soon([t for t in self.tabs.values() if t is tab or (
                tab.context is not None and t.context == tab.context)])

    async def _route_new(self, cdp: CdpConnection, tab: Tab, session: str) -> None:
        """A new session of a routed tab gets ``Fetch`` (a fresh one has it off), in turn
        with the tab's refreshes: one running now could not have seen it decide."""
        async with tab.routing:
            if intercepting(tab, self.contexts):
                await self._send_quietly(cdp, "Fetch.enable", FETCH_ENABLE, session)

    async def refresh_routes(self, tabs: list[Tab], timeout_s: float) -> None:
        """Put ``Fetch`` on each session of ``tabs`` in step with their routes (enabled
        while a route may take a request, else disabled). A tab's refreshes run one at a
        time (``tab.routing``) and each session's command is chosen as it is sent, so the
        last to run leaves every session as the routes are then. A session that went
        meanwhile (a frame detached, the tab closed) is passed over; a failure on one the
        tab still has raises ``GatewayError``. A tab without a session gets ``Fetch``
        when it attaches (``prepare``)."""
        cdp = self._cdp
        if cdp is None:
            return  # disconnected: every session set up again on reconnect
        for tab in tabs:
            async with tab.routing:
                for session in (tab.session_id, *tab.frame_sessions.values()):
                    if session is None:
                        continue
                    method, params = fetch_command(tab, self.contexts)
                    try:
                        await cdp.send(method, params, session_id=session, timeout_s=timeout_s)
                    except GatewayError as exc:
                        if cdp.is_open and not went(exc, tab, session):
                            raise
                        self._log.debug("route refresh passed over a session that went",
                                        method=method, error=str(exc))

    async def route_added(self, table: Routes, route: Route, tabs: list[Tab],
                          timeout_s: float) -> None:
        """Put ``route``, just added to ``table``, to work on ``tabs``. When it cannot be
        (a session the tab still has refused ``Fetch.enable``, or the call was cancelled)
        the route is taken out again and the error raised: a failed call leaves no route
        half applied, and a retry does not make it twice."""
        try:
            await self.refresh_routes(tabs, timeout_s)
        except BaseException:
            table.remove(route_id=route.id)
            self.refresh_soon(tabs)
            raise

    def refresh_soon(self, tabs: list[Tab]) -> None:
        """``refresh_routes`` in the background, its failures logged (a closing page: its
        sessions go, ``Fetch`` with them)."""
        if self._tasks is not None:
            self._tasks.start_soon(self._refresh_quietly, tabs)

    async def _refresh_quietly(self, tabs: list[Tab]) -> None:
        try:
            await self.refresh_routes(tabs, SETUP_TIMEOUT_S)
        except GatewayError as exc:
            self._log.debug("route refresh failed", error=str(exc))

    async def attach(self, cdp: CdpConnection, tab: Tab) -> None:
        """Attach a detached tab again (e.g. after a renderer crash)."""
        attached = await cdp.send("Target.attachToTarget",
                                  {"targetId": tab.target_id, "flatten": True},
                                  timeout_s=SETUP_TIMEOUT_S)
        self.bind(cdp, tab, attached["sessionId"])
        await self.prepare(cdp, tab, attached["sessionId"], waiting=False)

    async def adopt(self, tab: Tab) -> None:
        """The gateway works on ``tab`` from now on (a tool call names it, or it opened
        it): the tab acts as the focused one (``_FOCUSED``), now and on every new session.
        A tab the gateway never uses is left as its browser runs it."""
        if tab.adopted:
            return
        tab.adopted = True
        if tab.session_id is not None and self._cdp is not None:
            # not waited for: on a page held by a dialog the answer would never come
            await self._cdp.notify(*_FOCUSED, session_id=tab.session_id)

    async def _send_quietly(self, cdp: CdpConnection, method: str,
                            params: dict[str, Any] | None, session: str | None) -> None:
        try:
            await cdp.send(method, params, session_id=session, timeout_s=SETUP_TIMEOUT_S)
        except GatewayError as exc:  # a hung or closing page: its tools will say so
            self._log.debug("tab set-up command failed", method=method, error=str(exc))


def _emulates_position(tab: Tab) -> bool:
    """The tab's state overrides its geolocation (``page.emulation``)."""
    return any(method == GEOLOCATION for method, _ in tab.session_commands())


async def _let_go(cdp: CdpConnection, parent: str, child: str) -> None:
    """Resume a child target the page's auto-attach paused, then detach from it: the
    gateway keeps no session of workers (``_CHILD_ATTACH``). The detach waits for the
    resume's answer: sent at once after it, it can reach the browser first, and a service
    worker detached while paused was left paused (measured on Chromium 156)."""
    with contextlib.suppress(GatewayError):  # a worker gone already: nothing to let go
        await cdp.send("Runtime.runIfWaitingForDebugger", session_id=child,
                       timeout_s=SETUP_TIMEOUT_S)
    await cdp.notify("Target.detachFromTarget", {"sessionId": child}, session_id=parent)


def _fail_in_flight(cdp: CdpConnection, tab: Tab, session: str, reason: str) -> None:
    """Fail what waits on the tab's ``session`` and its frames' now: Chrome answers
    nothing more there, and the wait would only run into its timeout."""
    gone = TabNotFound(tab.id, reason)
    for sid in (session, *tab.frame_sessions.values()):
        cdp.fail_session(sid, gone, frozenset())
