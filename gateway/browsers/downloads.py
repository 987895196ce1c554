"""A browser's downloads: saved on its own host, tracked, and copied back on request.

On every connection the gateway tells Chrome (``Browser.setDownloadBehavior``) to
save the downloads of each isolated context the gateway makes (``contexts.py``) — and
of the default browser context too when the gateway launched that browser itself
(``launch = true``) — into the browser's directory on its host (``download_dir``) with
``allowAndName``: each file is named by its download's guid (checked to be a plain
name), so no two clash and no site-chosen name (``../../.bashrc``) ever becomes a path.
The name a site suggests is only shown, cleaned. The default context of a browser the
gateway did not launch (a person's own Chrome, a test framework's) keeps saving where
it always did — redirected, a person's downloads would land in a temporary directory
deleted at exit — and is sent nothing: even behavior ``default`` would undo a test
framework's own ``allow`` and its directory (measured). Its downloads are followed by
the page sessions' ``Page.downloadWillBegin``/``Page.downloadProgress``, which Chrome
sends with no change to where it saves (measured), listed, and a fetch says to use an
isolated ``context`` or a launched browser. A download both kinds of event tell of is
recorded once. Contexts the gateway did not make are left alone.

What stays on the host is bounded: a download dropped from the record has its file
removed, and once the files there reach ``MAX_HOST_BYTES`` a new download is cancelled
(``Browser.cancelDownload``) and listed as failed, saying why.

Chrome's events (``Browser.downloadWillBegin``, ``Browser.downloadProgress``) make
the record: name, source URL, bytes, state — the newest ``MAX_DOWNLOADS`` per
browser, ids counting on for the gateway's life. A download still under way when
the connection broke is marked failed: its end was not seen.

The files can be copied back only where the browser's file system is its host's: a
browser on the host's own loopback. A share's browser runs on another machine (the
host only holds its socket), a hosted pool's and a browser at another address (a
WebDriver grid's node, ``cdp = "10.0.0.5:9222"``) on machines the gateway has no
file access to: their downloads are listed, saved where that browser saves them,
and a fetch says why it cannot copy them.
"""

from __future__ import annotations

import itertools
import re
import unicodedata
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, BinaryIO, Literal

import anyio
import anyio.abc
import structlog

from gateway import progress
from gateway.browsers.download_dir import FILES, parse_prepared, prepare_command, remove_command
from gateway.browsers.pages import PageTracker
from gateway.cdp.connection import CdpConnection
from gateway.cdp.endpoint import Endpoint
from gateway.config import TargetConfig
from gateway.config.remote import HostedUrl
from gateway.errors import GatewayError, HostError, InvalidArgument
from gateway.hosts.base import Host
from gateway.tabs.tab import Tab

__all__ = ["MAX_DOWNLOADS", "MAX_DOWNLOAD_MB", "MAX_HOST_BYTES", "Download", "DownloadState",
           "Downloads"]

log = structlog.get_logger("gateway.downloads")

MAX_DOWNLOADS = 200
MAX_DOWNLOAD_MB = 512
"""The largest download copied back, unless the target's ``max_capture_mb`` is lower: an
agent must not pull a disk image over someone's SSH link into a temp directory."""
MAX_HOST_BYTES = 2 << 30
"""The most a browser's downloads may fill on its host; past it new ones are cancelled."""
SETUP_TIMEOUT_S = 10.0
CLEANUP_TIMEOUT_S = 5.0  # removal is clean-up: it must not hold up an exit for long
_LOOPBACK = ("127.0.0.1", "localhost", "::1", "[::1]")
_UNSHOWN = re.compile(r"[\x00-\x1f\x7f/\\]")
_GUID = re.compile(r"[A-Za-z0-9-]{1,64}")  # Chrome's are UUIDs: anything else is no file name
_NOT_LAUNCHED = ("the gateway did not launch this browser, so its default context saves "
                 "where it always does (not redirected: a person's own downloads must not "
                 "land in the gateway's temporary directory); download in an isolated "
                 "context (navigate or new_tab with context), or use a target with "
                 "launch = true")

DownloadState = Literal["in_progress", "completed", "failed"]
Call = Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]]


@dataclass(eq=False)
class Download:
    id: int
    guid: str
    url: str
    name: str                      # as the site suggested it, cleaned: shown, never a path
    tab: int | None
    state: DownloadState = "in_progress"
    bytes: int = 0
    total: int | None = None
    path: str | None = None        # on the host, when the browser saves there
    why_not: str | None = None     # why it cannot be fetched (besides the browser's state)
    context: str | None = None     # the id of the gateway's context it is in
    ended: anyio.Event = field(default_factory=anyio.Event)

    def end(self, state: DownloadState) -> None:
        self.state = state
        self.ended.set()


def shown_name(suggested: str) -> str:
    """A site's suggested file name as the gateway shows it: no control characters or
    path separators, no format characters (U+202E would show ``exe.txt`` for
    ``txt.exe``), at most 200 characters."""
    shown = "".join(c for c in suggested if unicodedata.category(c) != "Cf")
    return _UNSHOWN.sub("_", shown)[:200] or "download"


def unreachable(endpoint: Endpoint, host: Host, *, hosted: bool) -> str | None:
    """Why the files this browser saves cannot be copied back over ``host`` (None: they
    can — the browser listens on the host's own loopback, so it runs there); ``hosted``:
    found at a hosted pool's websocket URL (even one on loopback: a container's)."""
    if endpoint.socket is not None:
        return (f"it is a share: the browser runs on another machine and {host.label} "
                "only holds its socket")
    if hosted or endpoint.scheme in ("wss", "https") or endpoint.headers:
        return "it is a hosted browser: the gateway has no access to its machine's files"
    if endpoint.host not in _LOOPBACK:
        return (f"it listens at {endpoint.host}, not on {host.label}'s own loopback: it "
                "runs on a machine the gateway has no file access to")
    return None


class Downloads:
    """One browser's download directory on its host and its record of downloads."""

    def __init__(self, config: TargetConfig, host: Host, pages: PageTracker) -> None:
        self._target = config.name
        self._hosted = isinstance(config.cdp, HostedUrl)
        self._host = host
        self._tabs = pages.tabs  # the browser's live tabs by targetId (= main frame id)
        self._contexts = pages.contexts
        pages.contexts.made = self.context_made  # a context the gateway makes: here too
        pages.downloaded = self._on_page_event
        self._by_guid: OrderedDict[str, Download] = OrderedDict()
        self._ids = itertools.count(1)
        self.dropped = 0
        self.directory: str | None = None
        self.unreachable: str | None = "the browser has not been connected yet"
        self._launched = False  # the gateway launched it: its default context saves here
        self._cdp: CdpConnection | None = None
        self._tasks: anyio.abc.TaskGroup | None = None  # the connection's: removals, cancels

    @property
    def entries(self) -> list[Download]:
        return list(self._by_guid.values())

    async def start(self, cdp: CdpConnection, endpoint: Endpoint, tasks: anyio.abc.TaskGroup,
                    *, launched: bool) -> None:
        """Set a new connection (its task group ``tasks``) up: events followed, the
        directory made (or kept), and — ``launched``: the gateway started this browser —
        the default context's downloads sent there. Failures are logged: a browser that
        cannot have its downloads saved is still served."""
        for entry in self._by_guid.values():
            if entry.state == "in_progress":  # its end was on the old connection
                entry.end("failed")
        self._cdp, self._tasks, self._launched = cdp, tasks, launched
        cdp.listen(None, self._on_event)
        self.unreachable = unreachable(endpoint, self._host, hosted=self._hosted)
        if self.unreachable is None:
            try:
                made, why = parse_prepared(await self._host.run(
                    prepare_command(self.directory), SETUP_TIMEOUT_S))
            except HostError as exc:
                made, why = None, exc.reason
            if made is None:  # one made before is kept in mind: removed on exit
                self.unreachable = f"its download directory could not be made ({why})"
            else:
                self.directory = made
        if launched:  # another's default context is left as it is: its pages tell
            await self.context_made(lambda m, p: cdp.send(m, p, timeout_s=SETUP_TIMEOUT_S),
                                    None)

    async def context_made(self, call: Call, context_id: str | None) -> None:
        """Send the downloads of the context ``context_id`` (None: the default one, only
        of a launched browser) to the directory — or, with none, just have Chrome say
        what it downloads, saving where it would."""
        params: dict[str, Any] = {"behavior": "default", "eventsEnabled": True}
        if self.unreachable is None:
            params.update(behavior="allowAndName", downloadPath=f"{self.directory}/{FILES}")
        if context_id is not None:
            params["browserContextId"] = context_id
        try:
            await call("Browser.setDownloadBehavior", params)
        except GatewayError as exc:  # a hosted pool may not offer it
            log.warning("downloads not followed", target=self._target, error=str(exc))

    def _on_page_event(self, method: str, params: dict[str, Any], tab: Tab) -> None:
        """A page session's ``Page.download*``: the same as the browser's."""
        self._on_event(method.replace("Page.", "Browser.", 1), params, tab)

    def _on_event(self, method: str, params: dict[str, Any], tab: Tab | None = None) -> None:
        if method == "Browser.downloadWillBegin":
            self._began(params, tab)
        elif method == "Browser.downloadProgress":
            found = self._by_guid.get(str(params.get("guid", "")))
            if found is None or found.state != "in_progress":
                return
            found.bytes = int(params.get("receivedBytes") or 0)
            found.total = int(params.get("totalBytes") or 0) or None
            state = params.get("state")
            if state in ("completed", "canceled"):
                found.end("completed" if state == "completed" else "failed")
            elif found.path is not None and self._on_host() > MAX_HOST_BYTES:
                self._cancel(found, self._full())

    def _began(self, params: dict[str, Any], tab: Tab | None) -> None:
        guid = str(params.get("guid", ""))
        if guid in self._by_guid:  # told by the browser and by its page
            return
        tab = tab or self._tabs.get(str(params.get("frameId", "")))
        context = self._contexts.known(tab.context) if tab and tab.context else None
        entry = Download(next(self._ids), guid, str(params.get("url", ""))[:2000],
                         shown_name(str(params.get("suggestedFilename", ""))),
                         tab.id if tab is not None else None, context=context)
        if not _GUID.fullmatch(guid):
            entry.why_not = (f"the browser gave it the id {guid[:80]!r}, not a plain name: "
                             "the gateway does not use it as a file name")
        elif not (self._launched or context is not None):
            entry.why_not = _NOT_LAUNCHED
        elif self.unreachable is None and self.directory is not None:
            entry.path = f"{self.directory}/{FILES}/{guid}"
        if len(self._by_guid) >= MAX_DOWNLOADS:
            self._drop(self._by_guid.popitem(last=False)[1])
        self._by_guid[guid] = entry
        if entry.path is not None and self._on_host() >= MAX_HOST_BYTES:
            self._cancel(entry, self._full())

    def _on_host(self) -> int:
        """The bytes the recorded downloads fill on the host."""
        return sum(e.bytes for e in self._by_guid.values()
                   if e.path is not None and e.state != "failed")

    def _full(self) -> str:
        return (f"cancelled: the downloads kept on {self._host.label} reached "
                f"{MAX_HOST_BYTES >> 20:,} MB, the bound for one browser (the oldest are "
                f"removed as newer ones push them off the list of {MAX_DOWNLOADS})")

    def _cancel(self, entry: Download, why: str) -> None:
        """Cancel ``entry`` in the browser and remove its file, saying ``why``."""
        entry.why_not = why
        entry.end("failed")
        params = {"guid": entry.guid} | ({"browserContextId": entry.context}
                                         if entry.context else {})
        self._later(self._send, "Browser.cancelDownload", params)
        self._later(self._remove, entry.path)

    def _drop(self, entry: Download) -> None:
        """``entry`` leaves the record: its file leaves the host (a download still under
        way is cancelled first)."""
        self.dropped += 1
        if entry.path is None:
            return
        if entry.state == "in_progress":
            self._cancel(entry, "dropped from the list while under way")
        else:
            self._later(self._remove, entry.path)

    def _later(self, job: Callable[..., Coroutine[Any, Any, None]], *args: Any) -> None:
        """Run ``job`` in the connection's task group (an event listener cannot wait)."""
        if self._tasks is not None:
            self._tasks.start_soon(job, *args)

    async def _send(self, method: str, params: dict[str, Any]) -> None:
        if self._cdp is None:
            return
        try:
            await self._cdp.send(method, params, timeout_s=CLEANUP_TIMEOUT_S)
        except GatewayError as exc:
            log.warning("could not cancel a download", target=self._target, error=str(exc))

    async def _remove(self, path: str | None) -> None:
        """Remove ``path`` on the host (bounded, never raising)."""
        if path is None:
            return
        with anyio.move_on_after(CLEANUP_TIMEOUT_S, shield=True):
            try:
                await self._host.run(remove_command(path), CLEANUP_TIMEOUT_S)
            except HostError as exc:
                log.warning("could not remove a download", host=self._host.label,
                            error=exc.reason, path=path)

    def get(self, download_id: int) -> Download:
        """The download with that id, or ``InvalidArgument`` saying what to do."""
        for entry in self._by_guid.values():
            if entry.id == download_id:
                return entry
        known = ", ".join(str(e.id) for e in self._by_guid.values()) or "none yet"
        raise InvalidArgument(
            f"no download {download_id} on target {self._target!r} (known: {known}"
            f"{'; older ones were dropped' if self.dropped else ''}); call downloads "
            "without fetch to list them")

    async def fetch(self, entry: Download, into: BinaryIO, max_mb: int,
                    timeout_s: float) -> int:
        """Copy ``entry``'s file back into ``into`` (waiting, within ``timeout_s``, for one
        still under way, its bytes in the browser as progress): its bytes;
        ``InvalidArgument`` saying why not. The wait and the copy share ``timeout_s``."""
        deadline = anyio.current_time() + timeout_s
        with anyio.move_on_after(timeout_s):
            while not entry.ended.is_set():
                await progress.report(entry.bytes, entry.total, "still downloading in the "
                                      f"browser: {entry.bytes / 2**20:.1f} MB")
                with anyio.move_on_after(progress.MIN_INTERVAL_S):
                    await entry.ended.wait()
        if entry.state == "in_progress":
            of = f" of {entry.total:,}" if entry.total else ""
            raise InvalidArgument(
                f"download {entry.id} is still under way after {timeout_s:g} s "
                f"({entry.bytes:,}{of} bytes); call again later, or with a larger timeout_s")
        why = self.unreachable or entry.why_not or (
            None if entry.path else "it began before its directory was set up")
        if why is not None or entry.path is None:
            raise InvalidArgument(f"download {entry.id} ({entry.name}) on target "
                                  f"{self._target!r} cannot be copied back: {why}")
        if entry.state == "failed":
            raise InvalidArgument(
                f"download {entry.id} ({entry.name}) failed in the browser (cancelled or "
                "interrupted), or its end was not seen: there is no file; download it again")
        limit = min(MAX_DOWNLOAD_MB, max_mb)
        if entry.bytes > limit << 20:
            raise InvalidArgument(
                f"download {entry.id} is {entry.bytes:,} bytes, over the {limit} MB limit "
                f"for copying a download back (at most {MAX_DOWNLOAD_MB} MB, lower when the "
                f"target's max_capture_mb is); it stays on {self._host.label} until the "
                "gateway lets the browser go")
        progress.new_phase()  # the copy counts its own bytes
        try:
            return await self._host.fetch_file(entry.path, into, limit << 20,
                                               max(deadline - anyio.current_time(), 0.001))
        except HostError as exc:
            raise InvalidArgument(f"could not copy download {entry.id} back from "
                                  f"{self._host.label}: {exc.reason}") from None

    async def aclose(self) -> None:
        """The gateway lets the browser go: remove its directory (bounded, never raising;
        one left behind is swept by the next gateway, see ``download_dir``)."""
        directory, self.directory = self.directory, None
        if directory is None:
            return
        await self._remove(directory)
