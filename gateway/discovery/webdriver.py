"""A browser from a WebDriver endpoint: chromedriver, or a Selenium Grid router.

Such a browser has no ``DevToolsActivePort`` to be found by: it exists because
a session was created (``POST /session``), and the session's capabilities say
where its DevTools are —

- chromedriver: ``goog:chromeOptions.debuggerAddress`` = ``localhost:PORT`` on
  chromedriver's machine (the WebDriver URL's host), ``/json/version`` there;
- Selenium Grid 4: ``se:cdp`` = ``ws://<router as the Grid sees itself>/session/
  <id>/se/cdp``, proxied by the router. The Grid's idea of its own address is
  often an internal one, so the URL is rewritten to the configured router
  address (path kept): the websocket goes where the WebDriver HTTP goes.

Both the WebDriver HTTP and the websocket go over the target's ``Host`` (its
SSH connection when ``ssh`` is set). ``WebDriverSession`` is a discovery
strategy that also *holds* what it found: it creates its session only when the
browser is first used, keeps it alive while served (a cheap ``GET
/session/<id>/timeouts`` every ``keepalive_s``, as a Grid ends sessions idle for
its ``--session-timeout``; not ``/url``, a command that "handles user prompts":
chromedriver would dismiss any dialog open in the browser), and deletes it when
the gateway lets it go. A
session the driver or Grid ended is reported once, with its reason, as a
failed attempt — the browser goes ``down`` — and the next attempt (the next
call) creates a new one; its browser is a new one, so old tab ids fail.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

import anyio
import anyio.lowlevel
import structlog
from pydantic_core import from_json

from gateway.cdp.connection import CdpConnection
from gateway.cdp.endpoint import Endpoint
from gateway.config import CdpAddress
from gateway.config.remote import WebDriverUrl
from gateway.discovery.strategy import Attached, Search, Strategy, attach_at
from gateway.errors import DiscoveryError, GatewayError, HostError
from gateway.hosts.base import Host
from gateway.hosts.http import HttpResponse

__all__ = [
    "KEEPALIVE_S",
    "NewSession",
    "WebDriverSession",
    "one_line",
    "parse_new_session",
    "webdriver_error",
    "webdriver_value",
]

log = structlog.get_logger("gateway.webdriver")

KEEPALIVE_S = 60.0  # well inside a Grid's default 300 s session timeout
END_TIMEOUT_S = 10.0  # DELETE /session: chromedriver waits for Chrome to quit (~2 s)
# What an answer may put into later request lines: chromedriver's ids are hex, a Grid's
# UUIDs; its se:cdp path is /session/<id>/se/cdp.
_SESSION_ID_RE = re.compile(r"[A-Za-z0-9_-]{1,128}")
_CDP_PATH_RE = re.compile(r"/[A-Za-z0-9._~/%:@!$&'()*+,;=?-]{0,1024}")


@dataclass(frozen=True)
class NewSession:
    """What ``POST /session`` answered: the session and where its DevTools are.

    ``path`` is None for chromedriver's ``debuggerAddress`` (ask ``/json/version``
    at ``host:port``), the ``se:cdp`` path for a Grid."""

    session_id: str
    host: str
    port: int
    path: str | None


def webdriver_value(body: bytes) -> dict[str, Any]:
    """The ``value`` object of a WebDriver answer, or ``{}`` for anything else.

    ``pydantic_core.from_json``, not ``json.loads``: the body is untrusted, and a
    megabyte of ``[[[[`` makes the latter raise ``RecursionError``."""
    try:
        payload: Any = from_json(body)
    except ValueError:
        return {}
    value = payload.get("value") if isinstance(payload, dict) else None
    return value if isinstance(value, dict) else {}


def webdriver_error(response: HttpResponse) -> str:
    """A WebDriver error answer (``{"value": {"error", "message"}}``) in one line."""
    value = webdriver_value(response.body)
    if not isinstance(value.get("error"), str):
        return f"HTTP {response.status}"
    error = one_line(value["error"])
    message = one_line(value.get("message"))  # a Grid's message carries a stack trace
    return f"HTTP {response.status} {error}" + (f": {message}" if message not in ("", error)
                                               else "")


def one_line(text: object, limit: int = 300) -> str:
    """Driver text as it may be shown: its first line, printable only, bounded — it is
    untrusted, and doctor's table, errors and logs are one line per thing."""
    lines = str(text or "").strip().splitlines()
    return "".join(c for c in lines[0][:limit] if c.isprintable()) if lines else ""


def parse_new_session(body: bytes, router: WebDriverUrl) -> NewSession:
    """The session id and DevTools address in a ``POST /session`` answer; ``ValueError``
    when there is none (a driver that is not Chrome's, or a Grid without CDP)."""
    value = webdriver_value(body)
    if not value:
        raise ValueError("the answer has no \"value\" object")
    session_id = value.get("sessionId")
    caps = value.get("capabilities")
    if not isinstance(session_id, str) or not session_id or not isinstance(caps, dict):
        raise ValueError("the answer has no sessionId and capabilities")
    if _session_id(value) is None:  # it goes into later request lines
        raise ValueError(f"its sessionId {session_id[:80]!r} is not a plain token")
    se_cdp = caps.get("se:cdp")
    if isinstance(se_cdp, str) and se_cdp.startswith(("ws://", "wss://")):
        rest = se_cdp.partition("://")[2]
        slash = rest.find("/")
        path = rest[slash:] if slash >= 0 else "/"
        if not _CDP_PATH_RE.fullmatch(path):  # it goes into the websocket request line
            raise ValueError(f"its se:cdp path {path[:80]!r} has characters a URL path "
                             "cannot")
        return NewSession(session_id, router.host, router.port, path)
    if any(key.startswith("se:") for key in caps):
        # A Grid: a debuggerAddress is its node's own loopback, out of reach.
        raise ValueError("the Grid offers no se:cdp for it (se:cdpEnabled is "
                         f"{caps.get('se:cdpEnabled')!r}): start the Grid without "
                         "--disable-cdp, for a Chrome node")
    options = caps.get("goog:chromeOptions")
    address = options.get("debuggerAddress") if isinstance(options, dict) else None
    if isinstance(address, str):
        return NewSession(session_id, *_debugger_address(address, router), None)
    raise ValueError("its capabilities name no DevTools endpoint (neither se:cdp nor "
                     "goog:chromeOptions.debuggerAddress): is it a Chrome/Chromium session?")


def _session_id(value: dict[str, Any]) -> str | None:
    """The answer's ``sessionId`` if it is a plain token (safe in a request line)."""
    session_id = value.get("sessionId")
    if isinstance(session_id, str) and _SESSION_ID_RE.fullmatch(session_id):
        return session_id
    return None


def _debugger_address(address: str, router: WebDriverUrl) -> tuple[str, int]:
    """Where chromedriver's ``debuggerAddress`` points, as reached from the target host.

    The answer is untrusted (a Grid node, a proxy, anything listening there): it may
    name chromedriver's own machine only — ``localhost``, or the WebDriver URL's host
    itself — on a real port, never another machine for the gateway to connect to."""
    where, _, port = address.rpartition(":")
    if not (port.isascii() and port.isdigit() and 0 < int(port) < 65536):
        raise ValueError(f"its debuggerAddress {address[:80]!r} names no port")
    where = where.strip("[]")
    if where in ("localhost", "127.0.0.1", "::1", ""):  # chromedriver's own machine
        return ("127.0.0.1" if router.host == "localhost" else router.host), int(port)
    if where == router.host:
        return where, int(port)
    raise ValueError(f"its debuggerAddress {address[:80]!r} is not on the WebDriver host "
                     f"{router.host}: only a browser on the driver's own machine is attached")


class WebDriverSession(Strategy):
    """One WebDriver session and its browser (a strategy that holds what it found)."""

    on_demand = True  # created by the first call, not at start-up

    def __init__(self, url: WebDriverUrl, capabilities: dict[str, Any],
                 keepalive_s: float = KEEPALIVE_S) -> None:
        self.url = url
        self.capabilities = capabilities
        self.keepalive_s = keepalive_s
        self.session: NewSession | None = None
        self._ended: str | None = None  # why the last session ended, until reported
        self._creating = anyio.Lock()  # held while a POST /session is in flight

    @property
    def where(self) -> str:
        return str(self.url)

    async def _http(self, host: Host, method: str, path: str, timeout_s: float,
                    body: dict[str, Any] | None = None) -> HttpResponse:
        data = json.dumps(body).encode() if body is not None else None
        return await host.http_request(self.url.host, self.url.port, self.url.base + path,
                                       timeout_s, method=method, body=data)

    async def find(self, search: Search) -> Attached | None:
        if self.session is not None:
            await self.check(search.host)  # reconnecting: is the session still there?
        if self._ended is not None:
            ended, self._ended = self._ended, None
            raise DiscoveryError(search.name, f"{ended}; the next call creates a new session")
        session = self.session or await self.create(search)
        try:
            return await self.attach(search, session)
        except GatewayError as exc:
            # Its browser is gone (the session with it, or soon): start over next time.
            await self.let_go(search.host)
            raise DiscoveryError(search.name, f"the browser of WebDriver session "
                                 f"{session.session_id} at {self.where} did not answer "
                                 f"({exc.cause}); the next call creates a new session") from None

    async def create(self, search: Search) -> NewSession:
        request = {"capabilities": {"alwaysMatch": self.capabilities}}
        made: NewSession | None = None
        await anyio.lowlevel.checkpoint_if_cancelled()  # the shield below would not
        try:
            # Shielded (it is bounded by timeout_s): once sent, the driver makes the
            # browser whether or not we are cancelled, so its answer must be read for
            # let_go to delete it; let_go waits for this lock.
            with anyio.CancelScope(shield=True):
                async with self._creating:
                    response = await self._http(search.host, "POST", "/session",
                                                search.timeout_s, request)
                    if response.status == 200:
                        made = self.session = parse_new_session(response.body, self.url)
        except HostError as exc:
            raise DiscoveryError(search.name, f"WebDriver at {self.where}: {exc.reason}; is "
                                 "chromedriver (or the Grid) running there?") from None
        except ValueError as exc:
            # Made but of no use (a Grid without CDP): its browser is not left running.
            await self._delete(search.host, _session_id(webdriver_value(response.body)))
            raise DiscoveryError(search.name, f"WebDriver at {self.where} created a session "
                                 f"but {exc}") from None
        if made is None:
            raise DiscoveryError(search.name, f"WebDriver at {self.where} refused a new "
                                 f"session ({webdriver_error(response)}); check capabilities")
        log.info("webdriver session created", target=search.name,
                 session=made.session_id, webdriver=self.where)
        return made

    async def attach(self, search: Search, session: NewSession) -> Attached:
        found_by = f"WebDriver session {session.session_id} at {self.where}"
        if session.path is None:
            address = CdpAddress(host=session.host, port=session.port)
            return await attach_at(search, address, found_by)
        endpoint = Endpoint(session.host, session.port, session.path, found_by)
        return endpoint, await search.connect(endpoint)

    async def hold(self, host: Host, cdp: CdpConnection) -> None:
        """While the browser is served: keep the session alive; when the driver or Grid
        has ended it, close the browser's socket (the supervisor's next attempt then
        reports why, and the call after creates a new session)."""
        while self.session is not None:
            await anyio.sleep(self.keepalive_s)
            if await self.check(host) is not None:
                await cdp.aclose()

    async def check(self, host: Host) -> str | None:
        """Why the session is gone (ended from outside), or None while it lives — or
        while that cannot be told (a link problem is the supervisor's to see)."""
        session = self.session
        if session is None:
            return None
        try:
            response = await self._http(host, "GET", f"/session/{session.session_id}/timeouts",
                                        END_TIMEOUT_S)
        except HostError:
            return None
        if webdriver_value(response.body).get("error") != "invalid session id":
            return None  # the driver's own word only: not any 404 (a proxy, a command)
        self.session = None
        self._ended = (f"WebDriver session {session.session_id} at {self.where} was ended "
                       f"by the driver or Grid ({webdriver_error(response)})")
        log.info("webdriver session ended", session=session.session_id, webdriver=self.where,
                 reason=webdriver_error(response))
        return self._ended

    async def let_go(self, host: Host) -> None:
        """Delete the session (its browser quits), bounded and best effort: it runs at
        exit and on removal, where a dead link must not hold anything up. A session
        being created is waited for (bounded by its request's timeout): the supervisor
        may still be in ``POST /session`` when the registry lets the browser go."""
        with anyio.CancelScope(shield=True):
            async with self._creating:
                session, self.session = self.session, None
        if session is not None:
            await self._delete(host, session.session_id)

    async def _delete(self, host: Host, session_id: str | None) -> None:
        """``DELETE /session/<id>``, bounded, shielded, failures logged only."""
        if session_id is None:
            return
        with anyio.move_on_after(END_TIMEOUT_S, shield=True):
            try:
                response = await self._http(host, "DELETE", f"/session/{session_id}",
                                            END_TIMEOUT_S)
                log.info("webdriver session deleted", session=session_id,
                         webdriver=self.where, status=response.status)
            except HostError as exc:
                log.warning("webdriver session not deleted", session=session_id,
                            webdriver=self.where, reason=exc.reason)

