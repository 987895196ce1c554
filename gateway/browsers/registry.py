"""The gateway: every configured target, the tab ids, and the resolution of names.

Everything a tool needs goes through here: "which target does this call mean"
and "which tab is id 7". There is no global lock: each target runs its own
supervisor, and calls on different targets or tabs proceed concurrently.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import structlog

from gateway.browsers.browser import Browser
from gateway.browsers.launcher import ChromeLauncher
from gateway.browsers.tab import Tab, TabRegistry
from gateway.config import GatewayConfig, TargetConfig
from gateway.config.urls import check_url
from gateway.errors import InvalidArgument, TabNotFound, TargetAmbiguous, TargetNotFound
from gateway.hosts.local import LocalTransport, Transport
from gateway.hosts.ssh import SshLink, SshTransport

__all__ = ["Registry", "open_registry"]

log = structlog.get_logger("gateway")


class Registry:
    def __init__(self, config: GatewayConfig) -> None:
        self.config = config
        self.tabs = TabRegistry()
        self._links: dict[tuple[object, ...], SshLink] = {}
        self.targets: dict[str, Browser] = {
            t.name: Browser(t, self._transport_for(t), self.tabs,
                           ChromeLauncher(t.name) if t.launch else None)
            for t in config.targets
        }

    def _transport_for(self, target: TargetConfig) -> Transport:
        if target.ssh is None:
            return LocalTransport(target.name)
        policy = target.reconnect
        # One SSH connection per host, shared by its targets — unless they ask for
        # different link settings, which one connection could not honour for both.
        key = (str(target.ssh), target.host_key_policy, policy.connect_timeout_s,
               policy.keepalive_interval_s, policy.keepalive_count_max)
        link = self._links.get(key)
        if link is None:
            link = SshLink(target.ssh, target.host_key_policy, target.reconnect)
            self._links[key] = link
        return SshTransport(target.name, link, target.expose_port)

    def target(self, name: str | None) -> Browser:
        """The target a call means: the named one, or the only one there is."""
        if name is None:
            if len(self.targets) == 1:
                return next(iter(self.targets.values()))
            raise TargetAmbiguous(sorted(self.targets))
        found = self.targets.get(name)
        if found is None:
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
        return self.targets[tab.target], tab

    async def tab_for_url(
        self, tab_id: int | None, target: str | None, url: str
    ) -> tuple[Browser, Tab, str]:
        """The tab that is to load ``url`` (navigate, browse): the given one, or a fresh
        blank one — opened only once the URL passed the target's checks."""
        if tab_id is not None:
            chosen, tab = await self.tab(tab_id, target)
            return chosen, tab, check_url(url, chosen.config.allow_schemes)
        chosen = self.target(target)
        url = check_url(url, chosen.config.allow_schemes)
        return chosen, await chosen.new_tab("about:blank"), url

    async def aclose(self) -> None:
        with anyio.CancelScope(shield=True):
            for target in self.targets.values():
                await target.aclose()
            for link in self._links.values():
                await link.aclose()


@asynccontextmanager
async def open_registry(config: GatewayConfig) -> AsyncIterator[Registry]:
    """Start every target's supervisor; on exit stop them and close every link."""
    gateway = Registry(config)
    log.info("gateway starting", targets=sorted(gateway.targets), config=config.source)
    try:
        async with anyio.create_task_group() as tg:
            for target in gateway.targets.values():
                tg.start_soon(target.run, name=f"target {target.name}")
            try:
                yield gateway
            finally:
                tg.cancel_scope.cancel()
    finally:
        await gateway.aclose()
