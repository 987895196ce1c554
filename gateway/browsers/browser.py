"""One browser on one host, kept connected: state, supervisor, commands.

State machine::

    connecting ──ok──▶ up ──socket closed──▶ connecting (at once: the browser
        │                 ▲                  may just have moved to a new port)
        └─fail──▶ down ───┘ retried after a backoff or when a call arrives (down meanwhile)
        any state ──removed from the registry──▶ gone (for good)
    (a WebDriver session's browser starts down: the first call makes the session)

``run()`` is the supervisor: it lives in the registry's task group while the browser
is registered, owns the CDP reader, and reconnects with exponential backoff
(``ReconnectPolicy``). How the browser is found is a list of discovery strategies
(``discovery``), tried on every (re)connect. Callers never connect by themselves: a
call on an ``up`` browser goes straight to the socket; a call on a ``connecting`` one
waits for the attempt under way, and a call on a ``down`` one wakes the supervisor
(the next attempt starts now, not after the backoff) and waits for that attempt —
both at most ``call_wait_s``, then they fail with the reason.

A person's own Chrome (``Endpoint.personal``) asks them before each new connection: while
its dialog is up the state stays ``connecting``, its reason saying so; a refusal (or no
answer) leaves it ``down`` until a call asks again — never a retry of its own, which
would put dialog after dialog in front of the person. It shows the agent only its own
tabs unless ``tabs`` says otherwise (``PageScope``).

A command Chrome does not answer in time makes the host show it still answers
(``_send``): a dead link fails the call as unreachable and is dropped, so reconnecting
starts at once, not after the keepalives. Pages: ``PageTracker``; downloads: ``Downloads``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import anyio
import structlog

from gateway.browsers.downloads import Downloads
from gateway.browsers.pages import DIALOG_SAFE, SETUP_TIMEOUT_S, PageTracker
from gateway.browsers.scope import scope_mode
from gateway.browsers.uploads import Uploads
from gateway.cdp import consent
from gateway.cdp.connection import CdpConnection
from gateway.cdp.endpoint import Endpoint
from gateway.config import TargetConfig
from gateway.discovery.scan import Candidate
from gateway.discovery.strategy import (
    DiscoveryTrace,
    HoldsSession,
    Origin,
    Scanned,
    Search,
    Strategy,
    find_browser,
)
from gateway.errors import (
    CdpTimeout,
    ConsentNotGiven,
    GatewayError,
    HostError,
    TargetUnavailable,
    TunnelError,
)
from gateway.hosts.base import Host
from gateway.tabs.tab import Tab, TabIds

if TYPE_CHECKING:  # only a launch = true target uses one (``Registry.add``)
    from gateway.discovery.launcher import ChromeLauncher

__all__ = ["Browser", "BrowserState", "is_headless"]

BrowserState = Literal["connecting", "up", "down", "gone"]
_S = TypeVar("_S")
log = structlog.get_logger("gateway.target")

# How long a host gets to show it is alive after Chrome missed a command's deadline.
LINK_PROBE_TIMEOUT_S = 2.0
RELEASE_S = 2.0  # how long releasing a remote object may take (it is only clean-up)
CLOSED_S = 5.0  # how long close_tab waits for Chrome to destroy the page it accepted to close


def is_headless(version: dict[str, Any]) -> bool:
    """Whether ``Browser.getVersion`` describes a browser without windows. Chromium 156
    headless names itself ``Chrome/…`` in ``product`` (earlier ``HeadlessChrome/…``) and
    says HeadlessChrome only in its user agent; a browser that says neither is taken as
    headless, so nothing is asked of a window that may not be there."""
    said = [str(version.get(key) or "") for key in ("product", "userAgent")]
    return not all(said) or any("HeadlessChrome" in text for text in said)


class Browser:
    def __init__(
        self,
        config: TargetConfig,
        host: Host,
        tab_ids: TabIds,
        strategies: Sequence[Strategy],
        launcher: ChromeLauncher | None = None,
        *,
        group: str | None = None,
    ) -> None:
        self.config = config
        self.name = config.name
        self.host = host
        self._strategies = list(strategies)
        # A WebDriver session is made by the first call, then kept while served.
        self._held = [s for s in self._strategies if isinstance(s, HoldsSession)]
        self._on_demand = any(held.on_demand for held in self._held)
        self.launcher = launcher  # launch = true: attached, restarts (list_targets)
        self.state: BrowserState = "down" if self._on_demand else "connecting"
        self.error: str | None = "no session yet; the first call creates one" \
            if self._on_demand else None
        self.product: str | None = None
        self.headless = True  # no window to bring a tab to the front of
        self.protocol: str | None = None
        self.endpoint: Endpoint | None = None
        self.personal = False  # a person's own Chrome (its remote-debugging setting)
        self.asking = False    # its "Allow remote debugging?" dialog is up now
        self.pages = PageTracker(self.name, config, tab_ids, Uploads(host))
        self.downloads = Downloads(config, host, self.pages)
        self._tab_ids = tab_ids
        self._cdp: CdpConnection | None = None
        self._changed = anyio.Event()
        self._wake = anyio.Event()
        self._failures = 0  # counts failed attempts: a waiting call sees the one it awaited fail
        self._attempting = False  # one is under way: a retry reads down meanwhile
        self._last_browser_path: str | None = None
        self.group = group  # the browsers = "all" or sessions = N target it is one of
        self._log = log.bind(target=self.name)

    def strategy(self, kind: type[_S]) -> _S | None:
        """How this browser is found, when it is of ``kind`` (``Scanned``, a share's …)."""
        return next((s for s in self._strategies if isinstance(s, kind)), None)

    @property
    def found(self) -> Candidate | None:
        """What a host scan sees of this browser now (pid, profile, …), if a scan found it."""
        scanned = self.strategy(Scanned)
        return scanned.candidate if scanned is not None else None

    @property
    def origin(self) -> Origin | None:
        """What the strategies that find this browser know of it (a scan's process, a
        share's sharer), for ``list_targets`` and ``doctor``; None when none knows more
        than its endpoint."""
        return next((o for s in self._strategies if (o := s.describe()) is not None), None)

    @property
    def described(self) -> str:
        """``'ci-3' (pid 4242)``: the name, and the process when a scan found it."""
        return f"{self.name!r}" + (f" (pid {self.found.pid})" if self.found else "")

    def retry_now(self) -> None:
        """Start the next connection attempt now rather than after the backoff."""
        self._wake.set()

    @property
    def tabs(self) -> dict[str, Tab]:
        """The browser's live tabs by Chrome targetId."""
        return self.pages.tabs

    # ----------------------------------------------------------------- state

    def _set_state(self, state: BrowserState, error: str | None = None) -> None:
        if self.state == "gone":
            return
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
            while self.state == "connecting" and not self.asking:  # (the person's time)
                await self._changed.wait()

    def _live(self) -> CdpConnection | None:
        cdp = self._cdp
        return cdp if self.state == "up" and cdp is not None and cdp.is_open else None

    async def _await_attempt(self) -> None:
        """Return once the browser is up, or once a connection attempt that was under
        way (or is started now) has failed."""
        failures = self._failures
        while self._live() is None and self.state != "gone" and self._failures == failures:
            if self.state == "down":
                self._wake.set()  # try now rather than after the backoff
            await self._changed.wait()

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
        if self.state == "gone":
            raise TargetUnavailable(self.name, reason)
        if self.asking:
            raise TargetUnavailable(self.name, f"{reason}; call again once they have")
        if self.state == "connecting" or self._attempting:
            reason += f"; still reconnecting after {wait_s:g} s"
        raise TargetUnavailable(self.name, f"{reason}; the gateway keeps reconnecting in the "
                                "background — retry shortly, or check list_targets")

    # ------------------------------------------------------------ supervisor

    async def run(self) -> None:
        """Connect, serve, reconnect — until cancelled (the registry lets it go)."""
        policy = self.config.reconnect
        delay = policy.initial_delay_s
        if self._on_demand:
            await self._wake.wait()
        while True:
            if not (self._failures and self.state == "down"):
                self._set_state("connecting", self.error)  # a retry stays down meanwhile
            self._attempting = True
            refused = False
            try:
                endpoint, cdp = await self._open()
            except Exception as exc:  # a bug must cost this attempt, not the process
                refused = isinstance(exc, ConsentNotGiven)  # asked again by a call only
                self.asking = False
                self._attempt_failed(self._failure(exc, "connecting"))
            else:
                self.asking = False
                try:
                    served = await self._serve(endpoint, cdp)  # False: its set-up failed
                except Exception as exc:  # the same for a connection that broke down
                    served = True
                    self._set_state("connecting", self._failure(exc, "serving"))
                    await cdp.aclose()
                    self._disconnected(endpoint)
                if served:
                    delay = policy.initial_delay_s
                    continue
            with anyio.move_on_after(None if self._on_demand or refused else delay):
                await self._wake.wait()  # the backoff: a call's wake-up cuts it short
            delay = min(delay * 2, policy.max_delay_s)

    def _attempt_failed(self, reason: str) -> None:
        self._failures, self._attempting = self._failures + 1, False
        self._wake = anyio.Event()  # now, with the state: a call from here on wakes the retry
        self._set_state("down", reason)

    def _failure(self, exc: Exception, doing: str) -> str:
        if isinstance(exc, GatewayError):
            return exc.cause
        self._log.exception(f"{doing} crashed")
        return (f"internal gateway error while {doing} ({type(exc).__name__}: {exc}); "
                "retrying — report this if it repeats")

    async def _open(self) -> tuple[Endpoint, CdpConnection]:
        timeout_s = self.config.reconnect.connect_timeout_s
        try:
            await self.host.connect()
        except HostError as exc:
            raise TunnelError.of(self.name, exc) from None
        if self.launcher is not None:
            self.launcher.attached = False  # until ``Launch`` finds it again
        endpoint, ws = await find_browser(self._strategies, Search(
            self.host, self.name, timeout_s, _Asking(self)))
        old = self.endpoint  # it moved: its route goes (a share keeps its socket's)
        if old is not None and old.address != endpoint.address:
            self.host.release(old.host, old.port, socket=old.socket)
        if self.config.expose_port is not None:
            await self.host.expose(self.config.expose_port, endpoint.host, endpoint.port)
        return endpoint, CdpConnection(ws, name=self.name)

    async def _serve(self, endpoint: Endpoint, cdp: CdpConnection) -> bool:
        """Run the reader, set the browser up, serve until the socket closes; False: no set-up."""
        async with anyio.create_task_group() as tg:
            tg.start_soon(cdp.run)
            tg.start_soon(self.pages.uploads.sweeper)
            for held in self._held:
                tg.start_soon(held.hold, self.host, cdp)
            self.pages.serve(cdp, tg)
            try:
                await self._setup(cdp, endpoint, tg)
            except GatewayError as exc:
                self._attempt_failed(f"browser at {endpoint.address} did not answer "
                                     f"set-up commands ({exc})")
                await cdp.aclose()
            else:
                self._cdp = cdp
                self._set_state("up")
                await cdp.closed.wait()
            tg.cancel_scope.cancel()  # the sweeper, a session's keeper, attach tasks: done
        self._disconnected(endpoint)
        return self.state != "down"

    def _disconnected(self, endpoint: Endpoint) -> None:
        self._cdp = None
        self.pages.disconnected()
        self._log.info("browser connection closed", endpoint=endpoint.address)

    def asked(self, endpoint: Endpoint, where: str) -> None:
        """Discovery is asking the person on ``where`` to allow this connection."""
        self.personal = self.asking = True
        restarted = self._last_browser_path not in (None, endpoint.browser_path)
        self._set_state("connecting", consent.waiting(where, restarted=restarted))

    async def _setup(self, cdp: CdpConnection, endpoint: Endpoint, tg: anyio.abc.TaskGroup) -> None:
        self.personal = endpoint.personal
        # A person's own browser keeps its tabs from the agent unless ``tabs`` says else.
        self.pages.scope.mode = scope_mode(self.config.tabs, self.config.handed_tabs,
                                           endpoint.personal)
        version = await cdp.send("Browser.getVersion", timeout_s=SETUP_TIMEOUT_S)
        await cdp.send("Target.setDiscoverTargets", {"discover": True}, timeout_s=SETUP_TIMEOUT_S)
        if not self.pages.scope.agent_only:  # (agent: only its own pages, one by one)
            await cdp.send("Target.setAutoAttach", {
                "autoAttach": True, "waitForDebuggerOnStart": True, "flatten": True,
                "filter": [{"type": "page"}, {"exclude": True}]}, timeout_s=SETUP_TIMEOUT_S)
        infos = (await cdp.send("Target.getTargets", timeout_s=SETUP_TIMEOUT_S))["targetInfos"]
        self.product = version.get("product")
        self.headless = is_headless(version)
        self.protocol = version.get("protocolVersion")
        restarted = self._last_browser_path not in (None, endpoint.browser_path)
        self._last_browser_path = endpoint.browser_path
        self.endpoint = endpoint
        self.pages.reconcile(infos, restarted)
        await self.downloads.start(cdp, endpoint, tg, launched=bool(
            self.launcher and self.launcher.attached))  # its default context: ours
        self._log.info("browser up", endpoint=endpoint.address, found_by=endpoint.found_by,
                       browser=self.product, tabs=len(self.tabs))

    # ------------------------------------------------------------ operations

    async def browser_call(self, method: str, params: dict[str, Any] | None = None, *,
                           timeout_s: float | None = None) -> dict[str, Any]:
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
            if endpoint is None or await self.host.alive(endpoint.host, endpoint.port,
                                                         LINK_PROBE_TIMEOUT_S):
                raise
            raise TargetUnavailable(
                self.name, f"{method} got no answer within {timeout_s:g} s and "
                f"{self.host.label} does not answer over SSH either; the link "
                "looks down — the gateway is reconnecting; retry shortly, or check "
                "list_targets") from exc

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
        if tab.dialog is not None and method not in DIALOG_SAFE:
            raise tab.dialog_error()
        timeout_s = timeout_s or self.config.command_timeout_s
        cdp = await self.connection(timeout_s)
        if self.tabs.get(tab.target_id) is not tab:  # retired while the call waited
            self._tab_ids.get(tab.id)  # raises TabNotFound with the reason
        if tab.session_id is None:  # detached (e.g. after a renderer crash): attach again
            await self.pages.attach(cdp, tab)
        return await self._send(cdp, method, params, session or tab.session_id, timeout_s,
                                timeout_hint)

    async def release_object(self, object_id: str, session: str | None) -> None:
        """Release a remote object, best effort: bounded, finished even while the caller
        is being cancelled, and never raising — so it cannot replace the error (or the
        cancellation) that is leaving the ``finally`` it runs in."""
        with anyio.move_on_after(RELEASE_S, shield=True):
            try:
                cdp = await self.connection(max_wait_s=RELEASE_S)
                await cdp.notify("Runtime.releaseObject", {"objectId": object_id},
                                 session_id=session)
            except GatewayError:
                pass  # the session or connection is gone, and its objects with it

    async def new_tab(self, url: str, context: str | None = None, *,
                      context_id: str | None = None) -> Tab:
        """Open a tab (in the isolated browser context ``context``, see ``contexts.py``,
        or the one whose id is ``context_id``); load ``url`` only once its collectors
        run, so its very first request (the document) is recorded too."""
        if context is not None:
            context_id = await self.pages.contexts.id_for(context, self.browser_call)
        params: dict[str, Any] = {"url": "about:blank"}
        if context_id is not None:
            params["browserContextId"] = context_id
        scope = self.pages.scope
        if scope.agent_only:  # the person's window keeps its focus
            params["background"] = True
        created = await self.browser_call("Target.createTarget", params)
        scope.claim(created["targetId"])
        tab = self.pages.track({"targetId": created["targetId"], "url": "about:blank",
                                **({"browserContextId": context_id} if context_id else {})})
        self.pages.attach_soon(tab)
        await self.pages.adopt(tab)
        with anyio.move_on_after(SETUP_TIMEOUT_S):
            await tab.ready.wait()
        if url != "about:blank":
            await self.tab_call(tab, "Page.navigate", {"url": url})
            tab.url = url
        return tab

    async def close_tab(self, tab: Tab) -> None:
        """Closes through the browser, not the tab's session: works on a hung page too;
        answers once Chrome destroyed the page and its uploaded files are gone
        (``PageTracker.close``)."""
        await self.pages.close(tab, "was closed by close_tab", self.browser_call, CLOSED_S)
        if tab.context is not None and all(other.context != tab.context
                                           for other in self.tabs.values()):
            await self.pages.contexts.dispose(tab.context, self.browser_call)

    async def _quit(self, cdp: CdpConnection) -> None:
        """Ask a launched browser to quit, as closing its last window would (it writes its
        cookies: a signal loses them); the launcher's stop waits for the process."""
        with anyio.move_on_after(RELEASE_S, shield=True):
            await cdp.notify("Browser.close")

    async def aclose(self, gone: str | None = None) -> None:
        """Close the connection and what the browser holds on its host (its route, a
        browser the gateway launched). With ``gone``, the browser is finished for
        good: its tabs are retired with that reason and calls fail with it."""
        if gone is not None:
            self._set_state("gone", gone)
            self.pages.retire_all(f"belonged to target {self.described}, which {gone}")
        quitting = False
        if self._cdp is not None:
            if self.launcher is not None and self.launcher.stops_on_exit and self.launcher.attached:
                await self._quit(self._cdp)
                quitting = True
            await self._cdp.aclose()
        await self.pages.uploads.aclose()
        await self.downloads.aclose()
        for held in self._held:
            await held.let_go(self.host)
        if self.endpoint is not None:
            self.host.release(self.endpoint.host, self.endpoint.port,
                              socket=self.endpoint.socket)
        if self.launcher is not None:
            await self.launcher.aclose(quitting=quitting)


class _Asking(DiscoveryTrace):
    """Tells the browser when discovery asks the person (its state says so meanwhile)."""

    def __init__(self, browser: Browser) -> None:
        self._browser = browser

    def asking(self, endpoint: Endpoint, where: str) -> None:
        self._browser.asked(endpoint, where)
