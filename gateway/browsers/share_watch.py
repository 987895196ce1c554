"""``shared = true``: the shares on a host, each one a target while it lasts.

Every ``scan_interval_s`` one exec of ``scripts/shares.sh`` lists the shares in
``~/.cache/chrome-ssh-gateway/shared`` on the host (over SSH, or on this machine).
A share seen for the first time becomes a target named after it (``laptop``), or
``<group>-<name>`` when that name is taken already (a configured target, another
host's share), with its own supervisor and tabs. A share whose socket does not
answer stays listed ``down`` with the reason — its sharer may be reconnecting, and
when it does the same browser comes back with the same tab ids. A share that ends
(its files removed, or its expiry passed) is removed: its tab ids answer why. A
manifest that cannot be used is a target too, ``down`` with what is wrong in it. A
directory that is not the user's own, or is writable by others, is used for nothing.

The same shape as ``host_scan.HostScan`` (the registry treats both as groups).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Literal

import anyio
import structlog

from gateway.browsers.shared_socket import SharedSocket
from gateway.browsers.shares import BadShare, SeenShare, parse_listing, shares_script
from gateway.config import TARGET_NAME_RE, TargetConfig
from gateway.errors import HostError
from gateway.hosts.base import Host

if TYPE_CHECKING:
    from gateway.browsers.host_scan import ScanTargets

__all__ = ["LIST_TIMEOUT_S", "ShareWatch"]

log = structlog.get_logger("gateway.shares")
WatchState = Literal["connecting", "up", "down"]
LIST_TIMEOUT_S = 5.0


class ShareWatch:
    """The shares on one host, followed for one configured target."""

    def __init__(self, config: TargetConfig, host: Host, targets: ScanTargets) -> None:
        self.config = config
        self.name = config.name
        self.host = host
        self._targets = targets
        self.state: WatchState = "connecting"
        self.error: str | None = None
        self.scans = 0
        self.last_scan_ms: float | None = None
        self.directory: str | None = None
        self.unnamed: list[BadShare] = []  # manifests whose file name is no target name
        self._members: dict[str, tuple[str, SharedSocket]] = {}  # share name → target, way
        self._changed = anyio.Event()

    @property
    def members(self) -> list[str]:
        """Target names of the shares seen, oldest first."""
        return [target for target, _ in self._members.values()]

    def attachable(self) -> list[str]:
        return [target for target, way in self._members.values()
                if isinstance(way.seen, SeenShare)]

    def nothing_found(self) -> str:
        """Why no share can be chosen (the registry's error for this group's name)."""
        return (f"no browser is shared on {self.host.label} yet; on the browser's machine "
                f"run chrome-ssh-gateway share <this host>")

    async def settled(self) -> None:
        """Wait (bounded) for the first look to finish."""
        with anyio.move_on_after(self.config.reconnect.connect_timeout_s + LIST_TIMEOUT_S):
            while self.state == "connecting":
                await self._changed.wait()

    async def run(self) -> None:
        """Look, follow, wait — until cancelled (the registry lets it go)."""
        while True:
            await self.look_once()
            await anyio.sleep(self.config.scan_interval_s)

    async def look_once(self) -> None:
        start = time.perf_counter()
        try:
            await self.host.connect()
            output = await self.host.run(shares_script(), LIST_TIMEOUT_S)
        except HostError as exc:
            self._set("down", f"listing the shares on {self.host.label} failed: "
                      f"{exc.reason}; retrying")
            return
        listing = parse_listing(output)
        self.last_scan_ms = (time.perf_counter() - start) * 1000
        self.scans += 1
        self.directory = listing.directory
        if listing.problem is not None:
            self._set("down", f"the shares on {self.host.label} are not used: "
                      f"{listing.problem}")
            return
        live: dict[str, SeenShare | BadShare] = {
            s.manifest.name: s for s in listing.shares if not s.manifest.expired()}
        live |= {b.name: b for b in listing.bad if b.name}
        self.unnamed = [b for b in listing.bad if not b.name]
        for share, seen in live.items():
            self._follow(share, seen)
        for share in [s for s in self._members if s not in live]:
            target, _ = self._members.pop(share)
            log.info("share ended", target=target, share=share)
            await self._targets.remove(target, "ended (its share was stopped or expired)")
        self._set("up", None)

    def _follow(self, share: str, seen: SeenShare | BadShare) -> None:
        known = self._members.get(share)
        if known is not None:
            target, way = known
            if way.seen != seen:
                way.seen = seen
                self._targets.update_found(target)
            return
        named = self._target_name(share)
        if named is None:
            log.warning("share skipped: its name is taken", share=share, group=self.name)
            return
        way = SharedSocket(seen)
        self._members[share] = (named, way)
        found = self.config.model_copy(update={"name": named, "shared": False})
        self._targets.add_found(found, way, self.name)
        log.info("share found", target=named, share=share,
                 sharer=seen.manifest.sharer if isinstance(seen, SeenShare) else None,
                 problem=seen.problem if isinstance(seen, BadShare) else None)

    def _target_name(self, share: str) -> str | None:
        """The share's own name, else ``<group>-<name>`` (None: both taken, or too long)."""
        for name in (share, f"{self.name}-{share}"):
            if TARGET_NAME_RE.fullmatch(name) and not self._targets.taken(name):
                return name
        return None

    def _set(self, state: WatchState, error: str | None) -> None:
        if state != self.state or error != self.error:
            log.info("shares state", target=self.name, state=state, error=error)
        self.state, self.error = state, error
        self._changed.set()
        self._changed = anyio.Event()
