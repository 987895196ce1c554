"""``shared = true``: the shares on a host, each one a target while it lasts.

Every ``scan_interval_s`` one exec of ``scripts/shares.sh`` lists the shares in
``~/.cache/chrome-ssh-gateway/shared`` on the host (over SSH, or on this machine).
A share seen for the first time becomes a target named after it (``laptop``), or
``<group>-<name>`` when that name is taken already (a configured target, another
host's share), with its own supervisor and tabs. A share whose socket does not
answer stays listed ``down`` with the reason — its sharer may be reconnecting, and
when it does the same browser comes back with the same tab ids. A share that ends
(its files removed, or its expiry passed) is removed: its tab ids answer why. A share
started again under the same name is the same target: the same browser keeps its tab
ids, another browser behind it is a restarted one to the supervisor (new tab ids, the
old ones answering that the browser restarted). A manifest that cannot be used is a
target too, ``down`` with what is wrong in it (one whose file name is no target name,
and a share whose name is taken twice over, are listed on the group's row as
``skipped``). A directory that is not the user's own, or that others can write, is
used for nothing: the shares served from it are removed.
"""

from __future__ import annotations

import structlog

from gateway.config import TARGET_NAME_RE, TargetConfig
from gateway.errors import HostError
from gateway.fleet.group import LOOK_TIMEOUT_S, GroupTargets, HostGroup
from gateway.fleet.shared_socket import SharedSocket
from gateway.hosts.base import Host
from gateway.share.manifest import BadShare, SeenShare, parse_listing, shares_script

__all__ = ["ShareWatch"]

log = structlog.get_logger("gateway.shares")


class ShareWatch(HostGroup):
    """The shares on one host, followed for one configured target."""

    def __init__(self, config: TargetConfig, host: Host, targets: GroupTargets) -> None:
        super().__init__(config, host, targets)
        self._members: dict[str, tuple[str, SharedSocket]] = {}  # share name → target, way

    @property
    def members(self) -> list[str]:
        return [target for target, _ in self._members.values()]

    def attachable(self) -> list[str]:
        return [target for target, way in self._members.values()
                if isinstance(way.seen, SeenShare)]

    def nothing_found(self) -> str:
        return (f"no browser is shared on {self.host.label} yet; on the browser's machine "
                f"run chrome-ssh-gateway share <this host>")

    async def look(self) -> None:
        try:
            await self.host.connect()
            output = await self.host.run(shares_script(), LOOK_TIMEOUT_S)
        except HostError as exc:
            self._set("down", f"listing the shares on {self.host.label} failed: "
                      f"{exc.reason}; retrying")
            return
        listing = parse_listing(output)
        if listing.problem is not None:
            reason = f"the shares on {self.host.label} are not used: {listing.problem}"
            await self._end_all(f"is no longer served: {listing.problem}")
            self._set("down", reason)
            return
        live: dict[str, SeenShare | BadShare] = {
            s.manifest.name: s for s in listing.shares if not s.manifest.expired()}
        live |= {b.name: b for b in listing.bad if b.name}
        skipped = [f"{b.file}: {b.problem}" for b in listing.bad if not b.name]
        for share, seen in live.items():
            if not self._follow(share, seen):
                skipped.append(f"share {share}: its name and {self.name}-{share} are taken")
        if listing.truncated:  # the rest were not read: nothing can be said of them
            skipped.append(f"more shares than a listing reads in {listing.directory}; "
                           "remove the stale ones")
        else:
            for share in [s for s in self._members if s not in live]:
                await self._end(share, "ended (its share was stopped or expired)")
        for line in set(skipped) - set(self.skipped):
            log.warning("share skipped", group=self.name, why=line)
        self.skipped = skipped
        self._set("up", None)

    def _follow(self, share: str, seen: SeenShare | BadShare) -> bool:
        """Add or update the share's target; False when it cannot have one."""
        known = self._members.get(share)
        if known is not None:
            target, way = known
            if way.seen != seen:
                way.seen = seen
                self._targets.update_found(target)
            return True
        named = self._target_name(share)
        if named is None:
            return False
        way = SharedSocket(seen)
        self._members[share] = (named, way)
        found = self.config.model_copy(update={"name": named, "shared": False,
                                               **_scope_of(self.config, seen)})
        self._targets.add_found(found, way, self.name)
        log.info("share found", target=named, share=share,
                 sharer=seen.manifest.sharer if isinstance(seen, SeenShare) else None,
                 problem=seen.problem if isinstance(seen, BadShare) else None)
        return True

    async def _end(self, share: str, why: str) -> None:
        target, _ = self._members.pop(share)
        log.info("share ended", target=target, share=share, why=why)
        await self._targets.remove(target, why)

    async def _end_all(self, why: str) -> None:
        for share in list(self._members):
            await self._end(share, why)

    def _target_name(self, share: str) -> str | None:
        """The share's own name, else ``<group>-<name>`` (None: both taken, or too long)."""
        for name in (share, f"{self.name}-{share}"):
            if TARGET_NAME_RE.fullmatch(name) and not self._targets.taken(name):
                return name
        return None



def _scope_of(config: TargetConfig, seen: SeenShare | BadShare) -> dict[str, object]:
    """What a share's browser shows the agent: the sharer's ``--tabs`` / ``--tab`` and
    the gateway's own ``tabs`` together — ``agent`` when either says so (the person
    decides for their browser; the gateway's config can only narrow it)."""
    if not isinstance(seen, SeenShare):
        return {}
    manifest = seen.manifest
    tabs = "agent" if "agent" in (config.tabs, manifest.tabs) else (config.tabs
                                                                     or manifest.tabs)
    return {"tabs": tabs,
            "handed_tabs": tuple(dict.fromkeys((*config.handed_tabs,
                                                *(manifest.handed_tabs or ()))))}
