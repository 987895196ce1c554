"""Which browsers of this machine a share forwards, looked at again every interval.

``OneBrowser``: the one ``--cdp`` names, else the one discovery finds here (the
gateway's own strategies on ``LocalHost``: DevToolsActivePort in the usual profiles,
then 127.0.0.1:9222) — or with ``--launch`` only the browser of its own profile
(``~/.cache/chrome-ssh-gateway/share-<name>``, or a temporary one), started by the
gateway's launcher when none runs there: never a browser that holds the user's own
logins. A browser that stops answering is looked for again (a restarted Chrome is on
a new port); while none is found, nothing is shared. A person's own Chrome (its
remote-debugging setting on) is shared without ever being opened here — opening it would
ask the person, and the gateway on DEST asks them once for its own connection: its
DevToolsActivePort says the websocket's path, which the manifest carries (it serves no
/json), and is read again every interval (the same port after a restart, a new path).

``AllBrowsers``: every debuggable browser the host scan sees here, each a share
of its own (``<name>-1``, ``<name>-2``, … never reused), followed as they start and exit.

Both answer ``current()``: the browsers to share now, by share name.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Protocol

import structlog
from pydantic_core import from_json

from gateway.cdp.endpoint import REMOTE_DEBUGGING_SETTING
from gateway.config import TargetConfig
from gateway.discovery.launcher import ChromeLauncher
from gateway.discovery.scan import SCAN_TIMEOUT_S, Candidate, classify, parse_scan, scan_script
from gateway.discovery.strategy import (
    Launch,
    PersonalBrowser,
    Search,
    Strategy,
    find_browser,
    strategies_for,
)
from gateway.errors import GatewayError, HostError
from gateway.hosts.local import LocalHost
from gateway.share.options import ShareOptions

__all__ = ["AllBrowsers", "Browsers", "LocalBrowser", "OneBrowser", "browsers_for"]

log = structlog.get_logger("gateway.share")
FIND_TIMEOUT_S = 10.0
PROBE_TIMEOUT_S = 2.0


@dataclass(frozen=True)
class LocalBrowser:
    """A browser here, as a share describes it."""

    port: int                   # its DevTools port on 127.0.0.1
    browser: str | None         # "Chrome/156.0.8078.114", from /json/version
    pid: int | None = None
    program: str | None = None
    started: str | None = None
    started_by: str | None = None
    path: str | None = None     # a person's own Chrome: its websocket (no /json to ask)

    @property
    def personal(self) -> bool:
        return self.path is not None

    def described(self) -> str:
        own = "the person's own Chrome (its remote-debugging setting)" if self.personal else ""
        parts = [self.browser or own or "a browser", f"port {self.port}"]
        if self.pid is not None:
            parts.insert(1, f"pid {self.pid}")
        return ", ".join(parts)


class Browsers(Protocol):
    async def current(self) -> dict[str, LocalBrowser]:
        """The browsers to share now, by share name; ``GatewayError`` when none can be."""

    async def aclose(self) -> None:
        """Stop what this share started (a browser with a temporary profile)."""


async def _version(host: LocalHost, port: int) -> str | None:
    """The browser's ``Browser`` field of ``/json/version``, or None when it does not answer."""
    try:
        response = await host.http_request("127.0.0.1", port, "/json/version", PROBE_TIMEOUT_S)
        payload = from_json(response.body) if response.status == 200 else None
    except (HostError, ValueError):
        return None
    product = payload.get("Browser") if isinstance(payload, dict) else None
    return product[:200] if isinstance(product, str) else ""


def _described(candidate: Candidate | None, port: int, version: str | None) -> LocalBrowser:
    if candidate is None:
        return LocalBrowser(port, version)
    return LocalBrowser(port, version, candidate.pid, candidate.program, candidate.started,
                        candidate.started_by)


class OneBrowser:
    def __init__(self, options: ShareOptions) -> None:
        self._name = options.name
        self._host = LocalHost()
        if options.launch == "no":
            config = TargetConfig(name=options.name, cdp=options.cdp)
        elif options.launch == "temporary":
            config = TargetConfig(name=options.name, cdp=options.cdp, launch=True,
                                  launch_temporary=True, keep_running=False)
        else:
            config = TargetConfig(name=options.name, cdp=options.cdp, launch=True,
                                  launch_profile=f"~/.cache/chrome-ssh-gateway/share-"
                                                 f"{options.name}")
        self._launcher = ChromeLauncher(self._host, config) if config.launch else None
        self._strategies: list[Strategy] = (
            [Launch(self._launcher)] if self._launcher is not None and options.cdp is None
            else strategies_for(config, self._launcher))
        self._current: LocalBrowser | None = None

    async def current(self) -> dict[str, LocalBrowser]:
        known = self._current
        if (known is not None and not known.personal
                and await _version(self._host, known.port) is not None):
            return {self._name: known}
        search = Search(self._host, self._name, FIND_TIMEOUT_S, ask_person=False)
        try:
            endpoint, ws = await find_browser(self._strategies, search)
        except PersonalBrowser as answered:
            found = LocalBrowser(answered.endpoint.port, None,
                                 path=answered.endpoint.browser_path)
            if found != known:
                log.info("sharing the person's own Chrome", browser=found.described())
            self._current = found
            return {self._name: found}
        except GatewayError as exc:
            if known is None:
                raise GatewayError(self._nothing(exc, search)) from None
            log.warning("the shared browser is gone", browser=known.described())
            self._current = None
            return {}
        await ws.close()
        found = _described(await _scanned(self._host, endpoint.port), endpoint.port,
                           await _version(self._host, endpoint.port))
        if known is not None:
            log.info("the shared browser moved", old=known.described(), new=found.described())
        self._current = found
        return {self._name: found}

    def _nothing(self, exc: GatewayError, search: Search) -> str:
        """Why nothing can be shared, with the ways to give ``share`` a browser (the
        discovery's own wording names a target's settings)."""
        if self._launcher is not None:
            return f"no browser to share: {exc.cause}"
        if not search.tried:  # --cdp: the one address given
            return (f"no browser to share at --cdp: {exc.cause}; start Chrome with "
                    "--remote-debugging-port=<that port> here, or leave --cdp out to find "
                    "one")
        return (f"no browser to share on this machine ({'; '.join(search.tried)}): to share "
                f"your own Chrome (144+), open {REMOTE_DEBUGGING_SETTING} in it and turn on "
                "\"Allow remote debugging for this browser instance\"; else start Chrome "
                "with --remote-debugging-port=0 and a --user-data-dir, name it with --cdp "
                "127.0.0.1:PORT, or add --launch to start one of its own")

    async def aclose(self) -> None:
        if self._launcher is not None:
            await self._launcher.aclose()


class AllBrowsers:
    def __init__(self, options: ShareOptions) -> None:
        self._name = options.name
        self._host = LocalHost()
        self._numbers = itertools.count(1)
        self._shared: dict[tuple[int, str | None], tuple[str, LocalBrowser]] = {}
        self._skipped: set[tuple[int, str | None]] = set()  # said once why each is not

    async def current(self) -> dict[str, LocalBrowser]:
        try:
            output = await self._host.run(scan_script(), SCAN_TIMEOUT_S)
        except HostError as exc:
            raise GatewayError(f"scanning this machine for browsers failed: {exc.reason}") \
                from None
        scan = parse_scan(output)
        seen: dict[tuple[int, str | None], Candidate] = {}
        running = {(p.pid, p.started) for p in scan.processes}
        self._skipped &= running
        for process in scan.processes:
            candidate = classify(process, scan.uid)
            key = (candidate.pid, candidate.started)
            if candidate.problem is None and candidate.active_port:
                seen[key] = candidate
            elif candidate.problem is not None and key not in self._skipped:
                self._skipped.add(key)
                log.warning("not shared", pid=candidate.pid, program=candidate.program,
                            reason=candidate.problem)
        self._shared = {k: v for k, v in self._shared.items() if k in seen}
        for key, candidate in seen.items():
            if key not in self._shared:
                assert candidate.active_port is not None
                port = candidate.active_port
                self._shared[key] = (f"{self._name}-{next(self._numbers)}",
                                     _described(candidate, port,
                                                await _version(self._host, port)))
        return dict(self._shared.values())

    async def aclose(self) -> None:
        return None


async def _scanned(host: LocalHost, port: int) -> Candidate | None:
    """The process behind the browser on ``port`` (for its pid and who started it), if
    the host scan sees it."""
    try:
        scan = parse_scan(await host.run(scan_script(), SCAN_TIMEOUT_S))
    except HostError:
        return None
    for process in scan.processes:
        candidate = classify(process, scan.uid)
        if candidate.active_port == port:
            return candidate
    return None


def browsers_for(options: ShareOptions) -> Browsers:
    return AllBrowsers(options) if options.browsers == "all" else OneBrowser(options)
