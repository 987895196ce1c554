"""``share``'s loop: the browsers here kept shared on DEST until stopped or expired.

Every interval it asks which browsers to share (``local``) and makes DEST match
(``remote``): a new browser bound, one that exited unbound, one that moved to
another port bound again. The SSH connection is kept alive by keepalives; when it
drops, the loop reconnects with backoff and binds everything again under the same
names (its stale sockets are recognised as its own), so a gateway on DEST gets the
same browser back. Ctrl-C, SIGTERM or ``--for`` running out end it: the sockets and
manifests are removed on DEST, and a browser it launched with a temporary profile is
stopped. A problem that retrying cannot fix at the start (no browser, a host key, a
name live on DEST) ends it at once with exit status 1.
"""

from __future__ import annotations

import secrets
import signal
import socket
import sys
from datetime import UTC, datetime, timedelta

import anyio
import structlog

from gateway.browsers.shares import ShareManifest
from gateway.config import ReconnectPolicy
from gateway.errors import GatewayError, HostError
from gateway.hosts.ssh import SshHost
from gateway.share.local import Browsers, LocalBrowser, browsers_for
from gateway.share.options import ShareOptions
from gateway.share.remote import RemoteShares, ShareRefused

__all__ = ["run_share"]

log = structlog.get_logger("gateway.share")
CLEANUP_S = 10.0


def _say(text: str) -> None:
    """A status line for the person who started ``share`` (stdout: it is theirs)."""
    print(f"chrome-ssh-gateway share: {text}", flush=True)


class Sharer:
    def __init__(self, options: ShareOptions) -> None:
        self.options = options
        self.policy = ReconnectPolicy()
        self.host = SshHost(options.dest, options.host_key_policy, self.policy)
        self.remote = RemoteShares(self.host, secrets.token_hex(8))
        self.browsers: Browsers = browsers_for(options)
        self.expires = (datetime.now(UTC) + timedelta(seconds=options.for_s)
                        if options.for_s else None)
        self.sharer = socket.gethostname()[:200] or "unknown"
        self._bound: dict[str, LocalBrowser] = {}
        self._announced = False

    async def run(self) -> None:
        """Share until cancelled; ``GatewayError`` for what ends it at the start."""
        delay = self.policy.initial_delay_s
        wanted: dict[str, LocalBrowser] = {}
        while True:
            try:
                wanted = await self.browsers.current()
            except GatewayError as exc:
                if not self._announced:
                    raise
                log.warning("looking for the browser failed; trying again", reason=str(exc))
            try:
                if self.host.connected is None:
                    await self._connect()
                await self._match(wanted)
            except ShareRefused:
                raise
            except HostError as exc:
                if not self._announced:
                    raise
                log.warning("sharing failed; trying again", dest=self.host.label,
                            reason=exc.reason, retry_in_s=delay)
                self._drop()
                await anyio.sleep(delay)
                delay = min(delay * 2, self.policy.max_delay_s)
                continue
            delay = self.policy.initial_delay_s
            await self._wait()

    async def _connect(self) -> None:
        reconnecting = self._announced
        await self.remote.open()
        self._bound = {}
        if reconnecting:
            _say(f"reconnected to {self.host.label}")

    def _drop(self) -> None:
        conn = self.host.connected
        self.remote.lost()
        self._bound = {}
        if conn is not None:
            conn.abort()

    async def _match(self, wanted: dict[str, LocalBrowser]) -> None:
        """Make DEST share exactly ``wanted``."""
        for name in [n for n in self._bound if n not in wanted]:
            await self.remote.unbind(name)
            del self._bound[name]
            if self._announced:
                _say(f"stopped sharing {name} (its browser exited)")
        for name, browser in wanted.items():
            if self._bound.get(name) == browser:
                continue
            if name in self._bound:
                await self.remote.unbind(name)
            try:
                await self.remote.bind(name, browser.port, self._manifest(name, browser))
            except ShareRefused as exc:
                if not self._announced:
                    raise
                _say(str(exc))
                continue
            new = name not in self._bound
            self._bound[name] = browser
            if self._announced and new:
                _say(f"now sharing {browser.described()} as {name}")
        if not self._announced:
            self._announced = True
            _say(self._status())

    def _manifest(self, name: str, browser: LocalBrowser) -> ShareManifest:
        return ShareManifest(
            name=name, share_id=self.remote.share_id, browser=browser.browser, pid=browser.pid,
            program=browser.program, started=browser.started, started_by=browser.started_by,
            sharer=self.sharer, shared_at=datetime.now(UTC).isoformat(timespec="seconds"),
            expires=self.expires.isoformat(timespec="seconds") if self.expires else None)

    def _status(self) -> str:
        user, dest = self.remote.user or "that user", self.options.dest.host
        shared = "; ".join(f"{b.described()} as {n} ({self.remote.shown_path(n)})"
                           for n, b in self._bound.items()) or "no browser yet"
        follow = (", following the browsers here as they start and exit"
                  if self.options.browsers == "all" else "")
        until = (f"until {self.expires:%Y-%m-%d %H:%M:%S} UTC" if self.expires
                 else "until stopped (Ctrl-C)")
        these = "these browsers" if len(self._bound) > 1 or follow else "this browser"
        return (f"sharing {shared} on {self.host.label}{follow}, {until}. Whoever logs in "
                f"as {user} on {dest} controls {these}.")

    async def _wait(self) -> None:
        """One interval, cut short when the connection drops."""
        conn = self.host.connected
        if conn is None:
            return
        with anyio.move_on_after(self.options.interval_s):
            await conn.wait_closed()
            log.warning("the link to DEST dropped; reconnecting", dest=self.host.label)
            _say(f"lost the link to {self.host.label}; reconnecting")
            self.remote.lost()
            self._bound = {}

    async def aclose(self) -> None:
        """Remove the shares from DEST, stop a browser launched here, close the link."""
        for name in list(self._bound):
            await self.remote.unbind(name)
        self._bound = {}
        await self.browsers.aclose()
        await self.host.aclose()


async def _stop_on_signal(scope: anyio.CancelScope) -> None:
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async for received in signals:
            log.info("stopping", signal=signal.Signals(received).name)
            scope.cancel()
            return


async def run_share(options: ShareOptions) -> int:
    """Share until stopped; the exit status (0 stopped or expired, 1 could not share)."""
    sharer = Sharer(options)
    status = 0
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(_stop_on_signal, tg.cancel_scope)
            with anyio.move_on_after(options.for_s if options.for_s else float("inf")) as ran:
                try:
                    await sharer.run()
                except GatewayError as exc:
                    print(f"chrome-ssh-gateway share: {exc}", file=sys.stderr)
                    status = 1
            if ran.cancelled_caught:
                _say(f"--for ran out: stopped sharing on {sharer.host.label}")
            tg.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True), anyio.move_on_after(CLEANUP_S):
            shared = bool(sharer.remote.names)
            await sharer.aclose()
            if shared:
                _say(f"stopped; the shares were removed from {sharer.host.label}")
    return status
