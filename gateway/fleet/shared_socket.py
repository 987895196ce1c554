"""A share's browser (``share_watch``): reached through the Unix socket its own machine
forwarded to the host, found by the ``/json/version`` Chrome answers through it — or, for
a person's own Chrome (which serves no /json), at the path its manifest says."""

from __future__ import annotations

from gateway.cdp.endpoint import Endpoint
from gateway.config import CdpAddress
from gateway.discovery.strategy import Attached, Origin, Search, Strategy, Unanswered, ask_version
from gateway.errors import DiscoveryError
from gateway.share.manifest import BadShare, SeenShare

__all__ = ["SharedSocket"]


class SharedSocket(Strategy):
    """A share (``shares``): the browser behind a Unix socket on the host, which its own
    machine forwarded there. ``share_watch`` updates ``seen`` as the listing changes; a
    manifest that cannot be used (``BadShare``) is the reason, never a connection."""

    def __init__(self, seen: SeenShare | BadShare) -> None:
        self.seen = seen

    def describe(self) -> Origin:
        """The shared browser's process and its sharer, as the manifest says (nothing
        from a manifest that cannot be used)."""
        if isinstance(self.seen, BadShare):
            return Origin()
        m = self.seen.manifest
        return Origin(pid=m.pid, started=m.started, program=m.program,
                      started_by=m.started_by, sharer=m.sharer, expires=m.expires)

    async def find(self, search: Search) -> Attached | None:
        seen = self.seen
        if isinstance(seen, BadShare):
            raise DiscoveryError(search.name, f"the share {seen.file} on {search.host.label} "
                                 f"cannot be used: {seen.problem}")
        manifest = seen.manifest
        stopped = (f"its sharer ({manifest.sharer}) lost its link or was stopped without "
                   "cleaning up; the target comes back when the share does")
        if not seen.has_socket:
            raise DiscoveryError(search.name, f"the share's socket {seen.socket} is missing "
                                 f"on {search.host.label}: {stopped}")
        if manifest.path is not None:  # a person's own Chrome: asks them, once (consent)
            endpoint = Endpoint(_SHARE_HOST.host, _SHARE_HOST.port, manifest.path,
                                f"share {manifest.name} from {manifest.sharer}",
                                socket=seen.socket, personal=bool(manifest.personal),
                                machine=manifest.sharer)
            return endpoint, await search.connect(endpoint)
        try:
            path = await ask_version(search, _SHARE_HOST, seen.socket)
        except Unanswered as exc:
            search.trace.unanswered(_SHARE_HOST, str(exc))
            # Refused: the sharer's sshd session is gone. Taken and then closed: sshd still
            # holds the socket but cannot reach the sharer (its link just went).
            where = f"the share's socket {seen.socket} on {search.host.label}"
            reason = (f"nothing answers on {where}: {stopped}" if exc.nothing_listens else
                      f"{where} took the connection but nothing answered through it "
                      f"({exc}): {stopped}")
            raise DiscoveryError(search.name, reason) from None
        endpoint = Endpoint(_SHARE_HOST.host, _SHARE_HOST.port, path,
                            f"share {manifest.name} from {manifest.sharer}", socket=seen.socket)
        return endpoint, await search.connect(endpoint)


# Chrome checks that a DevTools request's Host is an IP or localhost; through a share's
# socket no TCP address applies, so requests name this one.
_SHARE_HOST = CdpAddress(host="localhost", port=80)
