"""The far end of a share: sockets and manifests on DEST, over one SSH connection.

sshd on DEST listens on ``~/.cache/chrome-ssh-gateway/shared/<name>.sock``
(``forward_remote_path_to_port``: a streamlocal forward, created 0600 by sshd's
``StreamLocalBindMask``) and forwards each connection back to the browser's
DevTools port here; ``<name>.json`` beside it is the ``ShareManifest``. Files are
made and removed over SFTP on the same connection, so nothing depends on DEST's
shell.

sshd leaves the socket file behind when a forward ends, even cleanly, and will not
bind over it (``StreamLocalBindUnlink`` is off by default). So before binding, an
existing socket is removed — only when it is this process's own (its manifest
carries our ``share_id``: a link that dropped) or nothing answers on it (a sharer
that was killed). A socket that answers and is not ours is a live share of another
sharer: refused, "use --name".
"""

from __future__ import annotations

import contextlib
import posixpath
import stat

import anyio
import asyncssh
import structlog

from gateway.browsers.shares import MAX_MANIFEST_BYTES, SHARED_DIR, ShareManifest
from gateway.errors import GatewayError, HostError
from gateway.hosts.ssh import SshHost

__all__ = ["LIVE_PROBE_S", "RemoteShares", "ShareRefused"]

log = structlog.get_logger("gateway.share")
LIVE_PROBE_S = 3.0
SFTP_TIMEOUT_S = 10.0


class ShareRefused(GatewayError):
    """DEST cannot take this share (the name is live there, the directory is unsafe):
    trying again would not help, so ``share`` exits with this."""


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

    async def open(self) -> asyncssh.SSHClientConnection:
        """Connect (``HostError`` when DEST cannot be reached) and make the shares
        directory ready (``ShareRefused`` when it is not the user's own)."""
        conn = await self.host.connection()
        self._conn = conn
        self._listeners = {}
        self.user = str(conn.get_extra_info("username") or self.host.destination.user or "")
        try:
            with anyio.fail_after(SFTP_TIMEOUT_S):
                async with conn.start_sftp_client() as sftp:
                    home = await sftp.realpath(".")
                    self.directory = await _own_directory(sftp, home)
        except TimeoutError:
            raise HostError(f"preparing {SHARED_DIR} on {self.host.label} timed out") from None
        except (OSError, asyncssh.Error) as exc:
            raise HostError(f"could not prepare ~/{SHARED_DIR} on {self.host.label} over "
                            f"SFTP ({getattr(exc, 'reason', '') or exc}); its sshd must offer "
                            "the sftp subsystem") from None
        return conn

    async def bind(self, name: str, port: int, manifest: ShareManifest) -> None:
        """Share the browser on 127.0.0.1:``port`` here as ``name`` on DEST."""
        conn = self._connection()
        sock, meta = self.socket_path(name), f"{self.directory}/{name}.json"
        try:
            with anyio.fail_after(SFTP_TIMEOUT_S + LIVE_PROBE_S):
                async with conn.start_sftp_client() as sftp:
                    await self._clear(conn, sftp, name, sock, meta)
                    listener = await conn.forward_remote_path_to_port(sock, "127.0.0.1", port)
                    self._listeners[name] = listener
                    temporary = f"{self.directory}/.{name}.json.{self.share_id}"
                    async with sftp.open(temporary, "w",
                                         asyncssh.SFTPAttrs(permissions=0o600)) as out:
                        await out.write(manifest.to_text())
                    await sftp.posix_rename(temporary, meta)
        except TimeoutError:
            raise HostError(f"sharing {name} on {self.host.label} timed out") from None
        except (OSError, asyncssh.Error) as exc:
            raise HostError(f"could not share {name} on {self.host.label}: "
                            f"{getattr(exc, 'reason', '') or exc}") from None
        log.info("shared", name=name, socket=sock, port=port, dest=self.host.label)

    async def _clear(self, conn: asyncssh.SSHClientConnection, sftp: asyncssh.SFTPClient,
                     name: str, sock: str, meta: str) -> None:
        """Remove what an earlier share of ``name`` left, unless it is live and not ours."""
        if not await sftp.exists(sock):
            return
        if not await self._ours(sftp, meta) and await _answers(conn, sock):
            raise ShareRefused(f"a share named {name} is already live on {self.host.label}; "
                               "use --name")
        log.info("replacing a stale share", name=name, socket=sock)
        with contextlib.suppress(asyncssh.SFTPNoSuchFile):
            await sftp.remove(meta)
        await sftp.remove(sock)

    async def _ours(self, sftp: asyncssh.SFTPClient, meta: str) -> bool:
        try:
            async with sftp.open(meta, "rb") as file:
                text = await file.read(MAX_MANIFEST_BYTES)
            return ShareManifest.model_validate_json(text).share_id == self.share_id
        except (OSError, asyncssh.Error, ValueError):
            return False

    async def unbind(self, name: str) -> None:
        """Stop sharing ``name``: its forward closed, its manifest and socket removed."""
        listener = self._listeners.pop(name, None)
        if listener is not None:
            listener.close()
        conn = self._conn
        if conn is None or self.host.connected is not conn:
            return  # the link is gone: the next bind (or the gateway) sees it stale
        try:
            with anyio.fail_after(SFTP_TIMEOUT_S):
                async with conn.start_sftp_client() as sftp:
                    for path in (f"{self.directory}/{name}.json", self.socket_path(name)):
                        with contextlib.suppress(asyncssh.SFTPNoSuchFile):
                            await sftp.remove(path)
        except (TimeoutError, OSError, asyncssh.Error) as exc:
            log.warning("could not remove a share's files", name=name, dest=self.host.label,
                        error=str(exc))

    @property
    def names(self) -> list[str]:
        return list(self._listeners)

    def lost(self) -> None:
        """The connection dropped: its forwards went with it."""
        self._conn = None
        self._listeners = {}

    def _connection(self) -> asyncssh.SSHClientConnection:
        if self._conn is None:
            raise HostError(f"not connected to {self.host.label}")
        return self._conn


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


async def _answers(conn: asyncssh.SSHClientConnection, sock: str) -> bool:
    """Whether something accepts connections on ``sock`` on DEST (a live share)."""
    try:
        with anyio.fail_after(LIVE_PROBE_S):
            _, writer = await conn.open_unix_connection(sock)
    except asyncssh.ChannelOpenError:
        return False
    except TimeoutError:
        return True  # it did not refuse: do not take a name that may be in use
    writer.close()
    return True
