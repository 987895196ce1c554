"""The shell side of the background gateway: find it, start it, stop it, say how it is.

``call`` runs this on every command, so it stays on the standard library: a warm
``call`` must cost little more than starting Python. A daemon is *running* when
its pid file names a live process; a pid file whose process is gone is *stale*
(killed, crashed, machine rebooted) and is cleaned up, with a note that tab ids
and refs from before are gone. A daemon of another version keeps serving
``call`` (with a note) until ``daemon start`` replaces it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from gateway import __version__
from gateway.daemon.runtime_dir import (
    DaemonPaths,
    live_record,
    pid_alive,
    private_dir,
    read_pid_file,
    remove_pid_file,
)
from gateway.errors import DaemonError

__all__ = ["DaemonState", "answers", "daemon_argv", "ensure_running", "start", "state_of",
           "stop"]

START_TIMEOUT_S = 60.0
"""How long a new daemon may take to answer (it connects to every target first)."""


@dataclass(frozen=True)
class DaemonState:
    pid: int | None
    version: str | None
    running: bool
    stale: bool

    def describe(self, paths: DaemonPaths) -> str:
        if self.running:
            other = "" if self.version == __version__ else f" (this is {__version__})"
            return (f"running: pid {self.pid}, version {self.version}{other}, "
                    f"socket {paths.socket}")
        if self.stale:
            return f"not running (stale pid file of pid {self.pid} removed)"
        return "not running"


def state_of(paths: DaemonPaths) -> DaemonState:
    """The daemon's state from its pid file; a stale file (and socket) is removed."""
    record = read_pid_file(paths.pid_file)
    if record is None:
        return DaemonState(None, None, running=False, stale=False)
    pid, version = record["pid"], str(record.get("version"))
    if live_record(paths.pid_file) is not None:
        return DaemonState(pid, version, running=True, stale=False)
    if not answers(paths.socket):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(paths.socket)
    return DaemonState(pid, version, running=False, stale=True)


def answers(path: Path, timeout: float = 1.0) -> bool:
    """Whether something accepts connections on the Unix socket ``path``."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        sock.connect(str(path))
    except OSError:
        return False
    finally:
        sock.close()
    return True


def start(paths: DaemonPaths, argv: Sequence[str]) -> DaemonState:
    """Spawn ``argv`` (the daemon command) detached and wait until it answers."""
    import subprocess

    private_dir(paths.directory)
    log_fd = os.open(paths.log_file, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW
                     | os.O_CLOEXEC, 0o600)
    try:
        process = subprocess.Popen(list(argv), stdin=subprocess.DEVNULL,
                                   stdout=subprocess.DEVNULL, stderr=log_fd, close_fds=True,
                                   start_new_session=True)
    finally:
        os.close(log_fd)
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        exited = process.poll() is not None
        state = state_of(paths)
        if state.running and answers(paths.socket):
            return state  # ours, or one another shell started at the same moment
        if exited and not state.running:
            raise DaemonError(f"the gateway daemon exited at start (status "
                              f"{process.returncode}): {_tail(paths.log_file)}")
        time.sleep(0.02)
    process.kill()
    raise DaemonError(f"the gateway daemon did not answer within {START_TIMEOUT_S:.0f} s; "
                      f"see {paths.log_file}")


def stop(paths: DaemonPaths, wait_s: float = 15.0) -> DaemonState:
    """SIGTERM the daemon and wait for it to go (SIGKILL after ``wait_s``)."""
    state = state_of(paths)
    if not state.running or state.pid is None:
        return state
    os.kill(state.pid, signal.SIGTERM)
    deadline = time.monotonic() + wait_s
    while pid_alive(state.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    if pid_alive(state.pid):
        os.kill(state.pid, signal.SIGKILL)
    remove_pid_file(paths.pid_file, state.pid)
    return state


def daemon_argv(idle_timeout: float, config: str | None, read_only: bool, tools: str | None,
                log_level: str | None) -> list[str]:
    """The command ``call`` and ``daemon start`` spawn: this configuration, run."""
    argv = [sys.executable, "-m", "gateway", "daemon", "run",
            "--idle-timeout", str(idle_timeout)]
    if config is not None:
        argv += ["--config", os.path.abspath(config)]
    if read_only:
        argv.append("--read-only")
    if tools is not None:
        argv += ["--tools", tools]
    if log_level is not None:
        argv += ["--log-level", log_level]
    return argv


def ensure_running(paths: DaemonPaths, argv: Sequence[str],
                   before_start: Callable[[], object] | None = None) -> tuple[list[str], bool]:
    """A daemon answering on ``paths.socket``, started when needed (after
    ``before_start``, which may raise). Returns notes for the user (another version)
    and whether it replaced a daemon that died — whose tab ids the new one does not
    know, and may even give to other pages."""
    state = state_of(paths)
    notes: list[str] = []
    if state.running:
        if state.version != __version__:
            notes.append(f"the gateway daemon runs version {state.version}, this is "
                         f"{__version__}; `chrome-ssh-gateway daemon start` replaces it")
        deadline = time.monotonic() + START_TIMEOUT_S  # it may still be starting
        while not answers(paths.socket):
            if time.monotonic() > deadline or not pid_alive(state.pid or -1):
                raise DaemonError(f"the gateway daemon (pid {state.pid}) does not answer on "
                                  f"{paths.socket}; run: chrome-ssh-gateway daemon stop")
            time.sleep(0.02)
        return notes, False
    if before_start is not None:
        before_start()
    start(paths, argv)
    return notes, state.stale


def _tail(path: Path, limit: int = 1500) -> str:
    try:
        with open(path, "rb") as file:
            file.seek(max(0, os.fstat(file.fileno()).st_size - limit))
            text = file.read().decode("utf-8", "replace").strip()
    except OSError:
        return f"see {path}"
    return text.splitlines()[-1] if text else f"no output; see {path}"
