"""``share``'s loop: the browsers here kept shared on DEST until stopped or expired.

Every interval it asks which browsers to share (``local``) and makes DEST match
(``remote``): a new browser bound, one that exited unbound, one that moved to
another port bound again. The SSH connection is kept alive by keepalives; when it
drops, the loop reconnects with backoff and binds everything again under the same
names (its stale sockets are recognised as its own), so a gateway on DEST gets the
same browser back. One share DEST will not take is said once and left out; the others
go on. Ctrl-C, SIGTERM or ``--for`` running out end it: a browser it launched with a
temporary profile is stopped first, then the sockets and manifests are removed from
DEST in one bounded step (a dead link cannot hold the exit), with further signals
ignored meanwhile. A problem that retrying cannot fix at the start (no browser, a
host key, a name live on DEST) ends it at once with exit status 1.
"""

from __future__ import annotations

import secrets
import signal
import socket
import sys
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import anyio
import structlog
from pydantic import ValidationError

from gateway.config import ReconnectPolicy
from gateway.errors import GatewayError, HostError, ShareRefused
from gateway.hosts.ssh import SshHost
from gateway.share.local import Browsers, LocalBrowser, browsers_for
from gateway.share.manifest import ShareManifest, clean_text
from gateway.share.options import ShareOptions
from gateway.share.remote import RemoteShares

__all__ = ["run_share"]

log = structlog.get_logger("gateway.share")
STOP_BROWSER_S = 15.0  # a launched browser asked to stop: the launcher's own bound


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
        self.sharer = clean_text(socket.gethostname()) or "unknown"
        self._bound: dict[str, LocalBrowser] = {}
        self._refused: dict[str, str] = {}  # name → why DEST would not take it (said once)
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
        self._bound, self._refused = {}, {}  # a new connection: each name is tried again
        if reconnecting:
            _say(f"reconnected to {self.host.label}")

    def _drop(self) -> None:
        conn = self.host.connected
        self.remote.lost()
        self._bound = {}
        if conn is not None:
            conn.abort()

    async def _match(self, wanted: dict[str, LocalBrowser]) -> None:
        """Make DEST share ``wanted``: ``HostError`` when the link failed."""
        for name in [n for n in self._bound if n not in wanted]:
            await self.remote.unbind(name)
            del self._bound[name]
            if self._announced:
                _say(f"stopped sharing {name} (its browser exited)")
        self._refused = {n: why for n, why in self._refused.items() if n in wanted}
        for name, browser in wanted.items():
            if self._bound.get(name) == browser or name in self._refused:
                continue
            conn = self.host.connected
            try:
                await self.remote.bind(name, browser.port, self._manifest(name, browser))
            except (ShareRefused, HostError) as exc:
                link_failed = isinstance(exc, HostError) and self.host.connected is not conn
                if not self._announced or link_failed:
                    raise
                self._refused[name] = str(exc)  # this one only; the others go on
                _say(f"not sharing {name}: {exc}")
                continue
            new = name not in self._bound
            self._bound[name] = browser
            if self._announced and new:
                _say(f"now sharing {browser.described()} as {name}")
        if not self._announced:
            self._announced = True
            _say(self._status())

    def _manifest(self, name: str, browser: LocalBrowser) -> ShareManifest:
        try:
            text = {key: clean_text(value) if value is not None else None for key, value in (
                ("browser", browser.browser), ("program", browser.program),
                ("started", browser.started), ("started_by", browser.started_by))}
            return ShareManifest(
                name=name, share_id=self.remote.share_id, pid=browser.pid, **text,
                sharer=self.sharer,
                shared_at=datetime.now(UTC).isoformat(timespec="seconds"),
                expires=self.expires.isoformat(timespec="seconds") if self.expires else None,
                tabs=self.options.tabs, handed_tabs=self.options.handed_tabs or None,
                path=browser.path, personal=browser.personal or None)
        except ValidationError as exc:
            raise ShareRefused(f"cannot describe the browser shared as {name} "
                               f"({exc.errors()[0]['msg']})") from None

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
        """Stop a browser launched here (first: nothing on DEST may hold it up), remove
        the shares from DEST in one bounded step, close the link."""
        with anyio.move_on_after(STOP_BROWSER_S):
            await self.browsers.aclose()
        if self.remote.names:
            removed = await self.remote.remove()
            _say(f"stopped; the shares were removed from {self.host.label}" if removed else
                 f"stopped; the link to {self.host.label} is gone, so its sockets stay until "
                 "a share of the same name replaces them (gateways see nothing answers)")
        self._bound = {}
        await self.host.aclose()


async def _stop_on_signal(signals: AsyncIterator[signal.Signals],
                          scope: anyio.CancelScope) -> None:
    async for received in signals:
        log.info("stopping", signal=signal.Signals(received).name)
        scope.cancel()
        return


async def run_share(options: ShareOptions) -> int:
    """Share until stopped; the exit status (0 stopped or expired, 1 could not share)."""
    sharer = Sharer(options)
    status = 0
    # Held until the clean-up is done: a second Ctrl-C (or CI's SIGTERM after its SIGINT)
    # waits in the receiver instead of killing the process halfway through.
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(_stop_on_signal, signals, tg.cancel_scope)
                with anyio.move_on_after(options.for_s or float("inf")) as ran:
                    try:
                        await sharer.run()
                    except GatewayError as exc:
                        print(f"chrome-ssh-gateway share: {exc}", file=sys.stderr)
                        status = 1
                if ran.cancelled_caught:
                    _say(f"--for ran out: stopping the share on {sharer.host.label}")
                tg.cancel_scope.cancel()
        finally:
            with anyio.CancelScope(shield=True):
                await sharer.aclose()
    return status
