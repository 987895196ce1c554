"""The registry: targets (what tools name) onto browsers, hosts shared, tab ids process-wide.

Everything a tool needs goes through here: "which browser does this call mean"
and "which tab is id 7". Targets can be added and removed while the gateway
serves — a browser found on a host, one launched, one a farm handed out, or a
targets file edited — each with a log line, and ``list_targets`` shows the
change at once. A removed target's tab ids fail with the reason, never reach
another page: ids come from one counter and are never reused.

A target with ``browsers = "all"`` is a scan group (``host_scan``): each browser
its scan finds is a target of its own (``ci-1``, ``ci-2``, …), and the group's
name means its one attachable browser. Hosts are shared: browsers on the same
SSH destination with the same link settings use one connection, closed when
its last user goes. There is no global lock: each browser runs its own
supervisor, and calls on different targets or tabs proceed concurrently.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import anyio
import structlog

from gateway.browsers.browser import Browser
from gateway.config import GatewayConfig, TargetConfig
from gateway.config.urls import check_url
from gateway.discovery.strategy import Strategy, strategies_for
from gateway.discovery.webdriver import WebDriverSession
from gateway.errors import (
    InvalidArgument,
    TabNotFound,
    TargetAmbiguous,
    TargetNotFound,
    TargetRemoved,
    TargetUnavailable,
)
from gateway.hosts.base import Host
from gateway.hosts.local import LocalHost
from gateway.tabs.tab import Tab, TabIds

if TYPE_CHECKING:  # imported where first used: a gateway that never launches Chrome,
    # scans a host or reaches one over SSH does not import the code (asyncssh) to serve
    from gateway.discovery.launcher import ChromeLauncher
    from gateway.fleet.group import HostGroup

__all__ = ["GONE_LISTED_S", "Registry", "open_registry"]

log = structlog.get_logger("gateway")

_HostKey = tuple[object, ...]
MAX_REMOVED = 1_000  # names whose removal is still explained; older ones are just unknown
GONE_LISTED_S = 60.0  # how long a browser that exited (a share that ended) stays "gone"


class Registry:
    def __init__(self, config: GatewayConfig) -> None:
        self.config = config
        self.tabs = TabIds()
        self.browsers: dict[str, Browser] = {}
        self.groups: dict[str, HostGroup] = {}
        # webdriver targets with sessions = N > 1: the pool's config and its members.
        self.pools: dict[str, tuple[TargetConfig, list[str]]] = {}
        self._turns = itertools.count()
        self._departed: dict[str, tuple[Browser, float]] = {}  # exited, listed as gone
        self._hosts: dict[_HostKey, tuple[Host, set[str]]] = {}
        self._host_of: dict[str, _HostKey] = {}
        self._scopes: dict[str, anyio.CancelScope] = {}
        self._removed: dict[str, str] = {}
        self._tasks: anyio.abc.TaskGroup | None = None

    # ------------------------------------------------------------- membership

    def add(self, target: TargetConfig) -> None:
        """Register a target and start keeping its browser connected — or, with
        ``browsers = "all"``, start scanning its host (while serving)."""
        host = self._use_host(target)
        if target.browsers == "all" or target.shared:
            from gateway.fleet.host_scan import HostScan
            from gateway.fleet.share_watch import ShareWatch

            group: HostGroup = (ShareWatch(target, host, self) if target.shared
                            else HostScan(target, host, self))
            self.groups[target.name] = group
            self._start(group.run, target.name, f"scan {target.name}")
            log.info("target added", target=target.name, host=host.label,
                     **({"shared": True} if target.shared else {"browsers": "all"}))
            return
        if target.webdriver is not None:
            self._add_sessions(target, host)
            return
        launcher = None
        if target.launch:
            from gateway.discovery.launcher import ChromeLauncher

            launcher = ChromeLauncher(host, target)
        self._add_browser(target, host, strategies_for(target, launcher), launcher)

    def _add_sessions(self, target: TargetConfig, host: Host) -> None:
        """A webdriver target: one browser per session — the target itself, or with
        ``sessions = N`` members ``<name>-1`` … ``<name>-N`` that calls naming the
        target take in turn."""
        assert target.webdriver is not None
        if target.sessions == 1:
            self._add_browser(target, host, [WebDriverSession(target.webdriver,
                                                              target.capabilities)], None)
            return
        members = [f"{target.name}-{i}" for i in range(1, target.sessions + 1)]
        self.pools[target.name] = (target, members)
        for member in members:
            config = target.model_copy(update={"name": member, "sessions": 1})
            self._add_browser(config, self._use_host(config),
                              [WebDriverSession(target.webdriver, target.capabilities)],
                              None, group=target.name)

    def add_found(self, target: TargetConfig, strategy: Strategy, group: str) -> None:
        """A browser a scan found (or a share): a target of its own, on the group's host."""
        self._add_browser(target, self._use_host(target), [strategy], None, group=group)

    def taken(self, name: str) -> bool:
        """Whether ``name`` names a target, a group or a pool now."""
        return name in self.browsers or name in self.groups or name in self.pools

    def update_found(self, name: str) -> None:
        """What the scan sees of a found browser changed (its DevToolsActivePort is
        there now, say): try to attach at once."""
        browser = self.browsers.get(name)
        if browser is not None:
            browser.retry_now()

    def _add_browser(self, target: TargetConfig, host: Host, strategies: Sequence[Strategy],
                     launcher: ChromeLauncher | None, *, group: str | None = None) -> None:
        browser = Browser(target, host, self.tabs, strategies, launcher, group=group)
        found = browser.found
        self.browsers[target.name] = browser
        self._start(browser.run, target.name, f"target {target.name}")
        log.info("target added", target=target.name, host=browser.host.label,
                 **({"pid": found.pid} if found else {}))

    async def remove(self, name: str, why: str = "was removed") -> None:
        """Stop a target's supervisor (a scan group's, and every browser it found) and
        let its tabs go with ``why``: "tab 7 belonged to target 'ci-1' (pid 4242),
        which exited"."""
        browser = self.browsers.pop(name, None)
        group = self.groups.pop(name, None)
        _, members = self.pools.pop(name, (None, []))
        if browser is None and group is None and not members:
            raise TargetNotFound(name, self.names())
        if len(self._removed) >= MAX_REMOVED:
            self._removed.pop(next(iter(self._removed)))
        self._removed[name] = why if browser is None or browser.found is None else (
            f"(pid {browser.found.pid}) {why}")
        scope = self._scopes.pop(name, None)
        if scope is not None:
            scope.cancel()
        with anyio.CancelScope(shield=True):
            for member in group.members if group is not None else members:
                await self.remove(member, f"was found by {name!r}, which {why}"
                                  if group is not None else f"belonged to {name!r}, which {why}")
            if browser is not None:
                await browser.aclose(gone=why)
                if browser.origin is not None:  # found by a scan or a share: said gone a while
                    self._departed[name] = (browser, time.monotonic() + GONE_LISTED_S)
            await self._release_host(name)
        log.info("target removed", target=name, reason=why)

    async def apply(self, config: GatewayConfig) -> None:
        """Make the registered targets those of ``config``: new names are added, names
        it no longer has are removed, and a target whose settings changed starts over
        (a new browser connection, new tab ids). The others are left alone."""
        wanted = {t.name: t for t in config.targets}
        current = {n: b.config for n, b in self.browsers.items() if b.group is None}
        current |= {n: g.config for n, g in self.groups.items()}
        current |= {n: config for n, (config, _) in self.pools.items()}
        for name, settings in current.items():
            if name not in wanted:
                await self.remove(name, f"was removed from {config.source}")
            elif wanted[name] != settings:
                await self.remove(name, f"was changed in {config.source} and started over")
        for name, target in wanted.items():
            if name not in self.browsers and name not in self.groups and name not in self.pools:
                self.add(target)
        self.config = config

    def _start(self, run: Callable[[], Awaitable[None]], name: str, what: str) -> None:
        assert self._tasks is not None
        self._tasks.start_soon(self._supervise, run, name, name=what)

    async def _supervise(self, run: Callable[[], Awaitable[None]], name: str) -> None:
        with anyio.CancelScope() as scope:
            self._scopes[name] = scope
            try:
                await run()
            except Exception:  # a bug in one target's supervisor must not end the others
                log.exception("supervisor crashed", target=name)

    def _use_host(self, target: TargetConfig) -> Host:
        """The host ``target`` runs on, shared, counting it as a user."""
        if self._tasks is None:
            raise RuntimeError("the registry is not serving (use open_registry)")
        if self.taken(target.name):
            raise InvalidArgument(f"target {target.name!r} exists already")
        key = self._host_key(target)
        host, users = self._hosts.get(key) or (self._new_host(target), set())
        self._hosts[key] = (host, users | {target.name})
        self._host_of[target.name] = key
        self._removed.pop(target.name, None)
        self._departed.pop(target.name, None)  # a share of that name again: listed anew
        return host

    def _host_key(self, target: TargetConfig) -> _HostKey:
        if target.ssh is None:
            return ("local",)
        policy = target.reconnect
        # One SSH connection per host, shared by its targets — unless they ask for
        # different link settings, which one connection could not honour for both.
        return (str(target.ssh), target.host_key_policy, policy.connect_timeout_s,
                policy.keepalive_interval_s, policy.keepalive_count_max)

    @staticmethod
    def _new_host(target: TargetConfig) -> Host:
        if target.ssh is None:
            return LocalHost()
        from gateway.hosts.ssh import SshHost

        return SshHost(target.ssh, target.host_key_policy, target.reconnect)

    async def _release_host(self, name: str) -> None:
        key = self._host_of.pop(name)
        host, users = self._hosts[key]
        users.discard(name)
        if not users:
            del self._hosts[key]
            await host.aclose()

    # ------------------------------------------------------------- resolution

    def names(self) -> list[str]:
        return sorted([*self.browsers, *self.groups, *self.pools])

    def departed(self) -> list[Browser]:
        """Browsers a scan saw exit, and shares that ended, not long ago (``list_targets``
        shows them as gone)."""
        now = time.monotonic()
        for name in [n for n, (_, until) in self._departed.items() if until <= now]:
            del self._departed[name]
        return [browser for browser, _ in self._departed.values()]

    def browser(self, name: str | None) -> Browser:
        """The browser a call means: the named one, or the only one there is; a scan
        group's name means its one attachable browser."""
        if name is None:
            # A shares group with no share yet does not count (the embedded default
            # follows this machine's shares beside its own browser).
            groups = [g for g in self.groups.values() if g.members or not g.config.shared]
            if not groups and not self.browsers and self.groups:
                groups = list(self.groups.values())[:1]
            lone = groups[0] if len(groups) == 1 else None
            if lone is not None and set(self.browsers) <= set(lone.members):
                return self._one_of(lone)
            if len(self.browsers) == 1 and not groups:
                return next(iter(self.browsers.values()))
            raise TargetAmbiguous(self.names())
        found = self.browsers.get(name)
        if found is not None:
            return found
        if name in self.pools:  # its sessions in turn, so their tabs spread out
            members = self.pools[name][1]
            return self.browsers[members[next(self._turns) % len(members)]]
        group = self.groups.get(name)
        if group is not None:
            return self._one_of(group)
        why = self._removed.get(name)
        if why is not None:
            raise TargetRemoved(name, why, self.names())
        raise TargetNotFound(name, self.names())

    def _one_of(self, group: HostGroup) -> Browser:
        live = group.attachable()
        if len(live) == 1:
            return self.browsers[live[0]]
        if live:
            raise InvalidArgument(f"target {group.name!r} has {len(live)} browsers now: "
                                  f"{', '.join(live)}; pass target=<one of them> "
                                  "(list_targets tells them apart)")
        raise TargetUnavailable(group.name, group.nothing_found())

    async def settled(self) -> None:
        """Wait (bounded) for every target and scan that is still connecting."""
        waits: list[Callable[[], Coroutine[Any, Any, None]]] = [
            *(browser.settled for browser in self.browsers.values()
              if browser.state == "connecting"),
            *(g.settled for g in self.groups.values() if g.state == "connecting")]
        async with anyio.create_task_group() as tg:
            for wait in waits:
                tg.start_soon(wait)

    async def tab(self, tab_id: int, target: str | None = None) -> tuple[Browser, Tab]:
        """The tab behind an id; ``target``, if given, must be the tab's own (or the
        scan group that found its browser).

        An id nobody knows yet may belong to a target still connecting (the
        first call after start-up): wait for those, bounded, before refusing it.
        """
        try:
            tab = self.tabs.get(tab_id)
        except TabNotFound:
            await self.settled()
            tab = self.tabs.get(tab_id)
        browser = self.browser(tab.target)
        if target is not None and target not in (tab.target, browser.group):
            self.browser(target)  # an unknown name is the clearer error
            raise InvalidArgument(f"tab {tab_id} belongs to target {tab.target!r}, not "
                                  f"{target!r}; omit target or pass target={tab.target!r}")
        await browser.pages.adopt(tab)
        return browser, tab

    async def tab_for_url(
        self, tab_id: int | None, target: str | None, url: str, context: str | None = None
    ) -> tuple[Browser, Tab, str]:
        """The tab that is to load ``url`` (navigate, browse): the given one, or a fresh
        blank one (in browser context ``context``) — opened only once the URL passed
        the target's checks."""
        if tab_id is not None:
            if context is not None:
                raise InvalidArgument("context applies to a new tab: omit tab, or omit "
                                      "context to load the URL in that tab")
            browser, tab = await self.tab(tab_id, target)
            return browser, tab, check_url(url, browser.config.allow_schemes)
        browser = self.browser(target)
        url = check_url(url, browser.config.allow_schemes)
        return browser, await browser.new_tab("about:blank", context), url

    async def aclose(self) -> None:
        """Let every browser go at once (each may wait on its far side: a WebDriver
        session's bounded DELETE), then close the hosts they used."""
        with anyio.CancelScope(shield=True):
            for scope in self._scopes.values():
                scope.cancel()
            async with anyio.create_task_group() as tg:
                for browser in self.browsers.values():
                    tg.start_soon(browser.aclose)
            for host, _ in self._hosts.values():
                await host.aclose()


@asynccontextmanager
async def open_registry(config: GatewayConfig) -> AsyncIterator[Registry]:
    """Start every configured target's supervisor; on exit stop them and close every host."""
    registry = Registry(config)
    log.info("gateway starting", targets=[t.name for t in config.targets],
             config=config.source)
    try:
        async with anyio.create_task_group() as tg:
            registry._tasks = tg
            for target in config.targets:
                registry.add(target)
            try:
                yield registry
            finally:
                tg.cancel_scope.cancel()
    finally:
        registry._tasks = None
        await registry.aclose()
