"""Files staged on a browser's host for its tabs' uploads, and their removal.

A file the agent uploads lives on the gateway's machine; a browser on another host
can only read files of its own, so ``Host.stage_files`` copies them into a private
temporary directory there. That directory belongs to the tab: it is removed when
the tab goes — closed by ``close_tab`` (before the call returns), closed by the
page or the user, vanished over a browser restart, or its target removed — and
when the gateway exits. Tabs die in synchronous code (Chrome's target events), so
``release`` only marks a directory stale and wakes ``sweeper``; ``sweep`` is the
one place that removes, bounded and never raising. A directory whose removal
failed (the host was unreachable) is tried again at the next sweep, and when the
browser is served again after a reconnect; so is one a broken-off copy left.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence

import anyio
import structlog

from gateway.errors import HostError, StagingFailed, TabNotFound
from gateway.hosts.base import Host
from gateway.output.files import Readable
from gateway.tabs.tab import Tab

__all__ = ["Uploads"]

log = structlog.get_logger("gateway.uploads")
SWEEP_TIMEOUT_S = 5.0  # removal is clean-up: it must not hold up an exit for long


class Uploads:
    """One browser's staged upload directories, by tab id."""

    def __init__(self, host: Host) -> None:
        self._host = host
        self._by_tab: dict[int, list[str]] = {}
        self._stale: list[str] = []
        self._more = anyio.Event()
        self._sweeping = anyio.Lock()  # one removal at a time: a sweep returns once
                                       # what was released before it is gone

    async def stage(self, tab: Tab, files: Sequence[Readable], timeout_s: float
                    ) -> tuple[str, ...]:
        """The paths the browser reads ``files`` at, copied for ``tab`` if need be.

        ``close_tab`` does not wait for the tab's lock: a tab released before its files
        are copied gets none (nothing would remove them: it is released only once), one
        released while they were being copied has its new directory removed at once."""
        if tab.retired:
            raise TabNotFound(tab.id, "was closed during the upload; its files were not "
                              "copied")
        directories = self._by_tab.setdefault(tab.id, [])  # released → no longer this list
        try:
            staged = await self._host.stage_files(files, timeout_s)
        except StagingFailed as exc:  # the copy broke off and its directory stayed
            self._stale.append(exc.directory)
            self._more.set()
            raise
        if staged.directory is not None:
            directories.append(staged.directory)
            if self._by_tab.get(tab.id) is not directories:
                self._stale.append(staged.directory)
                self._more.set()
        return staged.paths

    def release(self, tab: Tab) -> None:
        """``tab`` is gone: its directories are to be removed."""
        directories = self._by_tab.pop(tab.id, None)
        if directories:
            self._stale.extend(directories)
            self._more.set()

    async def sweep(self) -> None:
        """Remove every released directory; shielded and bounded, never raising. After
        one sweep those released before it are gone (or logged as not removable), even
        when the sweeper had already started on them: ``close_tab`` returns then."""
        with anyio.CancelScope(shield=True):  # the lock too: a holder ends within its bound
            async with self._sweeping:
                directories, self._stale = self._stale, []
                if not directories:
                    return
                command = "rm -rf -- " + " ".join(shlex.quote(d) for d in directories)
                with anyio.move_on_after(SWEEP_TIMEOUT_S):
                    try:
                        await self._host.run(command, SWEEP_TIMEOUT_S)
                        return
                    except HostError as exc:
                        log.warning("could not remove uploaded files", host=self._host.label,
                                    error=exc.reason, directories=directories)
                self._stale.extend(directories)

    async def sweeper(self) -> None:
        """Sweep whenever a tab with staged files went, and at once what an earlier
        connection could not remove; runs while the browser is served."""
        if self._stale:
            await self.sweep()
        while True:
            await self._more.wait()
            self._more = anyio.Event()
            await self.sweep()

    async def aclose(self) -> None:
        """The gateway is letting the browser go: remove every tab's directories."""
        for directories in self._by_tab.values():
            self._stale.extend(directories)
        self._by_tab.clear()
        await self.sweep()
