"""Where the background gateway lives: a private runtime directory, its socket and pid file.

``call`` finds the daemon for its configuration by name in
``$XDG_RUNTIME_DIR/chrome-ssh-gateway/`` (else ``/tmp/chrome-ssh-gateway-<uid>/``).
Whoever can write in that directory can put their own socket there and read
every tool call, so the directory must be ours and 0700: one owned by another
user, or open to the group or world, is refused as possible tampering rather
than "fixed". The pid file is written and read with ``O_NOFOLLOW`` (a planted
symlink is refused) and 0600.

Kept free of the gateway's serving code: the shell side of ``call`` imports
this on every command, so it uses the standard library only.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gateway.errors import DaemonError

__all__ = ["DaemonPaths", "config_key", "daemon_paths", "pid_alive", "private_dir",
           "process_start", "read_pid_file", "remove_pid_file", "runtime_dir",
           "write_pid_file"]

_ENV_PREFIXES = ("CHROME_SSH_GATEWAY_", "SSH_PROXY_", "CDP_")
_ENV_NAMES = ("HOME", "XDG_CACHE_HOME", "CHROME_PATH", "MCP_DEBUG_LOG")


def runtime_dir(environ: Mapping[str, str]) -> Path:
    """``$XDG_RUNTIME_DIR/chrome-ssh-gateway`` when set (absolute), else
    ``/tmp/chrome-ssh-gateway-<uid>``."""
    base = environ.get("XDG_RUNTIME_DIR", "")
    if base.startswith("/"):
        return Path(base) / "chrome-ssh-gateway"
    return Path(f"/tmp/chrome-ssh-gateway-{os.getuid()}")


def private_dir(path: Path) -> Path:
    """``path`` as a directory of ours, mode 0700: created so when missing, refused when
    it is a symlink, someone else's, or writable (readable) by others."""
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    except OSError as exc:
        raise DaemonError(f"cannot create the runtime directory {path}: {exc.strerror}; "
                          "set XDG_RUNTIME_DIR to a directory of yours") from None
    info = os.lstat(path)
    problem = None
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode):
        problem = "it is not a plain directory"
    elif info.st_uid != os.getuid():
        problem = f"it belongs to uid {info.st_uid}, not to you"
    elif info.st_mode & 0o077:
        problem = f"its mode {stat.S_IMODE(info.st_mode):04o} lets others in"
    if problem is not None:
        raise DaemonError(f"refusing the runtime directory {path}: {problem} (possible "
                          "tampering); remove it, or set XDG_RUNTIME_DIR elsewhere")
    return path


def config_key(config_path: str | None, read_only: bool, environ: Mapping[str, str],
               tools: str | None = None) -> str:
    """A short name for "this configuration": the targets file (absolute), read-only
    mode, the tool set and the environment variables the configuration is read from.
    Two shells with the same settings share one daemon; different settings never do."""
    path = config_path if config_path is not None else environ.get("CHROME_SSH_GATEWAY_CONFIG")
    env = {name: value for name, value in sorted(environ.items())
           if name.startswith(_ENV_PREFIXES) or name in _ENV_NAMES}
    identity = {"config": os.path.abspath(path) if path else None, "read_only": read_only,
                "tools": tools, "env": env}
    return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:16]


@dataclass(frozen=True)
class DaemonPaths:
    """The files of one daemon, all in the runtime directory."""

    directory: Path
    key: str

    @property
    def socket(self) -> Path:
        return self.directory / f"{self.key}.sock"

    @property
    def pid_file(self) -> Path:
        return self.directory / f"{self.key}.pid"

    @property
    def log_file(self) -> Path:
        return self.directory / f"{self.key}.log"


def daemon_paths(config_path: str | None, read_only: bool, environ: Mapping[str, str],
                 tools: str | None = None) -> DaemonPaths:
    """The daemon files for a configuration (the directory is not created here)."""
    return DaemonPaths(runtime_dir(environ), config_key(config_path, read_only, environ, tools))


def write_pid_file(path: Path, record: Mapping[str, Any]) -> bool:
    """Create ``path`` (0600, never through a symlink) holding ``record``; False when it
    exists already (another daemon, or a stale file for the caller to judge)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                     0o600)
    except FileExistsError:
        return False
    with os.fdopen(fd, "w") as file:
        json.dump(dict(record), file)
    return True


def read_pid_file(path: Path) -> dict[str, Any] | None:
    """The record in ``path``; None when there is none or it is unreadable garbage (a
    daemon killed while writing it). A symlink is refused."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if path.is_symlink():
            raise DaemonError(f"refusing the pid file {path}: it is a symlink (possible "
                              "tampering); remove it") from None
        raise DaemonError(f"cannot read the pid file {path}: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as file:
        text = file.read(4096)
    try:
        record = json.loads(text)
    except ValueError:
        return None
    return record if isinstance(record, dict) and isinstance(record.get("pid"), int) else None


def live_record(path: Path) -> dict[str, Any] | None:
    """The record in the pid file ``path`` while its daemon runs — the same process,
    by its start time, not another that got its pid later; None otherwise (and a
    stale file is removed)."""
    record = read_pid_file(path)
    if record is None:
        return None
    pid, ticks = record["pid"], record.get("start_ticks")
    if pid_alive(pid) and (ticks is None or process_start(pid) in (ticks, None)):
        return record
    remove_pid_file(path, pid)
    return None


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` runs (signal 0 checks without sending anything). A zombie
    does not: a killed daemon whose parent never reaps it (a container's init) must
    still count as gone."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # exists, but not ours
    try:
        with open(f"/proc/{pid}/stat", "rb") as file:
            state = file.read(512).rpartition(b")")[2].split()[:1]
    except OSError:
        return True  # no /proc here: trust the signal
    return state != [b"Z"]


def process_start(pid: int) -> int | None:
    """When process ``pid`` started (clock ticks since boot, from ``/proc``), or None when
    that cannot be read. Stored in the pid file so that another process that later got
    the same pid (after a reboot, say) is never taken for the daemon — or signalled."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as file:
            fields = file.read(1024).rpartition(b")")[2].split()
    except OSError:
        return None
    return int(fields[19]) if len(fields) > 19 and fields[19].isdigit() else None


def remove_pid_file(path: Path, pid: int) -> None:
    """Remove ``path`` if it still names ``pid`` (a newer daemon's file stays)."""
    try:
        record = read_pid_file(path)
    except DaemonError:
        return
    if record is None or record.get("pid") == pid:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
