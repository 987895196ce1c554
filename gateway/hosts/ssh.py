"""A host over SSH: one asyncssh connection, shared by every browser on the host.

Why in process (not an ``ssh`` subprocess): we see every failure as a typed
exception, keepalives and reconnects are ours to schedule, and opening a
channel costs no fork.

The connection is opened on demand and again after a drop (the browser
supervisors decide *when*: this class never retries by itself). Over it:

* ``run`` / ``read_files``: one exec each (many files in one exec, see ``shell``);
* ``http_request``: a bare ``direct-tcpip`` channel, no listening socket at all;
* ``route``: a Unix-socket forward in a 0700 directory of its own, so no other
  local user can use the tunnel; one per remote address, reused while the
  connection lives;
* ``expose``: the opt-in TCP forward for other tools, on 127.0.0.1 only;
* ``stage_files``: an SFTP session on the same connection copies files to upload
  into a fresh 0700 directory under the host's /tmp (files 0600), reporting the bytes
  copied as the call's progress; a copy that fails or is cancelled removes it;
* ``fetch_file``: the same SFTP, the other way (a browser's download back here).

Ciphers: unless ssh_config names them (``Ciphers``), AES-GCM comes first. asyncssh's
own first choice, chacha20-poly1305, is computed per packet in Python around
``cryptography`` primitives, and every CDP message is at least one packet.
Host keys: see ``known_hosts``.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import secrets
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any, BinaryIO

import anyio
import structlog

from gateway.config import HostKeyPolicy, ReconnectPolicy, SshDestination
from gateway.errors import (
    ExceptionMap,
    HostError,
    HostKeyRejected,
    LoginRefused,
    StagingFailed,
    map_exceptions,
)
from gateway.hosts.asyncssh_import import asyncssh
from gateway.hosts.base import FileText, HostKind, Route, Staged
from gateway.hosts.held import Held, Sessions, hold_over_ssh
from gateway.hosts.http import ByteStream, ChannelStream, HttpResponse, request
from gateway.hosts.known_hosts import ConnectProgress, HostKeyCheck
from gateway.hosts.sftp import fetch_over_sftp, put_over_sftp
from gateway.hosts.shell import parse_read_files, read_files_command
from gateway.hosts.ssh_errors import CHANNEL_ERRORS, command_errors, reason, ssh_errors
from gateway.hosts.transfer import Copied
from gateway.output.files import Readable

__all__ = ["SshHost", "cipher_preference"]

log = structlog.get_logger("gateway.ssh")

_AES_GCM = (b"aes128-gcm@openssh.com", b"aes256-gcm@openssh.com")
_Forward = tuple[asyncssh.SSHClientConnection, asyncssh.SSHListener]
MAX_SESSIONS = 8  # sessions at once over one connection (below sshd's MaxSessions 10)
MIN_COMMAND_SESSIONS = 2  # of those, what held launches always leave to commands


def cipher_preference(configured: Sequence[bytes]) -> list[str] | None:
    """The cipher order to ask for, or None to keep ``configured`` as it is.

    ``configured`` is what asyncssh settled on from ssh_config and its defaults. When
    that is its default list, AES-GCM moves to the front: encrypting and decrypting a
    300-byte packet takes ~8.5 us with AES-GCM (one call each way, AES-NI) against
    ~46 us with chacha20-poly1305 as asyncssh does it, measured here. A list the user
    chose in ssh_config is left alone.
    """
    if list(configured) != asyncssh.encryption.get_default_encryption_algs():
        return None
    order = [*[alg for alg in _AES_GCM if alg in configured],
             *[alg for alg in configured if alg not in _AES_GCM]]
    return [alg.decode("ascii") for alg in order]


class SshHost:
    """One SSH connection to one host, opened on demand and shared."""

    kind: HostKind = "ssh"

    def __init__(
        self, destination: SshDestination, host_key_policy: HostKeyPolicy,
        policy: ReconnectPolicy, *, record_new_keys: bool = True,
    ) -> None:
        self.destination = destination
        self.label = str(destination)
        self.host_key_policy = host_key_policy
        self.record_new_keys = record_new_keys  # False: accept-new never writes (doctor)
        self._policy = policy
        self._conn: asyncssh.SSHClientConnection | None = None
        self._client: HostKeyCheck | None = None
        self._lock = anyio.Lock()
        self.known_hosts_files: list[str] = []
        self.progress = ConnectProgress()  # of the latest connect attempt
        # sshd refuses more than MaxSessions (10 by default) commands at once on one
        # connection; many browsers connecting together queue here instead.
        self._sessions = Sessions(MAX_SESSIONS, MIN_COMMAND_SESSIONS)
        self._socket_dir: str | None = None
        self._routes: dict[tuple[str, int], _Forward] = {}
        self._exposed: dict[tuple[str, int], tuple[int, _Forward]] = {}

    # ------------------------------------------------------------ connection

    def _lost(self, client: HostKeyCheck, exc: Exception | None) -> None:
        if client is self._client:
            log.info("ssh connection lost", host=self.label, reason=str(exc or "closed"))
            self._conn = None
            self._client = None

    async def connection(self) -> asyncssh.SSHClientConnection:
        """The open connection, opening one first when there is none."""
        async with self._lock:
            if self._conn is None:
                self._conn = await self._open()
            return self._conn

    async def connect(self) -> None:
        await self.connection()

    @property
    def connected(self) -> asyncssh.SSHClientConnection | None:
        """The open connection, if there is one (never connects)."""
        return self._conn

    async def connect_options(self) -> asyncssh.SSHClientConnectionOptions:
        """The options a connect uses: ~/.ssh/config applied (HostName, Port, User,
        ProxyJump, IdentityFile, …), AES-GCM preferred unless ``Ciphers`` is
        set there (see ``cipher_preference``), and ``known_hosts_files`` set.

        Raises ``ValueError``/``OSError`` for an unreadable ssh config or key file.
        """
        dest = self.destination
        kwargs: dict[str, Any] = {
            "port": dest.port if dest.port is not None else (),
            "username": dest.user if dest.user is not None else (),
            "keepalive_interval": self._policy.keepalive_interval_s,
            "keepalive_count_max": self._policy.keepalive_count_max,
            "connect_timeout": self._policy.connect_timeout_s,
        }
        options: asyncssh.SSHClientConnectionOptions = (
            await asyncssh.SSHClientConnectionOptions.construct(
                None, config=(), host=dest.host, **kwargs))
        ciphers = cipher_preference(options.encryption_algs)
        if ciphers is not None:
            options = await asyncssh.SSHClientConnectionOptions.construct(
                None, config=(), host=dest.host, encryption_algs=ciphers, **kwargs)
        known = options.known_hosts
        self.known_hosts_files = ([str(k) for k in known] if isinstance(known, list)
                                  else [str(Path.home() / ".ssh/known_hosts")])
        return options

    async def _open(self) -> asyncssh.SSHClientConnection:
        dest = self.destination
        progress = self.progress = ConnectProgress()
        refused: ExceptionMap = {
            asyncssh.HostKeyNotVerifiable: lambda exc: HostKeyRejected(
                progress.host_key.message() if progress.host_key else
                f"{reason(exc)}; check its key in known_hosts"),
            asyncssh.PermissionDenied: lambda _: LoginRefused(
                f"SSH login to {dest} refused (no accepted key). Check that your key is in "
                "ssh-agent or named by IdentityFile, and in the remote authorized_keys")}
        with map_exceptions(ssh_errors(
                lambda why: f"SSH connect to {dest} failed: {why}",
                f"SSH connect to {dest} timed out after {self._policy.connect_timeout_s:g} s",
                first=refused, also=(ValueError,))):
            options = progress.options = await self.connect_options()
            client = HostKeyCheck(dest.host, self.known_hosts_files, self.host_key_policy,
                                  record_new_keys=self.record_new_keys, progress=progress,
                                  on_lost=self._lost)
            existing = [f for f in self.known_hosts_files if Path(f).expanduser().is_file()]
            # A known_hosts file that does not exist yet (a fresh machine) is an empty
            # one — never "no checking", which is what None would mean to asyncssh.
            trusted = existing or asyncssh.import_known_hosts("")
            with anyio.fail_after(self._policy.connect_timeout_s + 1):
                conn = await asyncssh.connect(dest.host, options=options, known_hosts=trusted,
                                              client_factory=lambda: client)
        self._client = client
        log.info("ssh connected", host=str(dest), peer=conn.get_extra_info("peername"),
                 cipher=conn.get_extra_info("send_cipher"))
        return conn

    def _drop(self, conn: asyncssh.SSHClientConnection) -> None:
        """Abandon a connection found dead: abort it (a polite close would wait on the
        dead peer) so every channel over it fails now and the next use reconnects."""
        if conn is self._conn:
            log.info("ssh connection dropped: host stopped answering", host=self.label)
            self._conn = None
            self._client = None
        conn.abort()

    # ------------------------------------------------------------ operations

    async def run(self, command: str, timeout_s: float) -> str:
        conn = await self.connection()
        with map_exceptions(command_errors(timeout_s)):
            with anyio.fail_after(timeout_s):
                async with self._sessions:
                    # Bytes, decoded here: asyncssh's own strict decoding closes the whole
                    # connection on one byte that is not UTF-8 (a file name, a manifest).
                    result = await conn.run(command, check=False, encoding=None)
        out = result.stdout
        return out.decode("utf-8", "replace") if isinstance(out, bytes) else ""

    async def hold(self, command: str, until: str, timeout_s: float) -> tuple[str, Held | None]:
        async def start() -> tuple[str, Held | None]:
            conn = await self.connection()
            with map_exceptions(command_errors(timeout_s)):
                return await hold_over_ssh(conn, command, until, timeout_s)

        return await self._sessions.hold(start, f"the one SSH connection to {self.label}")

    async def read_files(self, paths: Sequence[str], timeout_s: float) -> dict[str, FileText]:
        marker = f"#csgw-file-{secrets.token_hex(8)}"
        output = await self.run(read_files_command(paths, marker), timeout_s)
        return {asked: FileText(path, text)
                for asked, (path, text) in parse_read_files(output, marker, paths).items()}

    async def stage_files(self, files: Sequence[Readable], timeout_s: float) -> Staged:
        conn = await self.connection()
        directory = f"/tmp/csgw-upload-{secrets.token_hex(16)}"
        left: str | None = None  # the directory, while it is there and not all copied

        def failed(reason: str) -> HostError:
            return HostError(reason) if left is None else StagingFailed(reason, left)

        with map_exceptions(ssh_errors(
                lambda why: f"could not copy the files to {self.label} over SFTP ({why}); its "
                            "sshd must offer the sftp subsystem and /tmp must be writable",
                f"copying the files to {self.label} timed out after {timeout_s:g} s; raise "
                "timeout_s for large files", error=failed)):
            with anyio.fail_after(timeout_s):
                async with self._sessions, conn.start_sftp_client() as sftp:
                    # mkdir fails on anything already there: nobody else's directory or link.
                    await sftp.mkdir(directory, asyncssh.SFTPAttrs(permissions=0o700))
                    left = directory
                    try:
                        copied = Copied(sum(f.size for f in files), "uploading")
                        paths = tuple([await put_over_sftp(sftp, directory, n, f, copied)
                                       for n, f in enumerate(files)])
                        await copied.report(final=True)
                        return Staged(directory, paths)
                    except BaseException:  # a cancelled copy too: nothing of it stays
                        with anyio.move_on_after(2, shield=True):
                            with contextlib.suppress(OSError, asyncssh.Error):
                                await sftp.rmtree(directory)
                                left = None
                        raise

    async def fetch_file(self, path: str, into: BinaryIO, max_bytes: int,
                         timeout_s: float) -> int:
        conn = await self.connection()
        with map_exceptions(ssh_errors(
                lambda why: f"could not copy {path} from {self.label} over SFTP ({why}); "
                            "retry, and check with downloads that the file is still there",
                f"copying {path} from {self.label} timed out after {timeout_s:g} s; raise "
                "timeout_s for large files")), anyio.fail_after(timeout_s):
            async with self._sessions, conn.start_sftp_client() as sftp:
                return await fetch_over_sftp(sftp, path, into, max_bytes)

    async def http_request(self, host: str, port: int, path: str, timeout_s: float, *,
                           method: str = "GET", body: bytes | None = None,
                           socket: str | None = None) -> HttpResponse:
        conn = await self.connection()

        async def connect() -> ByteStream:
            if socket is not None:  # direct-streamlocal: a share's socket there
                return ChannelStream(*await conn.open_unix_connection(socket, encoding=None))
            return ChannelStream(*await conn.open_connection(host, port, encoding=None))

        return await request(connect, host, port, path, timeout_s, CHANNEL_ERRORS,
                             method=method, body=body)

    async def route(self, host: str, port: int, *, socket: str | None = None) -> Route:
        conn = await self.connection()
        if self._socket_dir is None:
            self._socket_dir = tempfile.mkdtemp(prefix="csgw-")  # mode 0700
        key = _route_key(host, port, socket)
        # A share's path can be long; a socket path must fit in 108 bytes.
        name = (f"{host}-{port}" if socket is None
                else "share-" + hashlib.sha256(socket.encode()).hexdigest()[:16])
        path = os.path.join(self._socket_dir, f"{name}.sock")
        known = self._routes.get(key)
        if known is not None:
            if known[0] is conn:
                return Route(host, port, path)
            known[1].close()
        if os.path.lexists(path):
            os.unlink(path)  # asyncssh leaves the socket file behind when a listener closes
        with map_exceptions({(OSError, asyncssh.Error): lambda exc: HostError(
                f"could not forward to {socket or f'{host}:{port}'} on {self.label}: "
                f"{reason(exc)}")}):
            listener = (await conn.forward_local_path_to_port(path, host, port)
                        if socket is None else
                        await conn.forward_local_path(path, socket))
        self._routes[key] = (conn, listener)
        return Route(host, port, path)

    def release(self, host: str, port: int, *, socket: str | None = None) -> None:
        self._release(_route_key(host, port, socket))

    def _release(self, key: tuple[str, int]) -> None:
        route = self._routes.pop(key, None)
        if route is not None:
            route[1].close()
        exposed = self._exposed.pop(key, None)
        if exposed is not None:
            exposed[1][1].close()

    async def expose(self, local_port: int, host: str, port: int) -> None:
        conn = await self.connection()
        known = self._exposed.get((host, port))
        if known is not None and known[1][0] is conn:
            return
        for address, (bound, (_, listener)) in list(self._exposed.items()):
            if bound == local_port:  # the browser moved: the port now serves the new one
                listener.close()
                await listener.wait_closed()
                del self._exposed[address]
        try:
            listener = await conn.forward_local_port("127.0.0.1", local_port, host, port)
        except (OSError, asyncssh.Error) as exc:
            log.warning("could not expose the tunnel on 127.0.0.1", port=local_port,
                        error=str(exc), host=self.label)
            return
        self._exposed[(host, port)] = (local_port, (conn, listener))
        log.info("tunnel exposed", host=self.label, local=f"127.0.0.1:{local_port}",
                 remote=f"{host}:{port}")

    async def alive(self, host: str, port: int, timeout_s: float) -> bool:
        """Open (and close) a channel to ``host:port``: any answer from sshd — even
        "nothing listens there" — proves the link works; silence means it is dead."""
        conn = self._conn
        if conn is None:
            return False
        try:
            with anyio.fail_after(timeout_s):
                _, writer = await conn.open_connection(host, port)
            writer.close()
            return True
        except asyncssh.ChannelOpenError:
            return True
        except (TimeoutError, OSError, asyncssh.Error):
            self._drop(conn)
            return False

    async def aclose(self) -> None:
        for key in list(self._routes) + list(self._exposed):
            self._release(key)
        if self._socket_dir is not None:
            shutil.rmtree(self._socket_dir, ignore_errors=True)
            self._socket_dir = None
        conn, self._conn, self._client = self._conn, None, None
        if conn is not None:
            conn.close()
            with anyio.move_on_after(2, shield=True):
                await conn.wait_closed()


def _route_key(host: str, port: int, socket: str | None) -> tuple[str, int]:
    """Routes and exposed ports are kept by remote address: ``(host, port)``, or a
    share's socket path with port -1 (no TCP port is negative)."""
    return (host, port) if socket is None else (socket, -1)

