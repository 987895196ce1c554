"""The far end of a share: sockets and manifests on DEST, over one SSH connection.

sshd on DEST listens on ``~/.cache/chrome-ssh-gateway/shared/<name>.sock``
(``forward_remote_path_to_port``: a streamlocal forward; sshd creates it with its
``StreamLocalBindMask``, 0177 by default, and a socket others may open is refused)
and forwards each connection back to the browser's DevTools port here; ``<name>.json``
beside it is the ``ShareManifest``, replaced by an atomic rename so a gateway listing
the directory never finds a share without one. Files are made and removed over SFTP
on the same connection, so nothing depends on DEST's shell.

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

import anyio
import asyncssh
import structlog

from gateway.browsers.shares import MAX_MANIFEST_BYTES, SHARED_DIR, ShareManifest
from gateway.errors import HostError, ShareRefused, map_exceptions
from gateway.hosts.ssh import SshHost
from gateway.hosts.ssh_errors import reason, ssh_errors

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
        self._conn: asyncssh.SSHClientConnection | None = None
        self._listeners: dict[str, asyncssh.SSHListener] = {}

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
        conn = await self.host.connection()
        self._conn = conn
        self._listeners = {}
        self.user = str(conn.get_extra_info("username") or self.host.destination.user or "")
        async with self._sftp(conn, "preparing") as sftp:
            home = await sftp.realpath(".")
            self.directory = await _own_directory(sftp, home)
            await self._sweep(conn, sftp)

    async def bind(self, name: str, port: int, manifest: ShareManifest) -> None:
        """Share the browser on 127.0.0.1:``port`` here as ``name`` on DEST (again, when
        it moved to another port: the manifest is replaced, never missing)."""
        conn = self._connection()
        sock, meta = self.socket_path(name), f"{self.directory}/{name}.json"
        async with self._sftp(conn, f"sharing {name}") as sftp:
            await self._clear(conn, sftp, name, sock)
            listener = await conn.forward_remote_path_to_port(sock, "127.0.0.1", port)
            self._listeners[name] = listener
            mode = stat.S_IMODE((await sftp.lstat(sock)).permissions or 0)
            if mode & 0o077:
                await self._forget(sftp, name)
                raise ShareRefused(f"sshd on {self.host.label} made {sock} mode {mode:o}: "
                                   "other users there could use the browser; set "
                                   "StreamLocalBindMask 0177 in its sshd_config")
            temporary = f"{self.directory}/.{name}.json.{self.share_id}"
            async with sftp.open(temporary, "w", asyncssh.SFTPAttrs(permissions=0o600)) as out:
                await out.write(manifest.to_text())
            await sftp.posix_rename(temporary, meta)
        log.info("shared", name=name, socket=sock, port=port, dest=self.host.label)

    async def _clear(self, conn: asyncssh.SSHClientConnection, sftp: asyncssh.SFTPClient,
                     name: str, sock: str) -> None:
        """Remove the socket an earlier share of ``name`` left — unless it is live and not
        ours. Its manifest stays until the rename replaces it."""
        listener = self._listeners.pop(name, None)
        if listener is not None:  # ours, bound on this connection: the browser moved
            listener.close()
        elif not await sftp.exists(sock):
            return
        elif not await self._ours(sftp, name) and await _answers(conn, sock, self.host.label):
            raise ShareRefused(f"a share named {name} is already live on {self.host.label}; "
                               "use --name")
        log.info("replacing a stale share", name=name, socket=sock)
        with contextlib.suppress(asyncssh.SFTPNoSuchFile):
            await sftp.remove(sock)

    async def _ours(self, sftp: asyncssh.SFTPClient, name: str) -> bool:
        manifest = await _manifest(sftp, f"{self.directory}/{name}.json")
        return manifest is not None and manifest.share_id == self.share_id

    async def _sweep(self, conn: asyncssh.SSHClientConnection,
                     sftp: asyncssh.SFTPClient) -> None:
        """Remove the shares whose expiry passed and on whose socket nothing listens."""
        for entry in await sftp.listdir(self.directory):
            if not entry.endswith(".json") or entry.startswith("."):
                continue
            manifest = await _manifest(sftp, f"{self.directory}/{entry}")
            if manifest is None or not manifest.expired() or manifest.name != entry[:-5]:
                continue
            sock = self.socket_path(manifest.name)
            if await sftp.exists(sock) and await _answers(conn, sock, self.host.label):
                continue
            log.info("sweeping an expired share", name=manifest.name)
            await self._remove_files(sftp, manifest.name)

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
        conn = self._conn
        if not names:
            return True
        if conn is None or self.host.connected is not conn:
            return False
        try:
            with anyio.fail_after(REMOVE_TIMEOUT_S):
                async with conn.start_sftp_client() as sftp:
                    for name in names:
                        await self._remove_files(sftp, name)
        except (TimeoutError, OSError, asyncssh.Error) as exc:
            log.warning("could not remove shares", names=sorted(names), dest=self.host.label,
                        error=str(exc) or type(exc).__name__)
            return False
        return True

    async def _forget(self, sftp: asyncssh.SFTPClient, name: str) -> None:
        listener = self._listeners.pop(name, None)
        if listener is not None:
            listener.close()
        await self._remove_files(sftp, name)

    async def _remove_files(self, sftp: asyncssh.SFTPClient, name: str) -> None:
        for path in (f"{self.directory}/{name}.json", self.socket_path(name)):
            with contextlib.suppress(asyncssh.SFTPNoSuchFile):
                await sftp.remove(path)

    def lost(self) -> None:
        """The connection dropped: its forwards went with it."""
        self._conn = None
        self._listeners = {}

    def _connection(self) -> asyncssh.SSHClientConnection:
        if self._conn is None:
            raise HostError(f"not connected to {self.host.label}")
        return self._conn

    @contextlib.asynccontextmanager
    async def _sftp(self, conn: asyncssh.SSHClientConnection,
                    doing: str) -> AsyncIterator[asyncssh.SFTPClient]:
        """An SFTP session for one step, bounded, its failures as ``HostError``."""
        where = f"{doing} on {self.host.label}"
        with map_exceptions(ssh_errors(
                lambda why: f"{where} failed ({why}); its sshd must offer SFTP",
                f"{where} timed out", first={
                    asyncssh.ChannelListenError: lambda exc: HostError(
                        f"{where}: sshd did not listen on the socket; it must allow it "
                        "(AllowStreamLocalForwarding yes)"),
                    asyncssh.SFTPError: lambda exc: HostError(
                        f"{where} over SFTP failed ({reason(exc)}); retry")})), \
                anyio.fail_after(SFTP_TIMEOUT_S + LIVE_PROBE_S):
            async with conn.start_sftp_client() as sftp:
                yield sftp


async def _manifest(sftp: asyncssh.SFTPClient, path: str) -> ShareManifest | None:
    try:
        async with sftp.open(path, "rb") as file:
            text = await file.read(MAX_MANIFEST_BYTES)
        return ShareManifest.model_validate_json(text)
    except (OSError, asyncssh.Error, ValueError):
        return None


async def _own_directory(sftp: asyncssh.SFTPClient, home: str) -> str:
    """``~/.cache/chrome-ssh-gateway/shared`` made (0700) where missing, and checked to
    be a directory of the home's owner that nobody else can write."""
    owner = (await sftp.lstat(home)).uid
    path = home
    for part in SHARED_DIR.split("/"):
        path = posixpath.join(path, part)
        if not await sftp.exists(path):
            await sftp.mkdir(path, asyncssh.SFTPAttrs(permissions=0o700))
    attrs = await sftp.lstat(path)
    mode = attrs.permissions or 0
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


async def _answers(conn: asyncssh.SSHClientConnection, sock: str, dest: str) -> bool:
    """Whether something accepts connections on ``sock`` on DEST (a live share). Only
    "connect failed" means nothing does; a refusal by sshd itself cannot tell."""
    try:
        with anyio.fail_after(LIVE_PROBE_S):
            _, writer = await conn.open_unix_connection(sock)
    except asyncssh.ChannelOpenError as exc:
        if exc.code == asyncssh.OPEN_CONNECT_FAILED:
            return False
        raise ShareRefused(f"sshd on {dest} refused to open {sock}: it must "
                           "allow Unix sockets (AllowStreamLocalForwarding yes)") from None
    except TimeoutError:
        return True  # it did not refuse: do not take a name that may be in use
    writer.close()
    return True
