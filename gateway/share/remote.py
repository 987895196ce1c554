"""The far end of a share: sockets and manifests on DEST, over one SSH connection.

sshd on DEST listens on ``~/.cache/chrome-ssh-gateway/shared/<name>.sock``
(``forward_remote_path_to_port``: a streamlocal forward; sshd creates it with its
``StreamLocalBindMask``, 0177 by default, and a socket others may open is refused)
and forwards each connection back to the browser's DevTools port here; ``<name>.json``
beside it is the ``ShareManifest``, replaced by an atomic rename so a gateway listing
the directory never finds a share without one. Files are made and removed over SFTP
on the same connection (``SshLink``), so nothing depends on DEST's shell.

sshd leaves the socket file behind when a forward ends, even cleanly, and will not
bind over it (``StreamLocalBindUnlink`` is off by default). So before binding, an
existing socket is removed — only when it is this process's own (its manifest
carries our ``share_id``: a link that dropped) or nothing listens on it (a sharer that
was killed). A socket that answers and is not ours is a live share of another
sharer: refused, "use --name". When opening, leftovers of sharers that are gone and
whose expiry passed are swept, so a bastion many CI runs share with stays tidy.
"""

from __future__ import annotations

import contextlib
import posixpath
import stat
from collections.abc import AsyncIterator

import structlog

from gateway.errors import HostError, ShareRefused
from gateway.hosts.ssh import SshHost
from gateway.hosts.ssh_link import Listener, RemoteFiles, SshLink
from gateway.share.manifest import MAX_MANIFEST_BYTES, SHARED_DIR, ShareManifest

__all__ = ["LIVE_PROBE_S", "RemoteShares"]

log = structlog.get_logger("gateway.share")
LIVE_PROBE_S = 3.0
SFTP_TIMEOUT_S = 10.0
REMOVE_TIMEOUT_S = 5.0  # removing the shares when stopping: a dead link must not hold it


class RemoteShares:
    """This process's shares on DEST, over the connection ``host`` keeps."""

    def __init__(self, host: SshHost, share_id: str) -> None:
        self.host = host
        self.share_id = share_id
        self.directory = ""        # absolute, on DEST (known once opened)
        self.user = ""             # who we log in as there (whoever is that user controls)
        self._link: SshLink | None = None
        self._listeners: dict[str, Listener] = {}

    def socket_path(self, name: str) -> str:
        return f"{self.directory}/{name}.sock"

    def shown_path(self, name: str) -> str:
        """The socket's path as the user on DEST would write it (``~/…``)."""
        return f"~/{SHARED_DIR}/{name}.sock"

    @property
    def names(self) -> list[str]:
        """The shares bound on DEST now (a bind under way included)."""
        return list(self._listeners)

    async def open(self) -> None:
        """Connect (``HostError`` when DEST cannot be reached), make the shares directory
        ready (``ShareRefused`` when it is not private) and sweep expired leftovers."""
        link = self._link = await SshLink.open(self.host)
        self._listeners = {}
        self.user = link.username
        async with self._files(link, "preparing") as files:
            home = await files.realpath(".")
            self.directory = await _own_directory(files, home)
            await self._sweep(link, files)

    async def bind(self, name: str, port: int, manifest: ShareManifest) -> None:
        """Share the browser on 127.0.0.1:``port`` here as ``name`` on DEST (again, when
        it moved to another port: the manifest is replaced, never missing)."""
        link = self._connection()
        sock, meta = self.socket_path(name), f"{self.directory}/{name}.json"
        async with self._files(link, f"sharing {name}") as files:
            await self._clear(link, files, name, sock)
            self._listeners[name] = await link.forward_socket(sock, port)
            mode = stat.S_IMODE((await files.lstat(sock)).mode)
            if mode & 0o077:
                await self._forget(files, name)
                raise ShareRefused(f"sshd on {self.host.label} made {sock} mode {mode:o}: "
                                   "other users there could use the browser; set "
                                   "StreamLocalBindMask 0177 in its sshd_config")
            temporary = f"{self.directory}/.{name}.json.{self.share_id}"
            await files.write_private(temporary, manifest.to_text())
            await files.rename(temporary, meta)
        log.info("shared", name=name, socket=sock, port=port, dest=self.host.label)

    async def _clear(self, link: SshLink, files: RemoteFiles, name: str, sock: str) -> None:
        """Remove the socket an earlier share of ``name`` left — unless it is live and not
        ours. Its manifest stays until the rename replaces it."""
        listener = self._listeners.pop(name, None)
        if listener is not None:  # ours, bound on this connection: the browser moved
            listener.close()
        elif not await files.exists(sock):
            return
        elif not await self._ours(files, name) and await self._answers(link, sock):
            raise ShareRefused(f"a share named {name} is already live on {self.host.label}; "
                               "use --name")
        log.info("replacing a stale share", name=name, socket=sock)
        await files.remove(sock)

    async def _ours(self, files: RemoteFiles, name: str) -> bool:
        manifest = await _manifest(files, f"{self.directory}/{name}.json")
        return manifest is not None and manifest.share_id == self.share_id

    async def _sweep(self, link: SshLink, files: RemoteFiles) -> None:
        """Remove the shares whose expiry passed and on whose socket nothing listens."""
        for entry in await files.listdir(self.directory):
            if not entry.endswith(".json") or entry.startswith("."):
                continue
            manifest = await _manifest(files, f"{self.directory}/{entry}")
            if manifest is None or not manifest.expired() or manifest.name != entry[:-5]:
                continue
            sock = self.socket_path(manifest.name)
            if await files.exists(sock) and await self._answers(link, sock):
                continue
            log.info("sweeping an expired share", name=manifest.name)
            await self._remove_files(files, manifest.name)

    async def _answers(self, link: SshLink, sock: str) -> bool:
        """Whether a live share answers on ``sock`` (a refusal by sshd cannot tell)."""
        try:
            return await link.socket_answers(sock, LIVE_PROBE_S)
        except HostError:
            raise ShareRefused(f"sshd on {self.host.label} refused to open {sock}: it must "
                               "allow Unix sockets (AllowStreamLocalForwarding yes)") from None

    async def unbind(self, name: str) -> None:
        """Stop sharing ``name``: its forward closed, its manifest and socket removed."""
        await self.remove(self._listeners.keys() & {name})

    async def remove(self, names: set[str] | None = None) -> bool:
        """Stop sharing ``names`` (all when None) in one SFTP session, bounded; False when
        the files could not be removed (the link is gone: a gateway sees nothing
        answers, and the next share of the name replaces them)."""
        names = set(self._listeners) if names is None else names
        for name in names:
            listener = self._listeners.pop(name, None)
            if listener is not None:
                listener.close()
        link = self._link
        if not names:
            return True
        if link is None or not link.current:
            return False
        try:
            async with link.files("removing shares", REMOVE_TIMEOUT_S) as files:
                for name in names:
                    await self._remove_files(files, name)
        except HostError as exc:
            log.warning("could not remove shares", names=sorted(names), dest=self.host.label,
                        error=exc.reason)
            return False
        return True

    async def _forget(self, files: RemoteFiles, name: str) -> None:
        listener = self._listeners.pop(name, None)
        if listener is not None:
            listener.close()
        await self._remove_files(files, name)

    async def _remove_files(self, files: RemoteFiles, name: str) -> None:
        for path in (f"{self.directory}/{name}.json", self.socket_path(name)):
            await files.remove(path)

    def lost(self) -> None:
        """The connection dropped: its forwards went with it."""
        self._link = None
        self._listeners = {}

    def _connection(self) -> SshLink:
        if self._link is None:
            raise HostError(f"not connected to {self.host.label}")
        return self._link

    @contextlib.asynccontextmanager
    async def _files(self, link: SshLink, doing: str) -> AsyncIterator[RemoteFiles]:
        """An SFTP session for one step, bounded (a liveness probe may run inside)."""
        async with link.files(doing, SFTP_TIMEOUT_S + LIVE_PROBE_S) as files:
            yield files


async def _manifest(files: RemoteFiles, path: str) -> ShareManifest | None:
    text = await files.read(path, MAX_MANIFEST_BYTES)
    if text is None:
        return None
    try:
        return ShareManifest.model_validate_json(text)
    except ValueError:
        return None


async def _own_directory(files: RemoteFiles, home: str) -> str:
    """``~/.cache/chrome-ssh-gateway/shared`` made (0700) where missing, and checked to
    be a directory of the home's owner that nobody else can write."""
    owner = (await files.lstat(home)).uid
    path = home
    for part in SHARED_DIR.split("/"):
        path = posixpath.join(path, part)
        if not await files.exists(path):
            await files.mkdir_private(path)
    attrs = await files.lstat(path)
    mode = attrs.mode
    if not stat.S_ISDIR(mode):
        raise ShareRefused(f"{path} is not a directory (a symbolic link?); remove it, share "
                           "makes it again")
    if attrs.uid != owner:
        raise ShareRefused(f"{path} belongs to uid {attrs.uid}, not to the owner of {home}; "
                           "remove it, share makes it again")
    if mode & 0o022:
        raise ShareRefused(f"{path} is writable by group or others (mode "
                           f"{stat.S_IMODE(mode):o}); chmod 700 {path}")
    return path
