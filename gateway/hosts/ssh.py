"""SSH transport: one asyncssh connection per host, private forwards to Chrome.

Why in process (not an ``ssh`` subprocess): we see every failure as a typed
exception, keepalives and reconnects are ours to schedule, and opening a
channel costs no fork.

* ``SshLink`` is one connection to one host, shared by every target on that
  host (same destination and host-key policy). It reconnects lazily: the next
  ``connection()`` after a drop opens a new one.
* ``SshTransport`` is one target's view of a link: it reads DevToolsActivePort
  with one exec, fetches ``/json/version`` over a bare ``direct-tcpip`` channel
  (no listening socket at all) and reaches the browser websocket through a
  Unix-socket forward in a 0700 directory of its own, so no other local user
  can use the tunnel. A TCP port opens only when ``expose_port`` asks for one,
  and then on 127.0.0.1 only.

Ciphers: unless ssh_config names them (``Ciphers``), AES-GCM comes first. asyncssh's
own first choice, chacha20-poly1305, is computed per packet in Python around
``cryptography`` primitives, and every CDP message is at least one packet.

Host keys are checked against the known_hosts files ssh_config names for the
host (``UserKnownHostsFile``, else ``~/.ssh/known_hosts``). ``accept-new``
records the key of a host that has *no* entry yet; a host whose key differs
from its entry is refused under every policy.

Each connect attempt leaves a ``ConnectProgress`` on its link (the options
used, the host-key verdict, when authentication began), so ``doctor`` can
report the key exchange and the login as separate steps of the same connect.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import anyio
import asyncssh
import structlog
from websockets.asyncio.client import ClientConnection

from gateway.browsers.cdp import open_websocket
from gateway.browsers.discovery import (
    DEFAULT_PROFILE_DIRS,
    Endpoint,
    active_port_command,
    parse_active_port_listing,
)
from gateway.config import CdpAddress, HostKeyPolicy, ReconnectPolicy, SshDestination
from gateway.errors import DiscoveryError, HostKeyError, TunnelError
from gateway.hosts.local import http_get_over

__all__ = ["ConnectProgress", "HostKeyVerdict", "SshLink", "SshTransport", "cipher_preference"]

log = structlog.get_logger("gateway.ssh")

_AES_GCM = (b"aes128-gcm@openssh.com", b"aes256-gcm@openssh.com")


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


@dataclass(frozen=True)
class HostKeyVerdict:
    """Why a host key was not trusted outright by known_hosts, and what happened to it.

    ``unknown``: no entry for the host (refused under ``strict``); ``changed``: an
    entry with a different key (always refused); ``recorded``: ``accept-new``
    wrote it to ``known_hosts``; ``accepted``: ``accept-new`` took it for this
    connection only (a link that records nothing, as the doctor's).
    """

    kind: Literal["unknown", "changed", "recorded", "accepted"]
    alias: str               # as configured (an ssh_config alias or a hostname)
    host: str                # what known_hosts is matched against (HostName)
    port: int
    fingerprint: str         # SHA256:… of the key the host offered
    known_hosts: str         # the file that holds (or would hold) the entry

    @property
    def named(self) -> str:
        return self.alias if self.alias == self.host else f"{self.alias} ({self.host})"

    def message(self) -> str:
        if self.kind == "changed":
            return (f"the host key of {self.named} CHANGED: {self.known_hosts} holds a different "
                    f"key (the host now offers {self.fingerprint}). This can be an attack; "
                    "if the host was reinstalled, remove the old entry with "
                    f"`ssh-keygen -R {self.host} -f {self.known_hosts}` and retry")
        if self.kind == "unknown":
            return (f"the host key of {self.named} ({self.fingerprint}) is not in "
                    f"{self.known_hosts}. Check the fingerprint, then record it with "
                    f'`ssh {self.alias}` once, or set host_key_policy = "accept-new" for this '
                    "target")
        done = "recorded in" if self.kind == "recorded" else "accepted without recording it in"
        return f"new host key of {self.named} ({self.fingerprint}) {done} {self.known_hosts}"


@dataclass
class ConnectProgress:
    """How far one connect attempt got: read by ``doctor`` to time and explain its steps."""

    options: asyncssh.SSHClientConnectionOptions | None = None
    host_key: HostKeyVerdict | None = None   # None: known_hosts trusted the key outright
    auth_started: float | None = None         # time.monotonic() when the host key was accepted
    server_key: asyncssh.SSHKey | None = None  # the accepted host key, from then on


class _HostKeyCheck(asyncssh.SSHClient):
    """Called by asyncssh only for a key that known_hosts does not already trust.

    Records *why* it was not trusted (no entry vs. a different key) so the
    error can say which fix applies, and implements ``accept-new``.
    """

    def __init__(self, link: SshLink, progress: ConnectProgress) -> None:
        self._link = link
        self.progress = progress
        self._conn: asyncssh.SSHClientConnection | None = None

    def connection_made(self, conn: asyncssh.SSHClientConnection) -> None:
        self._conn = conn

    def connection_lost(self, exc: Exception | None) -> None:
        self._link.lost(self, exc)

    def begin_auth(self, username: str) -> None:
        # Key exchange is over and the host key accepted: the login starts now.
        self.progress.auth_started = time.monotonic()
        if self._conn is not None:
            self.progress.server_key = self._conn.get_server_host_key()

    def validate_host_public_key(
        self, host: str, addr: str, port: int, key: asyncssh.SSHKey
    ) -> bool:
        files = self._link.known_hosts_files
        existing = [f for f in files if Path(f).expanduser().is_file()]
        known: Sequence[asyncssh.SSHKey] = ()
        if existing:
            known = asyncssh.read_known_hosts(existing).match(host, addr, port)[0]
        target_file = Path(files[0]).expanduser() if files else Path.home() / ".ssh/known_hosts"
        kind: Literal["unknown", "changed", "recorded", "accepted"]
        if known:
            kind = "changed"
            target_file = Path(existing[0])
        elif self._link.host_key_policy != "accept-new":
            kind = "unknown"
        else:
            kind = "recorded" if self._link.record_new_keys else "accepted"
        verdict = HostKeyVerdict(kind, self._link.destination.host, host, port,
                                 key.get_fingerprint(), str(target_file))
        self.progress.host_key = verdict
        if kind in ("changed", "unknown"):
            return False
        if kind == "recorded":
            _record_host_key(target_file, host, port, key)
            log.warning("recorded new host key", host=host, fingerprint=verdict.fingerprint,
                        known_hosts=str(target_file))
        return True


def _record_host_key(path: Path, host: str, port: int, key: asyncssh.SSHKey) -> None:
    """Append ``host key`` to a known_hosts file, creating it 0600 (dir 0700) if needed."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    entry = host if port == 22 else f"[{host}]:{port}"
    line = f"{entry} {key.export_public_key('openssh').decode().strip()}\n"
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "a") as f:
        f.write(line)


class SshLink:
    """One SSH connection to one host, opened on demand and shared."""

    def __init__(
        self, destination: SshDestination, host_key_policy: HostKeyPolicy,
        policy: ReconnectPolicy, *, record_new_keys: bool = True,
    ) -> None:
        self.destination = destination
        self.host_key_policy = host_key_policy
        self.record_new_keys = record_new_keys  # False: accept-new never writes (doctor)
        self._policy = policy
        self._conn: asyncssh.SSHClientConnection | None = None
        self._client: _HostKeyCheck | None = None
        self._lock = anyio.Lock()
        self.known_hosts_files: list[str] = []
        self.progress = ConnectProgress()  # of the latest connect attempt

    def lost(self, client: _HostKeyCheck, exc: Exception | None) -> None:
        if client is self._client:
            log.info("ssh connection lost", host=str(self.destination), reason=str(exc or "closed"))
            self._conn = None
            self._client = None

    async def connection(self, target: str) -> asyncssh.SSHClientConnection:
        async with self._lock:
            if self._conn is None:
                self._conn = await self._open(target)
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

    async def _open(self, target: str) -> asyncssh.SSHClientConnection:
        dest = self.destination
        progress = self.progress = ConnectProgress()
        client = _HostKeyCheck(self, progress)
        try:
            options = progress.options = await self.connect_options()
            existing = [f for f in self.known_hosts_files if Path(f).expanduser().is_file()]
            # A known_hosts file that does not exist yet (a fresh machine) is an empty
            # one — never "no checking", which is what None would mean to asyncssh.
            trusted = existing or asyncssh.import_known_hosts("")
            with anyio.fail_after(self._policy.connect_timeout_s + 1):
                conn = await asyncssh.connect(dest.host, options=options, known_hosts=trusted,
                                              client_factory=lambda: client)
        except asyncssh.HostKeyNotVerifiable as exc:
            verdict = progress.host_key
            raise HostKeyError(target, verdict.message() if verdict else str(exc)) from None
        except asyncssh.PermissionDenied:
            raise TunnelError(target, f"SSH login to {dest} refused (no accepted key). Check "
                              "that your key is in ssh-agent or named by IdentityFile, and in "
                              "the remote authorized_keys") from None
        except TimeoutError:
            raise TunnelError(target, f"SSH connect to {dest} timed out after "
                              f"{self._policy.connect_timeout_s:g} s") from None
        except (OSError, asyncssh.Error, ValueError) as exc:
            text = getattr(exc, "reason", "") or str(exc) or type(exc).__name__
            raise TunnelError(target, f"SSH connect to {dest} failed: {text}") from None
        self._client = client
        log.info("ssh connected", host=str(dest), peer=conn.get_extra_info("peername"),
                 cipher=conn.get_extra_info("send_cipher"))
        return conn

    @property
    def current(self) -> asyncssh.SSHClientConnection | None:
        """The open connection, if any — without opening one."""
        return self._conn

    def drop(self, conn: asyncssh.SSHClientConnection) -> None:
        """Abandon a connection found dead: abort it (a polite close would wait on the
        dead peer) so every channel over it fails now and the next use reconnects."""
        if conn is self._conn:
            log.info("ssh connection dropped: host stopped answering", host=str(self.destination))
            self._conn = None
            self._client = None
        conn.abort()

    async def aclose(self) -> None:
        conn, self._conn, self._client = self._conn, None, None
        if conn is not None:
            conn.close()
            with anyio.move_on_after(2, shield=True):
                await conn.wait_closed()


class SshTransport:
    """A target's use of an ``SshLink``: discovery I/O and the private forward."""

    kind = "ssh"

    def __init__(self, target: str, link: SshLink, expose_port: int | None) -> None:
        self._target = target
        self._link = link
        self._expose_port = expose_port
        self.host_label = str(link.destination)
        self._socket_dir: str | None = None
        self._forward: tuple[asyncssh.SSHClientConnection, Endpoint, asyncssh.SSHListener] | None
        self._forward = None
        self._exposed: tuple[asyncssh.SSHClientConnection, Endpoint, asyncssh.SSHListener] | None
        self._exposed = None

    def default_profile_dirs(self) -> Sequence[str]:
        return DEFAULT_PROFILE_DIRS

    async def connect(self) -> None:
        await self._link.connection(self._target)

    async def read_active_ports(
        self, dirs: list[str], timeout_s: float
    ) -> list[tuple[str, int, str]]:
        conn = await self._link.connection(self._target)
        try:
            with anyio.fail_after(timeout_s):
                result = await conn.run(active_port_command(dirs), check=False)
        except TimeoutError:
            raise DiscoveryError(self._target, "reading DevToolsActivePort over SSH timed "
                                 f"out after {timeout_s:g} s") from None
        except (OSError, asyncssh.Error) as exc:
            raise DiscoveryError(self._target, f"could not run a command over SSH to read "
                                 f"DevToolsActivePort ({exc})") from None
        stdout = result.stdout if isinstance(result.stdout, str) else ""
        return parse_active_port_listing(stdout)

    async def http_get(
        self, address: CdpAddress, path: str, timeout_s: float
    ) -> tuple[int, bytes]:
        conn = await self._link.connection(self._target)
        try:
            with anyio.fail_after(timeout_s):
                reader, writer = await conn.open_connection(address.host, address.port,
                                                            encoding=None)
                return await http_get_over(reader, writer, address, path)  # type: ignore[arg-type]
        except TimeoutError:
            raise DiscoveryError(self._target, f"no HTTP answer within {timeout_s:g} s") from None
        except asyncssh.ChannelOpenError as exc:
            raise DiscoveryError(self._target, f"nothing listens there ({exc.reason})") from None
        except (OSError, asyncssh.Error, ValueError) as exc:
            raise DiscoveryError(self._target, str(exc) or type(exc).__name__) from None

    async def open_websocket(self, endpoint: Endpoint, timeout_s: float) -> ClientConnection:
        conn = await self._link.connection(self._target)
        path = await self._forward_to(conn, endpoint)
        url = f"ws://{endpoint.address}{endpoint.browser_path}"
        ws = await open_websocket(url, unix_path=path, target=self._target, timeout_s=timeout_s)
        if self._expose_port is not None:
            await self._expose(conn, endpoint, self._expose_port)
        return ws

    async def link_alive(self, endpoint: Endpoint, timeout_s: float) -> bool:
        """Open (and close) a channel to the endpoint: any answer from sshd — even "nothing
        listens there" — proves the link works; silence means it is dead."""
        conn = self._link.current
        if conn is None:
            return False
        try:
            with anyio.fail_after(timeout_s):
                _, writer = await conn.open_connection(endpoint.host, endpoint.port)
            writer.close()
            return True
        except asyncssh.ChannelOpenError:
            return True
        except (TimeoutError, OSError, asyncssh.Error):
            self._link.drop(conn)
            return False

    async def _forward_to(self, conn: asyncssh.SSHClientConnection, endpoint: Endpoint) -> str:
        if self._socket_dir is None:
            self._socket_dir = tempfile.mkdtemp(prefix="csgw-")  # mode 0700
        path = os.path.join(self._socket_dir, "cdp.sock")
        if self._forward is not None:
            old_conn, old_endpoint, listener = self._forward
            if old_conn is conn and old_endpoint == endpoint:
                return path
            listener.close()
            self._forward = None
        if os.path.lexists(path):
            os.unlink(path)  # asyncssh leaves the socket file behind when a listener closes
        try:
            listener = await conn.forward_local_path_to_port(path, endpoint.host, endpoint.port)
        except (OSError, asyncssh.Error) as exc:
            raise TunnelError(self._target, f"could not forward to {endpoint.address} on "
                              f"{self.host_label}: {exc}") from None
        self._forward = (conn, endpoint, listener)
        return path

    async def _expose(
        self, conn: asyncssh.SSHClientConnection, endpoint: Endpoint, port: int
    ) -> None:
        """The opt-in TCP forward for other tools: 127.0.0.1 only, never another interface."""
        if self._exposed is not None:
            old_conn, old_endpoint, listener = self._exposed
            if old_conn is conn and old_endpoint == endpoint:
                return
            listener.close()
            await listener.wait_closed()
        try:
            listener = await conn.forward_local_port("127.0.0.1", port, endpoint.host,
                                                     endpoint.port)
        except (OSError, asyncssh.Error) as exc:
            self._exposed = None
            log.warning("could not expose the tunnel on 127.0.0.1", port=port, error=str(exc),
                        target=self._target)
            return
        self._exposed = (conn, endpoint, listener)
        log.info("tunnel exposed", target=self._target, local=f"127.0.0.1:{port}",
                 remote=endpoint.address)

    async def aclose(self) -> None:
        for entry in (self._forward, self._exposed):
            if entry is not None:
                entry[2].close()
        self._forward = self._exposed = None
        if self._socket_dir is not None:
            shutil.rmtree(self._socket_dir, ignore_errors=True)
            self._socket_dir = None
