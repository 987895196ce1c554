"""One SSH connection held on to, for work that lives and dies with it: a share.

A reverse forward (sshd listening on a Unix socket on the far host) belongs to the
connection that asked for it, and the files that describe it are made over SFTP on
the same connection, so nothing depends on the far host's shell. ``SshLink`` is that
connection, its operations in plain values and their failures as ``HostError`` — so
the share's logic (``gateway.share.remote``) never meets asyncssh's types.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Protocol

import anyio

from gateway.errors import HostError, map_exceptions
from gateway.hosts.asyncssh_import import asyncssh
from gateway.hosts.ssh import SshHost
from gateway.hosts.ssh_errors import reason, ssh_errors

__all__ = ["FileAttrs", "Listener", "RemoteFiles", "SshLink"]


class Listener(Protocol):
    """A forward sshd listens for; ``close`` ends it (the socket file stays: sshd's)."""

    def close(self) -> None: ...


@dataclass(frozen=True)
class FileAttrs:
    """What ``lstat`` says of a path on the far host (a final link is not followed)."""

    mode: int
    uid: int | None


class RemoteFiles:
    """One SFTP session's file operations on the far host."""

    def __init__(self, sftp: asyncssh.SFTPClient) -> None:
        self._sftp = sftp

    async def realpath(self, path: str) -> str:
        return str(await self._sftp.realpath(path))

    async def lstat(self, path: str) -> FileAttrs:
        attrs = await self._sftp.lstat(path)
        return FileAttrs(attrs.permissions or 0, attrs.uid)

    async def exists(self, path: str) -> bool:
        return bool(await self._sftp.exists(path))

    async def mkdir_private(self, path: str) -> None:
        await self._sftp.mkdir(path, asyncssh.SFTPAttrs(permissions=0o700))

    async def listdir(self, path: str) -> list[str]:
        return [str(name) for name in await self._sftp.listdir(path)]

    async def read(self, path: str, max_bytes: int) -> bytes | None:
        """At most ``max_bytes`` of the file; None when it cannot be read (or is gone)."""
        try:
            async with self._sftp.open(path, "rb") as file:
                data: bytes = await file.read(max_bytes)
            return data
        except (OSError, asyncssh.Error):
            return None

    async def write_private(self, path: str, text: str) -> None:
        """Write ``path`` (mode 0600) whole."""
        async with self._sftp.open(path, "w", asyncssh.SFTPAttrs(permissions=0o600)) as out:
            await out.write(text)

    async def rename(self, source: str, destination: str) -> None:
        """Replace ``destination`` by ``source`` at once (POSIX rename)."""
        await self._sftp.posix_rename(source, destination)

    async def remove(self, path: str) -> None:
        """Remove ``path``; one already gone is no error."""
        with contextlib.suppress(asyncssh.SFTPNoSuchFile):
            await self._sftp.remove(path)


class SshLink:
    """The connection ``host`` has open now, held: ``current`` says whether it still is."""

    def __init__(self, host: SshHost, conn: asyncssh.SSHClientConnection) -> None:
        self._host = host
        self._conn = conn
        self.username = str(conn.get_extra_info("username") or host.destination.user or "")

    @classmethod
    async def open(cls, host: SshHost) -> SshLink:
        """``host``'s connection, opening it first when there is none (``HostError``)."""
        return cls(host, await host.connection())

    @property
    def current(self) -> bool:
        """Whether this is still the connection ``host`` uses (not dropped since)."""
        return self._host.connected is self._conn

    @contextlib.asynccontextmanager
    async def files(self, doing: str, timeout_s: float) -> AsyncIterator[RemoteFiles]:
        """An SFTP session for one step ``doing`` (what the error says), bounded, its
        failures and those of the forwards made inside it as ``HostError``."""
        where = f"{doing} on {self._host.label}"
        with map_exceptions(ssh_errors(
                lambda why: f"{where} failed ({why}); its sshd must offer SFTP",
                f"{where} timed out", first={
                    asyncssh.ChannelListenError: lambda _: HostError(
                        f"{where}: sshd did not listen on the socket; it must allow it "
                        "(AllowStreamLocalForwarding yes)"),
                    asyncssh.SFTPError: lambda exc: HostError(
                        f"{where} over SFTP failed ({reason(exc)}); retry")})), \
                anyio.fail_after(timeout_s):
            async with self._conn.start_sftp_client() as sftp:
                yield RemoteFiles(sftp)

    async def forward_socket(self, path: str, port: int) -> Listener:
        """sshd listens on the Unix socket ``path`` on the far host and forwards each
        connection back to 127.0.0.1:``port`` here. Call it inside ``files`` (its
        failures are said there)."""
        listener: Listener = await self._conn.forward_remote_path_to_port(
            path, "127.0.0.1", port)
        return listener

    async def socket_answers(self, path: str, timeout_s: float) -> bool:
        """Whether something accepts connections on the Unix socket ``path`` on the far
        host. Only "connect failed" means nothing does; no answer within ``timeout_s``
        counts as an answer (the socket may be in use). ``HostError`` when sshd itself
        refuses to open Unix sockets (the reason as sshd gave it)."""
        try:
            with anyio.fail_after(timeout_s):
                _, writer = await self._conn.open_unix_connection(path)
        except asyncssh.ChannelOpenError as exc:
            if exc.code == asyncssh.OPEN_CONNECT_FAILED:
                return False
            raise HostError(reason(exc)) from None
        except TimeoutError:
            return True
        writer.close()
        return True
