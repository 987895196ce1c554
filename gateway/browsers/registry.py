"""The registry: targets (what tools name) onto browsers, hosts shared, tab ids process-wide.

Everything a tool needs goes through here: "which browser does this call mean"
and "which tab is id 7". Targets can be added and removed while the gateway
serves — a browser found on a host, one launched, one a farm handed out, or a
targets file edited — each with a log line, and ``list_targets`` shows the
change at once. A removed target's tab ids fail with the reason, never reach
another page: ids come from one counter and are never reused.

Hosts are shared: browsers on the same SSH destination with the same link
settings use one connection, closed when its last browser goes. There is no
global lock: each browser runs its own supervisor, and calls on different
targets or tabs proceed concurrently.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import structlog

from gateway.browsers.browser import Browser
from gateway.browsers.discovery import strategies_for
from gateway.browsers.launcher import ChromeLauncher
from gateway.browsers.tab import Tab, TabRegistry
from gateway.config import GatewayConfig, TargetConfig
from gateway.config.urls import check_url
from gateway.errors import (
    InvalidArgument,
    TabNotFound,
    TargetAmbiguous,
    TargetNotFound,
    TargetRemoved,
)
from gateway.hosts.base import Host
from gateway.hosts.local import LocalHost
from gateway.hosts.ssh import SshHost

__all__ = ["Registry", "open_registry"]

log = structlog.get_logger("gateway")

_HostKey = tuple[object, ...]
MAX_REMOVED = 1_000  # names whose removal is still explained; older ones are just unknown


class Registry:
    def __init__(self, config: GatewayConfig) -> None:
        self.config = config
        self.tabs = TabRegistry()
        self.targets: dict[str, Browser] = {}
        self._hosts: dict[_HostKey, tuple[Host, set[str]]] = {}
        self._host_of: dict[str, _HostKey] = {}
        self._scopes: dict[str, anyio.CancelScope] = {}
        self._removed: dict[str, str] = {}
        self._tasks: anyio.abc.TaskGroup | None = None

    # ------------------------------------------------------------- membership

    def add(self, target: TargetConfig) -> Browser:
        """Register a target and start keeping its browser connected (while serving)."""
        if self._tasks is None:
            raise RuntimeError("the registry is not serving (use open_registry)")
        if target.name in self.targets:
            raise InvalidArgument(f"target {target.name!r} exists already")
        key = self._host_key(target)
        host, users = self._hosts.get(key) or (self._new_host(target), set())
        self._hosts[key] = (host, users | {target.name})
        self._host_of[target.name] = key
        launcher = ChromeLauncher(target.name) if target.launch else None
        browser = Browser(target, host, self.tabs, strategies_for(target, launcher), launcher)
        self.targets[target.name] = browser
        self._removed.pop(target.name, None)
        self._tasks.start_soon(self._supervise, browser, name=f"target {target.name}")
        log.info("target added", target=target.name, host=host.label)
        return browser

    async def remove(self, name: str, why: str = "was removed") -> None:
        """Stop a target's browser supervisor and let its tabs go (with ``why``: "tab 7
        belonged to target 'ci-1', which was removed")."""
        browser = self.targets.pop(name, None)
        if browser is None:
            raise TargetNotFound(name, sorted(self.targets))
        if len(self._removed) >= MAX_REMOVED:
            self._removed.pop(next(iter(self._removed)))
        self._removed[name] = why
        scope = self._scopes.pop(name, None)
        if scope is not None:
            scope.cancel()
        with anyio.CancelScope(shield=True):
            await browser.aclose(gone=why)
            await self._release_host(name)
        log.info("target removed", target=name, reason=why)

    async def apply(self, config: GatewayConfig) -> None:
        """Make the registered targets those of ``config``: new names are added, names
        it no longer has are removed, and a target whose settings changed starts over
        (a new browser connection, new tab ids). The others are left alone."""
        wanted = {t.name: t for t in config.targets}
        for name, browser in list(self.targets.items()):
            if name not in wanted:
                await self.remove(name, f"was removed from {config.source}")
            elif wanted[name] != browser.config:
                await self.remove(name, f"was changed in {config.source} and started over")
        for name, target in wanted.items():
            if name not in self.targets:
                self.add(target)
        self.config = config

    async def _supervise(self, browser: Browser) -> None:
        with anyio.CancelScope() as scope:
            self._scopes[browser.name] = scope
            await browser.run()

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
        return SshHost(target.ssh, target.host_key_policy, target.reconnect)

    async def _release_host(self, name: str) -> None:
        key = self._host_of.pop(name)
        host, users = self._hosts[key]
        users.discard(name)
        if not users:
            del self._hosts[key]
            await host.aclose()

    # ------------------------------------------------------------- resolution

    def target(self, name: str | None) -> Browser:
        """The browser a call means: the named one, or the only one there is."""
        if name is None:
            if len(self.targets) == 1:
                return next(iter(self.targets.values()))
            raise TargetAmbiguous(sorted(self.targets))
        found = self.targets.get(name)
        if found is None:
            why = self._removed.get(name)
            if why is not None:
                raise TargetRemoved(name, why, sorted(self.targets))
            raise TargetNotFound(name, sorted(self.targets))
        return found

    async def tab(self, tab_id: int, target: str | None = None) -> tuple[Browser, Tab]:
        """The tab behind an id; ``target``, if given, must be the tab's own.

        An id nobody knows yet may belong to a target still connecting (the
        first call after start-up): wait for those, bounded, before refusing it.
        """
        try:
            tab = self.tabs.get(tab_id)
        except TabNotFound:
            connecting = [t for t in self.targets.values() if t.state == "connecting"]
            if not connecting:
                raise
            async with anyio.create_task_group() as tg:
                for t in connecting:
                    tg.start_soon(t.settled)
            tab = self.tabs.get(tab_id)
        if target is not None and target != tab.target:
            self.target(target)  # an unknown name is the clearer error
            raise InvalidArgument(f"tab {tab_id} belongs to target {tab.target!r}, not "
                                  f"{target!r}; omit target or pass target={tab.target!r}")
        return self.target(tab.target), tab

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
            chosen, tab = await self.tab(tab_id, target)
            return chosen, tab, check_url(url, chosen.config.allow_schemes)
        chosen = self.target(target)
        url = check_url(url, chosen.config.allow_schemes)
        return chosen, await chosen.new_tab("about:blank", context), url

    async def aclose(self) -> None:
        with anyio.CancelScope(shield=True):
            for scope in self._scopes.values():
                scope.cancel()
            for browser in self.targets.values():
                await browser.aclose()
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
