"""What the browser layer needs from a machine: the ``Host`` interface.

A host is where browsers run: this machine (``LocalHost``) or one reached over
SSH (``SshHost``, one asyncssh connection shared by every browser on it). It
knows nothing of Chrome: it runs a command, reads files, sends an HTTP request to
a port on *its* side, makes a private local route to such a port for a websocket
client, puts files of this machine where its browsers can read them, and copies a
file of its own back (a browser's download).
Discovery strategies, the launcher and the browser supervisor are written
against this interface only, so a Chrome on this machine and one three SSH hops
away go through the same code.

Paths may start with ``~/``, and relative ones are relative to the user's home
(where an SSH exec starts).
Failures raise ``HostError`` (reason only; the browser layer names the target).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import BinaryIO, Literal, Protocol

from gateway.hosts.held import Held
from gateway.hosts.http import HttpResponse
from gateway.output.files import Readable

__all__ = ["FileText", "Host", "HostKind", "Route", "Staged"]

HostKind = Literal["ssh", "local"]


@dataclass(frozen=True)
class FileText:
    """A file read on a host: ``path`` as the host resolved it (``~/`` expanded)."""

    path: str
    text: str


@dataclass(frozen=True)
class Route:
    """How a local client reaches ``host:port`` on the host's side.

    ``unix_path`` is a Unix socket in a 0700 directory of the gateway's (an SSH
    forward, private to this user) or a share's own socket on this machine; None means
    connect to ``host:port`` directly (the host is this machine).
    """

    host: str
    port: int
    unix_path: str | None


@dataclass(frozen=True)
class Staged:
    """Files of this machine as the host's browsers can read them: ``paths`` in the
    order given, all inside ``directory`` — a private (0700) temporary directory the
    caller removes when done (``run`` ``rm -rf``) — or None when they were not copied
    (the host is this machine)."""

    directory: str | None
    paths: tuple[str, ...]


class Host(Protocol):
    """One machine, as the browser layer uses it."""

    @property
    def kind(self) -> HostKind: ...

    @property
    def label(self) -> str:
        """For messages: ``alice@devvm`` / ``this machine``."""

    async def connect(self) -> None:
        """Make sure the host is reachable now (idempotent); ``HostError`` otherwise."""

    async def run(self, command: str, timeout_s: float) -> str:
        """Run a shell command on the host; its standard output (exit status ignored)."""

    async def hold(self, command: str, until: str, timeout_s: float) -> tuple[str, Held | None]:
        """Run a shell command with its stdin held open (``gateway.hosts.held``): what
        it printed before the line ``until`` and the hold, or all it printed and None
        when it ended first. The command sees the end of its input when released, when
        the gateway exits or dies, or when the SSH connection goes."""

    async def read_files(self, paths: Sequence[str], timeout_s: float) -> dict[str, FileText]:
        """Each readable file among ``paths``, keyed by the path as asked (one round
        trip for all). A ``/*/`` segment matches every directory there (the Windows
        users under WSL's ``/mnt/c/Users``): each file found so is keyed by its own path."""

    async def stage_files(self, files: Sequence[Readable], timeout_s: float) -> Staged:
        """Make ``files`` (already confined and size-checked) readable on the host; each
        is opened again without following links and must still be the same regular file
        (else ``InvalidArgument``)."""

    async def fetch_file(self, path: str, into: BinaryIO, max_bytes: int,
                         timeout_s: float) -> int:
        """Copy the host's regular file ``path`` (never through a final link) into
        ``into``, byte for byte, reporting the bytes as progress: its size. ``HostError``
        for anything else there, one over ``max_bytes`` (before or while copied), or a
        copy that fails or runs out of ``timeout_s``."""

    async def http_request(self, host: str, port: int, path: str, timeout_s: float, *,
                           method: str = "GET", body: bytes | None = None,
                           socket: str | None = None) -> HttpResponse:
        """One HTTP request to ``host:port`` on the host's side (``GET`` unless told) —
        or, with ``socket``, to that Unix socket there (a share: ``host:port`` then only
        names the ``Host`` header)."""

    async def route(self, host: str, port: int, *, socket: str | None = None) -> Route:
        """A private local route to ``host:port`` on the host's side — or to the Unix
        socket ``socket`` there — kept until ``release``; asking again for the same
        address reuses it."""

    def release(self, host: str, port: int, *, socket: str | None = None) -> None:
        """Close the route (and any exposed port) to ``host:port`` (or ``socket``), if
        there is one."""

    async def expose(self, local_port: int, host: str, port: int) -> None:
        """Also serve ``host:port`` on 127.0.0.1:``local_port`` of this machine, for
        other tools (opt-in; never another interface). Failure is logged, not raised."""

    async def alive(self, host: str, port: int, timeout_s: float) -> bool:
        """Whether the host still answers at all — asked when a browser did not, to
        tell a hung page from a dead link. On ``False`` the dead connection has been
        dropped, so the next use reconnects at once."""

    async def aclose(self) -> None: ...
