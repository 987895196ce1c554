"""Host keys: checked against known_hosts, ``accept-new`` recorded, every refusal explained.

asyncssh checks a key against the known_hosts entries it is given and calls
``validate_host_public_key`` only for a key they do not trust. That hook is
where we learn *why* (no entry at all vs. a different key, which can be an
attack) so the error names the fix that applies, and where ``accept-new``
records the key of a host that has no entry yet — never one that changed.

Each connect attempt also leaves a ``ConnectProgress`` (options used, the
verdict, when authentication began), so ``doctor`` can report the key
exchange and the login as separate steps of the same connect.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import asyncssh
import structlog

from gateway.config import HostKeyPolicy

__all__ = ["ConnectProgress", "HostKeyCheck", "HostKeyVerdict"]

log = structlog.get_logger("gateway.ssh")


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


class HostKeyCheck(asyncssh.SSHClient):
    """Called by asyncssh only for a key that known_hosts does not already trust.

    Records *why* it was not trusted (no entry vs. a different key) so the
    error can say which fix applies, and implements ``accept-new``.
    """

    def __init__(
        self, alias: str, known_hosts_files: Sequence[str], policy: HostKeyPolicy, *,
        record_new_keys: bool, progress: ConnectProgress,
        on_lost: Callable[[HostKeyCheck, Exception | None], None],
    ) -> None:
        self._alias = alias
        self._files = list(known_hosts_files)
        self._policy = policy
        self._record = record_new_keys  # False: accept-new never writes (doctor)
        self._on_lost = on_lost
        self.progress = progress
        self._conn: asyncssh.SSHClientConnection | None = None

    def connection_made(self, conn: asyncssh.SSHClientConnection) -> None:
        self._conn = conn

    def connection_lost(self, exc: Exception | None) -> None:
        self._on_lost(self, exc)

    def begin_auth(self, username: str) -> None:
        # Key exchange is over and the host key accepted: the login starts now.
        self.progress.auth_started = time.monotonic()
        if self._conn is not None:
            self.progress.server_key = self._conn.get_server_host_key()

    def validate_host_public_key(
        self, host: str, addr: str, port: int, key: asyncssh.SSHKey
    ) -> bool:
        files = self._files
        existing = [f for f in files if Path(f).expanduser().is_file()]
        known: Sequence[asyncssh.SSHKey] = ()
        if existing:
            known = asyncssh.read_known_hosts(existing).match(host, addr, port)[0]
        target_file = Path(files[0]).expanduser() if files else Path.home() / ".ssh/known_hosts"
        kind: Literal["unknown", "changed", "recorded", "accepted"]
        if known:
            kind = "changed"
            target_file = Path(existing[0])
        elif self._policy != "accept-new":
            kind = "unknown"
        else:
            kind = "recorded" if self._record else "accepted"
        verdict = HostKeyVerdict(kind, self._alias, host, port,
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
