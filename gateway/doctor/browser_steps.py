"""The browser steps of one target: DevTools endpoint → websocket handshake →
browser version → tab count (after ``webdriver_steps``' own, for a ``webdriver`` target).
A person's own Chrome is found but never opened: that would put "Allow remote debugging?"
in front of the person for a check (``PersonalBrowser``).

DevTools discovery is the gateway's own ``discover``, watched through a
``DiscoveryTrace``; the browser is asked through ``CdpConnection``. One thing
differs from ``serve`` on purpose: a target that may launch (``launch = true``,
and the embedded ``local`` default) never launches here — finding no browser is
reported as what ``serve`` would do, in the "launch" step: which binary it would
start on which profile, and whether that profile is locked (the launch script's
probe, which starts and writes nothing). A ``shared = true`` target lists the shares
on its host and says of each whether it answers.
"""

from __future__ import annotations

import time
from typing import NoReturn

import anyio
from websockets.asyncio.client import ClientConnection

import gateway.doctor.fixes as fixes
from gateway.cdp.connection import CdpConnection
from gateway.cdp.endpoint import Endpoint, ProfileDir
from gateway.config import CdpAddress, TargetConfig
from gateway.config.remote import redact_url
from gateway.discovery.launcher import ChromeLauncher
from gateway.discovery.scan import Candidate, classify, parse_scan, scan_script
from gateway.discovery.strategy import (
    Attached,
    DiscoveryTrace,
    PersonalBrowser,
    Scanned,
    Search,
    discover,
)
from gateway.doctor.report import Recorder, StopCheck
from gateway.doctor.webdriver_steps import WEBDRIVER_STEPS, WebDriverSteps
from gateway.errors import GatewayError, HostError, TargetUnavailable
from gateway.fleet.group import LOOK_TIMEOUT_S
from gateway.fleet.shared_socket import SharedSocket
from gateway.hosts.base import Host
from gateway.share.manifest import BadShare, SeenShare, parse_listing, shares_script

__all__ = ["BrowserSteps"]


class _Trace(DiscoveryTrace):
    """Records discovery's progress with timestamps (see ``discover``)."""

    def __init__(self) -> None:
        self.dirs: list[str] = []
        self.profiles: list[ProfileDir] = []
        self.stale: list[tuple[Endpoint, str]] = []   # DevToolsActivePort said, nobody there
        self.refused: tuple[Endpoint, str] | None = None  # other endpoints whose socket failed
        self.unanswered_at: list[tuple[CdpAddress, str]] = []
        self.last: str = ""
        self.trying_since: float | None = None

    def listed(self, dirs: list[str], found: list[ProfileDir]) -> None:
        self.dirs, self.profiles, self.last = self.dirs + dirs, self.profiles + found, "listed"

    def trying(self, endpoint: Endpoint) -> None:
        self.trying_since, self.last = time.monotonic(), "trying"

    def rejected(self, endpoint: Endpoint, reason: str) -> None:
        self.last = "rejected"
        if endpoint.found_by.startswith("DevToolsActivePort"):
            self.stale.append((endpoint, reason))
        else:
            self.refused = (endpoint, reason)

    def unanswered(self, address: CdpAddress, reason: str) -> None:
        self.last = "unanswered"
        self.unanswered_at.append((address, reason))


class BrowserSteps:
    """Runs the four browser steps over a transport into a ``Recorder``."""

    def __init__(self, config: TargetConfig, record: Recorder) -> None:
        self.config = config
        self.record = record
        self.timeout_s = config.reconnect.connect_timeout_s

    @property
    def _discovery_bound_s(self) -> float:
        # Every read, request and websocket open inside discovery is bounded by
        # timeout_s; this outer bound only caps the sum over the candidates tried.
        return self.timeout_s * 4 + 1

    async def run(self, host: Host) -> None:
        if self.config.browsers == "all":
            return await self._scanned(host)
        if self.config.shared:
            return await self._shares(host)
        if self.config.webdriver is not None:
            steps = WebDriverSteps(self.config, self.record, self.timeout_s)
            try:
                return await self._ask_browser(await steps.run(host))
            finally:
                with anyio.CancelScope(shield=True):
                    await steps.end(host)
        self.record.note(WEBDRIVER_STEPS, "not a webdriver target")
        trace = _Trace()
        start = time.monotonic()
        try:
            with anyio.fail_after(self._discovery_bound_s):
                endpoint, ws = await discover(host, self.config, self.timeout_s, trace)
        except PersonalBrowser as found:
            self.record.ok("endpoint", Recorder.since(start), fixes.personal_found(found.endpoint))
            self.record.note(("websocket", "browser", "tabs"), fixes.PERSONAL_NOTE)
            raise StopCheck from None
        except (TargetUnavailable, TimeoutError) as exc:
            await self._discovery_failed(host, trace, start, exc)
        if self.config.launch:
            self.record.note(("launch",), "a browser runs already: nothing to launch")
        notes = fixes.stale_notes(trace.stale)
        self.record.ok("endpoint", Recorder.since(start, trace.trying_since),
                       f"{endpoint.found_by}: port {endpoint.port}"
                       + (f" ({notes})" if notes else ""))
        self.record.ok("websocket", Recorder.since(trace.trying_since or start),
                       redact_url(endpoint.url))
        await self._ask_browser(ws)

    async def _discovery_failed(self, where: Host, trace: _Trace, start: float,
                          exc: BaseException) -> NoReturn:
        record, since = self.record, Recorder.since
        reason = exc.cause if isinstance(exc, TargetUnavailable) else (
            f"discovery took longer than {self._discovery_bound_s:g} s")
        host = where.label
        refused = trace.refused
        if trace.last == "rejected" and refused is not None and trace.trying_since is not None:
            # Attached (by /json/version or the configured ws:// URL), but the socket refused.
            endpoint, why = refused
            record.ok("endpoint", since(start, trace.trying_since),
                      f"{endpoint.found_by}: port {endpoint.port}")
            record.fail("websocket", since(trace.trying_since), why,
                        fixes.websocket_fix(endpoint, host, why))
        if self.config.launch and isinstance(exc, TargetUnavailable):
            notes = fixes.stale_notes(trace.stale)
            record.ok("endpoint", since(start), "no running Chrome found"
                      + (f" ({notes})" if notes else ""))
            await self._probe_launch(where)
            record.note(("websocket", "browser", "tabs"), "no browser running to check")
            raise StopCheck  # up: nothing failed, and no browser to check further
        running = [] if self.config.cdp or self.config.profile else await _running(where)
        record.fail("endpoint", since(start), *fixes.endpoint_failure(
            self.config, host, reason, listed=bool(trace.dirs), stale=trace.stale,
            unanswered=trace.unanswered_at, profiles=trace.profiles, running=running))

    async def _scanned(self, host: Host) -> None:
        """``browsers = "all"``: what one scan sees, each browser and what it would become;
        then the first attachable one is checked like any other target's browser."""
        record, since = self.record, Recorder.since
        start = time.monotonic()
        scan = parse_scan(await self._look(host, scan_script(), start, fixes.SCAN_FIX,
                                           f"scanning {host.label} for browsers"))
        found = [classify(p, scan.uid) for p in scan.processes]
        seen = fixes.scan_summary(found)
        for candidate in (c for c in found if c.problem is None):
            search = Search(host, self.config.name, self.timeout_s)
            try:
                with anyio.fail_after(self._discovery_bound_s):
                    located = await Scanned(candidate).find(search)
            except (GatewayError, TimeoutError):
                continue
            assert located is not None
            endpoint, ws = located
            record.ok("endpoint", since(start), f"{seen}; checked pid {candidate.pid}: port "
                      f"{endpoint.port}")
            record.ok("websocket", 0.0, redact_url(endpoint.url))
            return await self._ask_browser(ws)
        record.fail("endpoint", since(start), seen, fixes.scan_fix(found))

    async def _look(self, host: Host, script: str, start: float, fix: str, doing: str) -> str:
        """A group's one exec on the host (a scan, a listing); its failure is the
        endpoint step's."""
        try:
            with anyio.fail_after(LOOK_TIMEOUT_S + 1):
                return await host.run(script, LOOK_TIMEOUT_S)
        except (HostError, TimeoutError) as exc:
            self.record.fail("endpoint", Recorder.since(start), f"{doing} failed: "
                             f"{exc.reason if isinstance(exc, HostError) else exc}", fix)

    async def _shares(self, host: Host) -> None:
        """``shared = true``: the shares listed on the host and whether each answers; then
        the first that answers is checked like any other target's browser. No share yet
        is not a fault (nobody shares now): the check ends there, up."""
        record, since = self.record, Recorder.since
        start = time.monotonic()
        listing = parse_listing(await self._look(host, shares_script(), start,
                                                 fixes.SHARES_LIST_FIX,
                                                 f"listing the shares on {host.label}"))
        if listing.problem is not None:
            record.fail("endpoint", since(start), listing.problem, fixes.SHARES_DIR_FIX)
        seen: list[tuple[str, str | None]] = []  # (name, why it does not answer)
        found: Attached | None = None
        personal: Endpoint | None = None  # a person's own Chrome: answers, never opened
        shares: list[SeenShare | BadShare] = [
            *(s for s in listing.shares if not s.manifest.expired()), *listing.bad]
        for share in shares:
            search = Search(host, self.config.name, self.timeout_s, ask_person=False)
            name = share.label
            try:
                with anyio.fail_after(self._discovery_bound_s):
                    located = await SharedSocket(share).find(search)
            except PersonalBrowser as answered:
                seen.append((name, None))
                personal = personal or answered.endpoint
                continue
            except (GatewayError, TimeoutError) as exc:
                seen.append((name, exc.cause if isinstance(exc, GatewayError) else str(exc)))
                continue
            seen.append((name, None))
            if found is None:
                found = located
            else:
                assert located is not None
                await located[1].close()
        summary = fixes.shares_summary(listing.directory, seen)
        if not seen:
            record.ok("endpoint", since(start), summary)
            record.note(("websocket", "browser", "tabs"), "no share to check")
            raise StopCheck
        if found is None and personal is not None:
            record.ok("endpoint", since(start), f"{summary}; {fixes.personal_found(personal)}")
            record.note(("websocket", "browser", "tabs"), fixes.PERSONAL_NOTE)
            raise StopCheck
        if found is None:
            record.fail("endpoint", since(start), summary, fixes.SHARE_FIX)
        endpoint, ws = found
        record.ok("endpoint", since(start), f"{summary}; checked {endpoint.found_by}")
        record.ok("websocket", 0.0, endpoint.shown)
        await self._ask_browser(ws)

    async def _probe_launch(self, host: Host) -> None:
        """The "launch" step: what ``serve`` would start, without starting it."""
        record, start = self.record, time.monotonic()
        launcher = ChromeLauncher(host, self.config)
        try:
            result, failure = await launcher.probe(self.timeout_s)
        except HostError as exc:
            record.fail("launch", Recorder.since(start), f"the launch check could not run on "
                        f"{host.label}: {exc.reason}",
                        f"check that commands can run over SSH on {host.label}")
        if failure is not None:
            record.fail("launch", Recorder.since(start), *failure)
        plan = launcher.plan
        how = "headless" if plan.headless else f"on display {plan.display or ':0'}"
        profile = (f"profile {plan.profile} (not locked)" if plan.profile is not None
                   else "a temporary profile")
        record.ok("launch", Recorder.since(start),
                  f"`serve` would start {result.binary} ({how}) on {profile}")

    async def _ask_browser(self, ws: ClientConnection) -> None:
        record, since = self.record, Recorder.since
        cdp = CdpConnection(ws, name=self.config.name)
        async with anyio.create_task_group() as tg:
            tg.start_soon(cdp.run)
            try:
                start = time.monotonic()
                try:
                    version = await cdp.send("Browser.getVersion", timeout_s=self.timeout_s)
                except GatewayError as exc:
                    record.fail("browser", since(start), str(exc), fixes.BROWSER_HUNG_FIX)
                record.ok("browser", since(start), f"{version.get('product', '?')} (protocol "
                          f"{version.get('protocolVersion', '?')})")
                start = time.monotonic()
                try:
                    infos = (await cdp.send("Target.getTargets",
                                            timeout_s=self.timeout_s))["targetInfos"]
                except GatewayError as exc:
                    record.fail("tabs", since(start), str(exc), fixes.TABS_FIX)
                pages = sum(1 for info in infos if info.get("type") == "page")
                record.ok("tabs", since(start), f"{pages} tab{'s' if pages != 1 else ''}")
            finally:
                await cdp.aclose()
                tg.cancel_scope.cancel()


async def _running(host: Host) -> list[Candidate]:
    """The login user's browsers running on ``host`` beside it (one scan): whether the
    person's Chrome runs, and how it was started, tell its state; nothing when the scan
    fails. Another user's, or one in a container, is no Chrome of theirs here."""
    try:
        with anyio.fail_after(LOOK_TIMEOUT_S + 1):
            scan = parse_scan(await host.run(scan_script(), LOOK_TIMEOUT_S))
    except (HostError, TimeoutError):
        return []
    return [classify(p, scan.uid) for p in scan.processes
            if p.same_netns and p.uid in (None, scan.uid)]
