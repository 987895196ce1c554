"""Finding a browser on a host: small strategy objects, tried in order.

A strategy is one way a browser is found. Today's, for a target without an
explicit ``cdp`` address:

1. ``ActivePortFiles`` — ``DevToolsActivePort`` in the configured profile, else in
   the usual Chrome / Chromium profiles of the (remote) user, Linux and macOS (and
   Windows' seen from WSL). Chrome never deletes the file, so a crashed browser leaves
   a stale one behind: a candidate only counts once its websocket opens. Beside it,
   ``Local State`` tells a person's own Chrome (its remote-debugging setting on):
   opening its websocket asks the person, so the handshake waits for them (``consent``)
   — or, where nobody is to be asked (``share``, ``doctor``), ``PersonalBrowser`` says
   it is there once its port answers, and nothing is opened.
2. ``VersionProbe`` — ``/json/version`` on 127.0.0.1:9222, the conventional port.
3. ``Launch`` — (``launch = true``) the browser the gateway starts on the host:
   attached to again when it still runs in its profile, else started.

With an explicit ``cdp`` address, ``ExplicitAddress`` alone: ``/json/version``
there, or the given ``/devtools/browser/…`` path directly (Chrome's
chrome://inspect mode serves no ``/json`` at all). With a hosted ``cdp =
"wss://…"`` URL, ``HostedSocket`` alone. ``Scanned`` (a browser a host scan
found) and ``webdriver.WebDriverSession`` (a ``HoldsSession`` one: a session it creates)
are strategies of the same shape.

A ``DiscoveryTrace`` sees each stage as it happens (what was read, which
endpoint is tried, why one was rejected): ``doctor`` reports those as steps of
its own without a second copy of the search order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import anyio
from websockets.asyncio.client import ClientConnection

from gateway.cdp.connection import CdpConnection, open_websocket
from gateway.cdp.consent import CONSENT_WAIT_S
from gateway.cdp.endpoint import (
    DEFAULT_PROFILE_DIRS,
    FALLBACK_ADDRESS,
    PROFILE_FILES,
    Endpoint,
    ProfileDir,
    parse_version_payload,
    read_profiles,
    seen_from_wsl,
)
from gateway.config import CdpAddress, TargetConfig
from gateway.config.remote import HostedUrl, SecretHeaders
from gateway.errors import (
    ConsentNotGiven,
    DiscoveryError,
    GatewayError,
    HostError,
    NothingListens,
    TunnelError,
)
from gateway.hosts.base import Host

if TYPE_CHECKING:
    from gateway.discovery.launcher import ChromeLauncher
    from gateway.discovery.scan import Candidate

__all__ = [
    "ActivePortFiles",
    "Attached",
    "DiscoveryTrace",
    "ExplicitAddress",
    "HoldsSession",
    "HostedSocket",
    "Launch",
    "Origin",
    "PersonalBrowser",
    "Scanned",
    "Search",
    "Strategy",
    "Unanswered",
    "VersionProbe",
    "ask_version",
    "attach_at",
    "discover",
    "find_browser",
    "strategies_for",
]

Attached = tuple[Endpoint, ClientConnection]


class DiscoveryTrace:
    """Hooks called by the strategies as they go; this base class ignores them all."""

    def listed(self, dirs: list[str], found: list[ProfileDir]) -> None:
        """The user-data directories read among ``dirs`` (those with any of its files)."""

    def trying(self, endpoint: Endpoint) -> None:
        """About to open the websocket of ``endpoint``."""

    def asking(self, endpoint: Endpoint, where: str) -> None:
        """``endpoint`` is a person's own Chrome on ``where``: its dialog asks them now."""

    def rejected(self, endpoint: Endpoint, reason: str) -> None:
        """The websocket of ``endpoint`` did not open (a stale DevToolsActivePort, …)."""

    def unanswered(self, address: CdpAddress, reason: str) -> None:
        """``/json/version`` at ``address`` gave no usable answer."""


PROBE_S = 2.0
"""How long the check that anything listens behind a failed websocket may take."""


class PersonalBrowser(Exception):
    """A person's own Chrome answers at ``endpoint``; its websocket was not opened, as
    that would ask the person (a search with ``ask_person`` False: ``share``, ``doctor``)."""

    def __init__(self, endpoint: Endpoint) -> None:
        super().__init__(endpoint.shown)
        self.endpoint = endpoint


@dataclass
class Search:
    """One discovery run: where, for whom, how long — and why each candidate failed."""

    host: Host
    name: str
    timeout_s: float
    trace: DiscoveryTrace = field(default_factory=DiscoveryTrace)
    tried: list[str] = field(default_factory=list)
    ask_person: bool = True  # False: a person's own Chrome is reported, not opened

    async def connect(self, endpoint: Endpoint) -> ClientConnection:
        """Open the browser websocket through the host's private route; the open
        socket is the proof a candidate is real. A person's own Chrome holds it until
        they answer its dialog (``consent``), so its answering port is checked first (a
        stale DevToolsActivePort must not read as a question put to the person); without
        ``ask_person`` that is the proof, and ``PersonalBrowser`` the result."""
        if endpoint.personal:
            await self._answers(endpoint)
            if not self.ask_person:
                raise PersonalBrowser(endpoint)
        self.trace.trying(endpoint)
        person_at = (endpoint.machine or self.host.label) if endpoint.personal else None
        if person_at is not None:
            self.trace.asking(endpoint, person_at)
        try:
            try:
                route = await self.host.route(endpoint.host, endpoint.port,
                                              socket=endpoint.socket)
            except HostError as exc:
                raise TunnelError.of(self.name, exc) from None
            try:
                return await open_websocket(
                    endpoint.url, unix_path=route.unix_path, target=self.name,
                    timeout_s=CONSENT_WAIT_S if person_at else self.timeout_s,
                    headers=endpoint.headers, ca_file=endpoint.ca_file, shown=endpoint.shown,
                    person_at=person_at)
            except ConsentNotGiven:
                raise
            except DiscoveryError:
                if route.unix_path is not None:
                    await self._nothing_there(endpoint)
                raise
        except GatewayError as exc:
            self.host.release(endpoint.host, endpoint.port, socket=endpoint.socket)
            self.trace.rejected(endpoint, exc.cause)
            raise

    async def _answers(self, endpoint: Endpoint) -> None:
        """``DiscoveryError`` unless something answers HTTP at ``endpoint`` (a person's
        Chrome answers 404: it serves no /json) — a stale DevToolsActivePort's port does not."""
        try:
            await self.host.http_request(endpoint.host, endpoint.port, "/json/version",
                                         min(self.timeout_s, PROBE_S), socket=endpoint.socket)
        except (HostError, TimeoutError) as exc:
            why = exc.reason if isinstance(exc, HostError) else "no answer"
            self.trace.rejected(endpoint, why)
            raise DiscoveryError(self.name, f"nothing answers at {endpoint.address} on "
                                 f"{self.host.label} ({why})") from None

    async def _nothing_there(self, endpoint: Endpoint) -> None:
        """Raise the plain reason when nothing listens at ``endpoint``: an SSH route's
        socket opens whatever is on the far side, so the websocket only saw it close
        ("InvalidMessage"), which reads like a refused handshake (a token, a certificate).
        One bounded request tells them apart; anything else keeps the websocket's error."""
        try:
            await self.host.http_request(endpoint.host, endpoint.port, "/json/version",
                                         min(self.timeout_s, PROBE_S), socket=endpoint.socket)
        except NothingListens as exc:
            raise DiscoveryError(self.name, f"DevTools websocket {endpoint.shown}: nothing "
                                 f"listens at {endpoint.address} on {self.host.label} "
                                 f"({exc.reason})") from None
        except (HostError, TimeoutError):
            pass


@dataclass(frozen=True)
class Origin:
    """What tells a found browser apart, as the strategy that finds it knows it: the
    process a host scan saw, the machine that shares it. ``list_targets`` and ``doctor``
    show it; a field a strategy cannot know stays None (left out)."""

    pid: int | None = None
    started: str | None = None
    profile: str | None = None
    port: int | None = None
    program: str | None = None
    started_by: str | None = None
    sharer: str | None = None    # a share: the machine that shares the browser
    expires: str | None = None   # a share: until when its sharer keeps it

    def shown(self) -> dict[str, str | int]:
        """The fields that are known, by name."""
        return {k: v for k, v in vars(self).items() if v is not None}


class Strategy(Protocol):
    """One way a browser is found. A strategy subclasses this to inherit ``describe``."""

    async def find(self, search: Search) -> Attached | None:
        """The browser this strategy finds, or None (its reasons added to
        ``search.tried``); raise only when no later strategy should be tried."""

    def describe(self) -> Origin | None:
        """What this strategy knows of its browser beyond its endpoint (None: nothing —
        a configured address, a launched or hosted browser)."""
        return None


@runtime_checkable
class HoldsSession(Protocol):
    """A strategy that holds something on the far side for its browser (a WebDriver
    session, ``webdriver``): made on demand — by the first call, not at start-up —,
    kept while the browser is served, let go when the browser is."""

    on_demand: bool

    async def hold(self, host: Host, cdp: CdpConnection) -> None: ...

    async def let_go(self, host: Host) -> None: ...


@dataclass(frozen=True)
class HostedSocket(Strategy):
    """A hosted pool's websocket (``cdp = "wss://…?token=…"`` and ``headers``): that
    URL exactly, the only answer; a refused handshake (a wrong token) is final."""

    url: HostedUrl
    headers: SecretHeaders
    ca_file: str | None

    async def find(self, search: Search) -> Attached | None:
        endpoint = Endpoint(self.url.host, self.url.port, self.url.target,
                            "the configured hosted websocket URL", self.url.scheme,
                            self.headers, self.ca_file)
        return endpoint, await search.connect(endpoint)


@dataclass(frozen=True)
class ExplicitAddress(Strategy):
    """The configured ``cdp`` address: the only answer, so a failure is final."""

    address: CdpAddress

    async def find(self, search: Search) -> Attached | None:
        return await attach_at(search, self.address)


@dataclass(frozen=True)
class ActivePortFiles(Strategy):
    """``DevToolsActivePort`` in each of ``dirs`` (one round trip to read them all)."""

    dirs: tuple[str, ...]
    configured: bool  # a profile the user named, rather than the usual locations

    async def find(self, search: Search) -> Attached | None:
        files = [f"{d}/{name}" for d in self.dirs for name in PROFILE_FILES]
        try:
            texts = await search.host.read_files(files, search.timeout_s)
        except HostError as exc:
            raise DiscoveryError(search.name, f"reading DevToolsActivePort failed: "
                                 f"{exc.reason}") from None
        profiles = read_profiles({t.path: t.text for t in texts.values()})
        search.trace.listed(list(self.dirs), profiles)
        listing = [p for p in profiles if p.active_port is not None]
        for profile in listing:
            assert profile.active_port is not None
            (port, path), directory = profile.active_port, profile.directory
            endpoint = Endpoint("127.0.0.1", port, path, f"DevToolsActivePort in {directory}",
                                personal=profile.remote_debugging)
            try:
                return endpoint, await search.connect(endpoint)
            except ConsentNotGiven:
                raise  # the person said no (or nothing): no other browser instead
            except GatewayError as exc:
                search.tried.append(f"{directory}/DevToolsActivePort says port {port} but "
                                    f"{exc.cause}" + (WSL_HINT if seen_from_wsl(directory)
                                                      else ""))
        if not listing:
            search.tried.append(f"no readable DevToolsActivePort in {self.dirs[0]}"
                                if self.configured else
                                "no DevToolsActivePort in the usual profile directories")
        return None


@dataclass(frozen=True)
class VersionProbe(Strategy):
    """``/json/version`` at a conventional address (127.0.0.1:9222)."""

    address: CdpAddress = FALLBACK_ADDRESS

    async def find(self, search: Search) -> Attached | None:
        try:
            return await attach_at(search, self.address)
        except DiscoveryError as exc:
            search.tried.append(exc.reason)
            return None


@dataclass(frozen=True)
class Launch(Strategy):
    """The gateway's own browser, when nothing else was found: the one still running in
    the launch profile (after an SSH drop or a gateway restart), else a new one."""

    launcher: ChromeLauncher
    # DevToolsActivePort can be written a moment before the port accepts: retries.
    connect_tries: int = 5

    async def find(self, search: Search) -> Attached | None:
        launcher = self.launcher
        await launcher.reclaim()
        if launcher.profile is not None:
            found = await ActivePortFiles((launcher.profile,), configured=True).find(search)
            if found is not None:
                launcher.serving()
                return found
        profile = await launcher.start(search.timeout_s)
        for attempt in range(self.connect_tries):
            found = await ActivePortFiles((profile,), configured=True).find(search)
            if found is not None:
                launcher.serving()
                return found
            await anyio.sleep(0.05 * (attempt + 1))
        raise DiscoveryError(search.name, "; ".join(search.tried[-1:]))


class Scanned(Strategy):
    """A browser a host scan found (``host_scan``): its fixed port, or its profile's
    DevToolsActivePort — or, while it cannot be attached to, the reason and the fix.
    The scan updates ``candidate`` as the process changes (a port 0 browser writes
    its file a moment after it starts)."""

    def __init__(self, candidate: Candidate) -> None:
        self.candidate = candidate

    def describe(self) -> Origin:
        c = self.candidate
        return Origin(pid=c.pid, started=c.started, profile=c.profile, port=c.active_port,
                      program=c.program, started_by=c.started_by)

    async def find(self, search: Search) -> Attached | None:
        found = self.candidate
        if found.problem is not None:
            raise DiscoveryError(search.name, f"the browser {search.name} (pid {found.pid}) "
                                 f"{found.problem}")
        if found.port:
            return await attach_at(search, CdpAddress(host="127.0.0.1", port=found.port))
        # Port 0: the scan read its DevToolsActivePort already (no exec of our own, so
        # twenty browsers starting at once need no twenty SSH sessions).
        assert found.active_port is not None and found.browser_path is not None
        endpoint = Endpoint("127.0.0.1", found.active_port, found.browser_path,
                            f"DevToolsActivePort in {found.profile}")
        try:
            return endpoint, await search.connect(endpoint)
        except GatewayError as exc:
            raise DiscoveryError(search.name, f"{found.profile}/DevToolsActivePort says port "
                                 f"{found.active_port} but {exc.cause}") from None


def strategies_for(config: TargetConfig,
                   launcher: ChromeLauncher | None = None) -> list[Strategy]:
    """How the browser of a configured target is found, in order."""
    if isinstance(config.cdp, HostedUrl):
        return [HostedSocket(config.cdp, config.headers, config.ca_file)]
    if config.cdp is not None:
        if launcher is not None:  # nothing there: launch one on that port
            return [VersionProbe(config.cdp), Launch(launcher)]
        return [ExplicitAddress(config.cdp)]
    dirs = (config.profile,) if config.profile else DEFAULT_PROFILE_DIRS
    found: list[Strategy] = [ActivePortFiles(dirs, configured=bool(config.profile)),
                             VersionProbe()]
    if launcher is not None:
        found.append(Launch(launcher))
    elif config.launch and config.launch_dir is not None and config.launch_dir not in dirs:
        # No launching (doctor): still find the one launched earlier, as serve would.
        found.append(ActivePortFiles((config.launch_dir,), configured=True))
    return found


async def find_browser(strategies: Sequence[Strategy], search: Search) -> Attached:
    """The first browser any strategy finds; else ``DiscoveryError`` with every reason."""
    for strategy in strategies:
        found = await strategy.find(search)
        if found is not None:
            return found
    reasons = "; ".join(t for t in search.tried if t)
    raise DiscoveryError(
        search.name,
        f"no Chrome DevTools endpoint found on {search.host.label}: {reasons}. Start "
        "Chrome there with --remote-debugging-port=0 (and a --user-data-dir), or set "
        "cdp/profile for this target",
    )


async def discover(host: Host, config: TargetConfig, timeout_s: float,
                   trace: DiscoveryTrace | None = None) -> Attached:
    """Find the browser of a configured target (no launching) and open its websocket —
    but never a person's own Chrome's: ``PersonalBrowser`` says where it answers."""
    search = Search(host, config.name, timeout_s, trace or DiscoveryTrace(), ask_person=False)
    return await find_browser(strategies_for(config), search)


async def ask_version(search: Search, address: CdpAddress, socket: str | None = None) -> str:
    """``/json/version`` at ``address`` (or at the Unix socket ``socket``, a share's)
    → the ``/devtools/browser/…`` path it names."""
    where = socket or f"{address.host}:{address.port}"
    try:
        response = await search.host.http_request(address.host, address.port,
                                                  "/json/version", search.timeout_s,
                                                  socket=socket)
    except HostError as exc:
        raise Unanswered(f"/json/version at {where}: {exc.reason}",
                          nothing_listens=isinstance(exc, NothingListens)) from None
    if response.status != 200:
        raise Unanswered(f"/json/version at {where} answered HTTP {response.status}",
                         status=response.status)
    try:
        return parse_version_payload(response.body)
    except ValueError as exc:
        raise Unanswered(f"/json/version at {where}: {exc}") from None


class Unanswered(Exception):
    """``/json/version`` gave nothing to connect to; the message says why."""

    def __init__(self, message: str, *, nothing_listens: bool = False,
                 status: int | None = None) -> None:
        super().__init__(message)
        self.nothing_listens = nothing_listens
        self.status = status  # the HTTP status it answered, if any


async def attach_at(search: Search, address: CdpAddress, found_by: str | None = None) -> Attached:
    """The browser at ``address`` (``/json/version`` there, unless its path is known:
    then its 404 tells a person's own Chrome, which serves no /json)."""
    where = f"{address.host}:{address.port}"
    path, personal = address.browser_path, False
    try:
        version = await ask_version(search, address)
    except Unanswered as exc:
        if path is None:
            search.trace.unanswered(address, str(exc))
            raise DiscoveryError(search.name, str(exc)) from None
        personal = exc.status == 404
    else:
        path = path or version
    assert path is not None
    found_by = found_by or (f"/json/version at {where}" if address.browser_path is None
                            else f"the configured websocket URL at {where}")
    endpoint = Endpoint(address.host, address.port, path, found_by, personal=personal)
    return endpoint, await search.connect(endpoint)


WSL_HINT = ("; that is Windows' Chrome, and Windows' 127.0.0.1 is not WSL's: set "
            "networkingMode=mirrored in %UserProfile%\\.wslconfig (then `wsl --shutdown`), or "
            "run `chrome-ssh-gateway share` on Windows instead")
