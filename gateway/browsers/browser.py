"""A named target: one browser behind one transport, kept connected.

State machine::

    connecting ──ok──▶ up ──socket closed──▶ connecting (at once: the browser
        ▲  │                                  may just have moved to a new port)
        │  └─fail──▶ down ──backoff, or a call arrives──┘

``run()`` is the supervisor: it lives in the gateway's task group for the
whole process, owns the CDP reader, and reconnects with exponential backoff
(``ReconnectPolicy``). Callers never connect by themselves: a call on an
``up`` target goes straight to the socket; a call on a ``connecting`` target
waits for the attempt under way, and a call on a ``down`` target wakes the
supervisor (the next attempt starts now, not after the backoff) and waits for
that attempt — both at most ``call_wait_s``, then they fail with the reason.

A command Chrome does not answer in time may mean a hung page or a dead link:
the transport is asked whether the host still answers, and if not the call
fails as "unreachable" and the dead link is dropped, so reconnecting starts
at once instead of after the SSH keepalives give up.

Tabs are tracked from Chrome's own target events (``Target.setDiscoverTargets``),
so ``list_tabs`` is answered from memory, and every page is auto-attached
(``Target.setAutoAttach`` at browser level, pausing new pages until their
collectors are enabled) so console, network and dialogs are seen from the start.
On every (re)connect the known tabs are reconciled with ``Target.getTargets``:
a page that still exists keeps its id; one that vanished is retired with a
reason that says whether the browser restarted.
"""

from __future__ import annotations

import time
from typing import Any, Literal

import anyio
import structlog

from gateway.browsers.cdp import CdpConnection
from gateway.browsers.discovery import Endpoint, discover
from gateway.browsers.launcher import ChromeLauncher
from gateway.browsers.tab import Tab, TabRegistry
from gateway.config import TargetConfig
from gateway.errors import CdpTimeout, GatewayError, TabNotFound, TargetUnavailable
from gateway.hosts.local import Transport

__all__ = ["Browser", "BrowserState"]

BrowserState = Literal["connecting", "up", "down"]
log = structlog.get_logger("gateway.target")

SETUP_TIMEOUT_S = 10.0
# How long a host gets to show it is alive after Chrome missed a command's deadline.
LINK_PROBE_TIMEOUT_S = 2.0
# Domains a tab's collectors need: console + exceptions, browser log, network, page events.
_TAB_DOMAINS = ("Runtime.enable", "Log.enable", "Page.enable")
_NETWORK_ENABLE = {"maxTotalBufferSize": 64 * 1024 * 1024,
                   "maxResourceBufferSize": 16 * 1024 * 1024}
# Cross-site iframes run in their own process: Chrome hands them over as child
# sessions of the page's session, paused until their collectors are on.
_IFRAME_ATTACH = {"autoAttach": True, "waitForDebuggerOnStart": True, "flatten": True,
                  "filter": [{"type": "iframe"}, {"exclude": True}]}
# While a dialog is open the renderer runs nothing; these still work (they are
# answered by the browser process), everything else on the tab fails fast.
_DIALOG_SAFE = frozenset({"Page.handleJavaScriptDialog", "Network.getResponseBody",
                          "Network.getRequestPostData", "Network.getCookies",
                          "Target.getTargetInfo"})


class Browser:
    def __init__(
        self,
        config: TargetConfig,
        transport: Transport,
        registry: TabRegistry,
        launcher: ChromeLauncher | None = None,
    ) -> None:
        self.config = config
        self.name = config.name
        self.transport = transport
        self._registry = registry
        self._launcher = launcher
        self.state: BrowserState = "connecting"
        self.error: str | None = None
        self.browser: str | None = None
        self.protocol: str | None = None
        self.endpoint: Endpoint | None = None
        self.tabs: dict[str, Tab] = {}            # targetId → Tab
        self._sessions: dict[str, Tab] = {}       # sessionId → Tab
        self._cdp: CdpConnection | None = None
        self._changed = anyio.Event()
        self._wake = anyio.Event()
        self._tasks: anyio.abc.TaskGroup | None = None
        self._last_browser_path: str | None = None
        self._log = log.bind(target=self.name)

    # ----------------------------------------------------------------- state

    def _set_state(self, state: BrowserState, error: str | None = None) -> None:
        if state != self.state or error != self.error:
            self._log.info("target state", state=state, error=error)
        self.state = state
        self.error = error
        self._changed.set()
        self._changed = anyio.Event()

    async def settled(self) -> None:
        """Wait (bounded by the connect timeouts) while a connection attempt is under way."""
        wait_s = self.config.reconnect.connect_timeout_s + SETUP_TIMEOUT_S
        with anyio.move_on_after(wait_s):
            while self.state == "connecting":
                await self._changed.wait()

    def _live(self) -> CdpConnection | None:
        cdp = self._cdp
        return cdp if self.state == "up" and cdp is not None and cdp.is_open else None

    async def _await_attempt(self) -> None:
        """Return once the target is up, or once a connection attempt that was under
        way (or is started now) has failed."""
        attempted = self.state == "connecting"
        while self._live() is None:
            if self.state == "down":
                if attempted:
                    return
                self._wake.set()  # try now rather than after the backoff
            changed = self._changed
            await changed.wait()
            attempted = attempted or self.state == "connecting"

    async def connection(self, max_wait_s: float | None = None) -> CdpConnection:
        """The live CDP connection, waiting at most ``call_wait_s`` (or the call's own,
        shorter ``max_wait_s``) for one; else ``TargetUnavailable`` with the last reason."""
        cdp = self._live()
        if cdp is not None:
            return cdp
        wait_s = self.config.reconnect.call_wait_s
        if max_wait_s is not None:
            wait_s = min(wait_s, max_wait_s)
        with anyio.move_on_after(wait_s):
            await self._await_attempt()
        cdp = self._live()
        if cdp is not None:
            return cdp
        reason = self.error or "not connected yet"
        if self.state == "connecting":
            reason += f"; still reconnecting after {wait_s:g} s"
        raise TargetUnavailable(self.name, f"{reason}; the gateway keeps reconnecting in the "
                                "background — retry shortly, or check list_targets")

    # ------------------------------------------------------------ supervisor

    async def run(self) -> None:
        """Connect, serve, reconnect — until cancelled with the gateway."""
        policy = self.config.reconnect
        delay = policy.initial_delay_s
        while True:
            self._set_state("connecting", self.error)
            try:
                endpoint, cdp = await self._open()
            except Exception as exc:  # a bug must cost this attempt, not the process
                if isinstance(exc, GatewayError):
                    reason = exc.reason if isinstance(exc, TargetUnavailable) else str(exc)
                else:
                    self._log.exception("connect attempt crashed")
                    reason = (f"internal gateway error while connecting ({type(exc).__name__}: "
                              f"{exc}); retrying — report this if it repeats")
                self._set_state("down", reason)
                self._wake = anyio.Event()
                with anyio.move_on_after(delay):
                    await self._wake.wait()
                delay = min(delay * 2, policy.max_delay_s)
                continue
            delay = policy.initial_delay_s
            await self._serve(endpoint, cdp)

    async def _open(self) -> tuple[Endpoint, CdpConnection]:
        timeout_s = self.config.reconnect.connect_timeout_s
        await self.transport.connect()
        try:
            endpoint, ws = await discover(self.transport, self.config, timeout_s)
        except TargetUnavailable:
            if self._launcher is None:
                raise
            profile = await self._launcher.start()
            launched = self.config.model_copy(update={"profile": profile})
            endpoint, ws = await discover(self.transport, launched, timeout_s)
        return endpoint, CdpConnection(ws, name=self.name)

    async def _serve(self, endpoint: Endpoint, cdp: CdpConnection) -> None:
        """Run the reader, set the browser up, and wait until the socket closes."""
        async with anyio.create_task_group() as tg:
            self._tasks = tg
            tg.start_soon(cdp.run)
            try:
                await self._setup(cdp, endpoint)
            except GatewayError as exc:
                self._set_state("down", f"browser at {endpoint.address} did not answer "
                                f"set-up commands ({exc})")
                await cdp.aclose()
                return
            self._cdp = cdp
            self._set_state("up")
            await cdp.closed.wait()
            tg.cancel_scope.cancel()  # attach tasks of a dead socket have nothing to do
        self._tasks = None
        self._cdp = None
        for tab in self.tabs.values():
            tab.detach()
        self._sessions.clear()
        self._log.info("browser connection closed", endpoint=endpoint.address)

    async def _setup(self, cdp: CdpConnection, endpoint: Endpoint) -> None:
        cdp.listen(None, lambda method, params: self._on_browser_event(cdp, method, params))
        version = await cdp.send("Browser.getVersion", timeout_s=SETUP_TIMEOUT_S)
        await cdp.send("Target.setDiscoverTargets", {"discover": True}, timeout_s=SETUP_TIMEOUT_S)
        await cdp.send("Target.setAutoAttach", {
            "autoAttach": True, "waitForDebuggerOnStart": True, "flatten": True,
            "filter": [{"type": "page"}, {"exclude": True}]}, timeout_s=SETUP_TIMEOUT_S)
        infos = (await cdp.send("Target.getTargets", timeout_s=SETUP_TIMEOUT_S))["targetInfos"]
        self.browser = version.get("product")
        self.protocol = version.get("protocolVersion")
        restarted = (self._last_browser_path is not None
                     and self._last_browser_path != endpoint.browser_path)
        self._last_browser_path = endpoint.browser_path
        self.endpoint = endpoint
        pages = {i["targetId"]: i for i in infos if i.get("type") == "page"}
        for target_id, tab in list(self.tabs.items()):
            if target_id not in pages:
                why = (f"was in the browser on {self.name!r}, which restarted; it is gone"
                       if restarted else "was closed while the gateway was disconnected")
                self._retire(tab, why)
        for info in pages.values():
            self._track(info)
        self._log.info("browser up", endpoint=endpoint.address, found_by=endpoint.found_by,
                       browser=self.browser, tabs=len(self.tabs))

    # ---------------------------------------------------------------- events

    def _on_browser_event(self, cdp: CdpConnection, method: str, params: dict[str, Any]) -> None:
        if method in ("Target.targetCreated", "Target.targetInfoChanged"):
            info = params.get("targetInfo", {})
            if info.get("type") == "page":
                self._track(info)
        elif method == "Target.targetDestroyed":
            tab = self.tabs.get(params.get("targetId", ""))
            if tab is not None:
                self._retire(tab, "was closed by close_tab" if tab.closing else "was closed")
        elif method == "Target.attachedToTarget":
            info = params.get("targetInfo", {})
            tasks = self._tasks
            if info.get("type") == "page" and tasks is not None:
                tab = self._track(info)
                self._bind_session(cdp, tab, params["sessionId"])
                tasks.start_soon(self._prepare, cdp, tab, params["sessionId"],
                                 bool(params.get("waitingForDebugger")))
        elif method == "Target.detachedFromTarget":
            session = params.get("sessionId", "")
            tab = self._sessions.pop(session, None)
            if tab is not None:
                # Chrome answers nothing more on a detached session: what is in flight
                # there would only run into its timeout.
                gone = TabNotFound(tab.id, "went away mid-call (closed or crashed)")
                for sid in (session, *tab.frame_sessions.values()):
                    cdp.fail_session(sid, gone, frozenset())
                tab.detach()
        elif method == "Target.targetCrashed":
            tab = self.tabs.get(params.get("targetId", ""))
            if tab is not None:
                self._retire(tab, f"crashed ({params.get('status', 'unknown status')})")

    def _track(self, info: dict[str, Any]) -> Tab:
        tab = self.tabs.get(info["targetId"])
        if tab is None:
            tab = self._registry.add(self.name, info["targetId"],
                                     console_buffer=self.config.console_buffer,
                                     network_buffer=self.config.network_buffer)
            self.tabs[tab.target_id] = tab
        tab.title = info.get("title", tab.title)
        tab.url = info.get("url", tab.url)
        return tab

    def _retire(self, tab: Tab, reason: str) -> None:
        self.tabs.pop(tab.target_id, None)
        if tab.session_id is not None:
            self._sessions.pop(tab.session_id, None)
        self._registry.remove(tab, reason)

    # ------------------------------------------------------------ operations

    async def browser_call(
        self, method: str, params: dict[str, Any] | None = None, *, timeout_s: float | None = None
    ) -> dict[str, Any]:
        timeout_s = timeout_s or self.config.command_timeout_s
        cdp = await self.connection(timeout_s)
        return await self._send(cdp, method, params, None, timeout_s, "")

    async def _send(self, cdp: CdpConnection, method: str, params: dict[str, Any] | None,
                    session: str | None, timeout_s: float, hint: str) -> dict[str, Any]:
        """``cdp.send``; a missed deadline over a link that no longer answers becomes
        ``TargetUnavailable`` (the link is dropped and reconnecting starts now)."""
        try:
            return await cdp.send(method, params, session_id=session, timeout_s=timeout_s,
                                  timeout_hint=hint)
        except CdpTimeout as exc:
            endpoint = self.endpoint
            if endpoint is None or await self.transport.link_alive(endpoint,
                                                                   LINK_PROBE_TIMEOUT_S):
                raise
            raise TargetUnavailable(
                self.name, f"{method} got no answer within {timeout_s:g} s and "
                f"{self.transport.host_label} does not answer over SSH either; the link "
                "looks down — the gateway is reconnecting; retry shortly, or check "
                "list_targets") from exc

    def _bind_session(self, cdp: CdpConnection, tab: Tab, session_id: str,
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
                if info.get("type") == "iframe" and self._tasks is not None:
                    self._bind_session(cdp, tab, params["sessionId"], info["targetId"])
                    self._tasks.start_soon(self._prepare, cdp, tab, params["sessionId"],
                                           bool(params.get("waitingForDebugger")))
                return
            if method == "Target.detachedFromTarget":
                gone = params.get("targetId")
                if gone is not None:
                    tab.frame_sessions.pop(gone, None)
                return
            tab.on_event(method, params)
            if method == "Page.javascriptDialogOpening" and tab.session_id is not None:
                error = tab.dialog_error()
                for sid in (tab.session_id, *tab.frame_sessions.values()):
                    cdp.fail_session(sid, error, _DIALOG_SAFE)

        cdp.listen(session_id, on_event)

    async def _prepare(self, cdp: CdpConnection, tab: Tab, session: str, waiting: bool) -> None:
        """Turn on a (frame) session's collectors and attach its cross-site iframes,
        then let a paused new page run."""
        try:
            async with anyio.create_task_group() as tg:
                for method in _TAB_DOMAINS:
                    tg.start_soon(self._send_quietly, cdp, method, None, session)
                tg.start_soon(self._send_quietly, cdp, "Network.enable", _NETWORK_ENABLE, session)
                tg.start_soon(self._send_quietly, cdp, "Target.setAutoAttach", _IFRAME_ATTACH,
                              session)
                if session == tab.session_id:
                    # Every tab acts as the focused one: Chrome would otherwise throttle
                    # timers of all but the newest tab to once a second.
                    tg.start_soon(self._send_quietly, cdp, "Emulation.setFocusEmulationEnabled",
                                  {"enabled": True}, session)
        finally:
            if waiting:
                await cdp.notify("Runtime.runIfWaitingForDebugger", session_id=session)
            if session == tab.session_id:
                tab.ready.set()

    async def _send_quietly(self, cdp: CdpConnection, method: str,
                            params: dict[str, Any] | None, session: str | None) -> None:
        try:
            await cdp.send(method, params, session_id=session, timeout_s=SETUP_TIMEOUT_S)
        except GatewayError as exc:  # a hung or closing page: its tools will say so
            self._log.debug("tab set-up command failed", method=method, error=str(exc))

    async def tab_call(
        self,
        tab: Tab,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        timeout_s: float | None = None,
        timeout_hint: str = "",
        session: str | None = None,
    ) -> dict[str, Any]:
        """A command on the tab's session (or ``session``, one of its frames'). Hold
        ``tab.lock``. Fails fast while a JavaScript dialog is open (the page would
        not answer)."""
        if tab.dialog is not None and method not in _DIALOG_SAFE:
            raise tab.dialog_error()
        timeout_s = timeout_s or self.config.command_timeout_s
        cdp = await self.connection(timeout_s)
        if tab.session_id is None:  # detached (e.g. after a renderer crash): attach again
            attached = await cdp.send("Target.attachToTarget",
                                      {"targetId": tab.target_id, "flatten": True},
                                      timeout_s=SETUP_TIMEOUT_S)
            self._bind_session(cdp, tab, attached["sessionId"])
            await self._prepare(cdp, tab, attached["sessionId"], waiting=False)
        return await self._send(cdp, method, params, session or tab.session_id, timeout_s,
                                timeout_hint)

    async def new_tab(self, url: str) -> Tab:
        """Open a tab; load ``url`` only once its collectors run, so its very first
        request (the document) is recorded too."""
        created = await self.browser_call("Target.createTarget", {"url": "about:blank"})
        tab = self._track({"targetId": created["targetId"], "url": "about:blank"})
        with anyio.move_on_after(SETUP_TIMEOUT_S):
            await tab.ready.wait()
        if url != "about:blank":
            await self.tab_call(tab, "Page.navigate", {"url": url})
            tab.url = url
        return tab

    async def close_tab(self, tab: Tab) -> None:
        """Closes through the browser, not the tab's session: works on a hung page too."""
        tab.closing = True
        try:
            await self.browser_call("Target.closeTarget", {"targetId": tab.target_id})
        finally:
            tab.closing = False
        self._retire(tab, "was closed by close_tab")

    async def ping(self) -> tuple[dict[str, Any], float]:
        start = time.perf_counter()
        version = await self.browser_call("Browser.getVersion")
        return version, (time.perf_counter() - start) * 1000

    async def aclose(self) -> None:
        if self._cdp is not None:
            await self._cdp.aclose()
        await self.transport.aclose()
        if self._launcher is not None:
            await self._launcher.aclose()
