"""Real remote hosts for end-to-end tests: sshd + Chromium inside Linux network namespaces.

Each host ``hN`` is a network namespace ``csgw-hN`` joined to the root namespace by a veth
pair in a private /30 (``10.231.N.1`` root side, ``10.231.N.2`` namespace side); with
``CSGW_TOPOLOGY_SLOT=K`` every name, path and subnet is shifted (``csgwK-hN``, 10.231+K)
so separate runs never share hosts. Inside it
run an OpenSSH ``sshd`` listening on the namespace address only, and a headless Chromium
started as the login user ``csgw`` with ``--remote-debugging-port=0``.  Chromium listens on
the namespace's own loopback, so the only way to reach it from the root namespace is an SSH
tunnel — exactly the situation the gateway is built for.

The user ``csgw`` exists only inside the namespaces: ``ip netns exec`` bind-mounts the files
in ``/etc/netns/<ns>/`` over ``/etc``, and we put a ``passwd``/``group`` there that are the
machine's own plus one line.  The machine's ``/etc`` is never modified.

Everything we create carries the ``csgw`` prefix and is recorded under ``/tmp/csgw-topology``
so that :func:`down` can remove a crashed run: processes are killed by recorded PID (checked
against their command line), by ``ip netns pids``, and by the namespace-only uid.

Layout of the state directory::

    /tmp/csgw-topology/            root 0711 (traversable: the homes below live here)
      topology.json                what load() reads
      client/                      root 0700  HOME for the gateway (.ssh/config, key, known_hosts)
      hN/                          root 0711
        state/                     root 0700  sshd_config, host keys, pid files, logs
        home/                      csgw 0700  the login user's home; Chromium profile inside

The processes outlive the Python process that started them (new session, no parent
ownership); :func:`down` is what ends them.  Used by ``tests/e2e/conftest.py`` and the
benchmarks, and as a CLI::

    python -m tests.topology up [--hosts N]
    python -m tests.topology status
    python -m tests.topology down
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import fcntl
import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TypeVar

__all__ = [
    "CHROMIUM",
    "PREFIX",
    "ROOT",
    "SSHD",
    "RemoteHost",
    "Topology",
    "down",
    "load",
    "missing_requirements",
    "up",
]


def _slot() -> int:
    """``CSGW_TOPOLOGY_SLOT`` (0-9) picks one of several independent topologies, so
    separate test runs on one machine (e.g. parallel work trees) never share hosts.
    Slot 0, the default, keeps the plain ``csgw`` names."""
    text = os.environ.get("CSGW_TOPOLOGY_SLOT", "").strip() or "0"
    if not (text.isdigit() and len(text) == 1):
        raise RuntimeError(f"CSGW_TOPOLOGY_SLOT={text!r}: expected one digit 0-9")
    return int(text)


SLOT = _slot()
PREFIX = "csgw" if SLOT == 0 else f"csgw{SLOT}"
ROOT = Path(f"/tmp/{PREFIX}-topology")
STATE_FILE = "topology.json"
LOCK_FILE = Path("/run/lock" if Path("/run/lock").is_dir() else "/tmp") / f"{PREFIX}-topology.lock"
SSHD = "/usr/sbin/sshd"
CHROMIUM = "/usr/lib/chromium/chromium"
USER = "csgw"
UID = 4231 + SLOT
SSH_PORT = 22
SUBNET = f"10.{231 + SLOT}"  # host N gets 10.231.N.0/30 (slot 0)
ROUTE_PROTO = str(231 + SLOT)  # tags our safety routes in the root namespace
ROUTE_METRIC = "4231"

CHROME_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)

_T = TypeVar("_T")


# --------------------------------------------------------------------------- small helpers


def _which(name: str, *fallbacks: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    for candidate in fallbacks:
        if os.access(candidate, os.X_OK):
            return candidate
    return None


def _ip() -> str:
    found = _which("ip", "/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip")
    if found is None:
        raise RuntimeError("`ip` (iproute2) is not installed")
    return found


def missing_requirements() -> list[str]:
    """What keeps the topology from running here (empty when everything is present)."""
    missing: list[str] = []
    if os.geteuid() != 0:
        missing.append("must run as root (network namespaces, sshd, setpriv)")
    if not os.access(SSHD, os.X_OK):
        missing.append(f"{SSHD} missing (apt-get install openssh-server)")
    if not os.access(CHROMIUM, os.X_OK):
        missing.append(f"{CHROMIUM} missing (apt-get install chromium)")
    if _which("ip", "/usr/sbin/ip", "/sbin/ip") is None:
        missing.append("`ip` missing (apt-get install iproute2)")
    for tool in ("ssh-keygen", "setpriv"):
        if _which(tool, f"/usr/bin/{tool}") is None:
            missing.append(f"`{tool}` missing")
    return missing


def _run(*argv: str, check: bool = True, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        argv, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL
    )
    if check and proc.returncode != 0:
        raise RuntimeError(
            f"command failed ({proc.returncode}): {' '.join(argv)}\n{proc.stderr.strip()}"
        )
    return proc


def _write(path: Path, text: str, mode: int = 0o600) -> None:
    """Write a file atomically-enough with ``mode``, never following a symlink at ``path``."""
    tmp = path.with_name(f".{path.name}.tmp")
    with contextlib.suppress(FileNotFoundError):
        tmp.unlink()
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
    with os.fdopen(fd, "w") as fh:
        fh.write(text)
    os.chmod(tmp, mode)
    os.replace(tmp, path)


def _mkdir(path: Path, mode: int, uid: int = 0, gid: int = 0) -> None:
    path.mkdir(mode=mode, exist_ok=True)
    st = path.lstat()
    if not stat.S_ISDIR(st.st_mode):
        raise RuntimeError(f"{path} exists and is not a directory")
    os.chown(path, uid, gid)
    os.chmod(path, mode)


def _wait_for(
    what: str, probe: Callable[[], _T | None], timeout: float, interval: float = 0.02
) -> _T:
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if value is not None and value is not False:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(interval)


# ---------------------------------------------------------------------------- processes


def _proc_state(pid: int) -> str | None:
    """The one-letter state of ``pid`` from /proc, or None when it does not exist."""
    try:
        data = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    # "pid (comm) S ..." — comm may contain spaces/parens, so split at the last ')'.
    return data.rpartition(")")[2].split()[0]


def _proc_ppid(pid: int) -> int | None:
    try:
        data = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return int(data.rpartition(")")[2].split()[1])


def _proc_cmdline(pid: int) -> list[str]:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except (FileNotFoundError, ProcessLookupError):
        return []
    return [part.decode(errors="replace") for part in raw.split(b"\0") if part]


def _proc_uid(pid: int) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("Uid:"):
                return int(line.split()[1])
    except (FileNotFoundError, ProcessLookupError):
        return None
    return None


def _reap(pid: int) -> None:
    """Collect ``pid`` if it is our own child (harmless otherwise)."""
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)


def _alive(pid: int) -> bool:
    _reap(pid)
    state = _proc_state(pid)
    return state is not None and state not in ("Z", "X")


def _all_pids() -> list[int]:
    return [int(name) for name in os.listdir("/proc") if name.isdigit()]


def _ours(pid: int) -> bool:
    """A process we started: its command line names our state directory."""
    return any(str(ROOT) in arg for arg in _proc_cmdline(pid))


def _descendants(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for other in _all_pids():
        ppid = _proc_ppid(other)
        if ppid is not None:
            children.setdefault(ppid, []).append(other)
    found: list[int] = []
    stack = list(children.get(pid, []))
    while stack:
        child = stack.pop()
        found.append(child)
        stack.extend(children.get(child, []))
    return found


def _signal(pids: Iterable[int], sig: int) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


def _terminate(pids: list[int], grace: float) -> None:
    """SIGTERM, wait up to ``grace`` seconds, then SIGKILL whatever is left, and wait."""
    pids = [pid for pid in pids if pid != os.getpid()]
    _signal(pids, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while any(_alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.02)
    left = [pid for pid in pids if _alive(pid)]
    if left:
        _signal(left, signal.SIGKILL)
        with contextlib.suppress(TimeoutError):
            _wait_for("killed processes to exit", lambda: not any(_alive(p) for p in left), 5)


def _read_pid(path: Path) -> int | None:
    try:
        return int(path.read_text().split()[0])
    except (FileNotFoundError, ValueError, IndexError):
        return None


_DAEMON_ENV = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C"}


def _spawn(argv: list[str], log: Path) -> int:
    """Start ``argv`` detached: own session, no inherited fds or environment, cwd /."""
    with open(log, "ab", buffering=0) as out:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            close_fds=True,
            start_new_session=True,
            cwd="/",
            env=_DAEMON_ENV,
        )
    # Dropping the Popen object neither kills nor waits: the child outlives us, and if it
    # dies while we are alive, subprocess's _active list or _reap() collects the zombie.
    return proc.pid


# --------------------------------------------------------------------- network namespaces

_CLONE_NEWNET = 0x40000000
_libc = ctypes.CDLL(None, use_errno=True)


def _in_netns(netns: str, fn: Callable[[], _T]) -> _T:
    """Run ``fn`` on a fresh thread that has entered ``netns`` (sockets it opens live there).

    ``setns(CLONE_NEWNET)`` switches only the calling thread, so the rest of the process
    is unaffected and the thread is simply discarded afterwards.
    """
    box: dict[str, Any] = {}

    def runner() -> None:
        try:
            fd = os.open(f"/run/netns/{netns}", os.O_RDONLY | os.O_CLOEXEC)
            try:
                if _libc.setns(fd, _CLONE_NEWNET) != 0:
                    err = ctypes.get_errno()
                    raise OSError(err, f"setns({netns}): {os.strerror(err)}")
            finally:
                os.close(fd)
            box["value"] = fn()
        except BaseException as exc:  # handed to the calling thread
            box["error"] = exc

    thread = threading.Thread(target=runner, name=f"netns-{netns}", daemon=True)
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box["value"]  # type: ignore[no-any-return]


def _http_get(host: str, port: int, path: str, timeout: float = 2.0) -> tuple[int, bytes]:
    """A minimal HTTP/1.1 GET (Chrome's DevTools server refuses HTTP/1.0)."""
    with socket.create_connection((host, port), timeout=timeout) as sock:
        request = f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nConnection: close\r\n\r\n"
        sock.sendall(request.encode())
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        length = None
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value.strip())
        while length is None or len(body) < length:
            chunk = sock.recv(65536)
            if not chunk:
                break
            body += chunk
    status = int(head.split(b" ", 2)[1]) if head.startswith(b"HTTP/") else 0
    return status, body


def _tcp_banner(host: str, port: int, timeout: float = 1.0) -> bytes:
    with socket.create_connection((host, port), timeout=timeout) as sock:
        return sock.recv(64)


def _netns_names() -> list[str]:
    proc = _run(_ip(), "netns", "list", check=False)
    return [line.split()[0] for line in proc.stdout.splitlines() if line.strip()]


def _links() -> list[str]:
    proc = _run(_ip(), "-o", "link", "show", check=False)
    names = []
    for line in proc.stdout.splitlines():
        parts = line.split(":", 2)
        if len(parts) >= 2:
            names.append(parts[1].strip().split("@")[0])
    return names


# ---------------------------------------------------------------------------------- hosts


@dataclass
class RemoteHost:
    """One simulated remote machine: a network namespace with sshd and Chromium."""

    name: str
    netns: str
    address: str
    user: str
    home: Path
    profile_dir: Path
    uid: int = UID
    ssh_port: int = SSH_PORT
    state_dir: Path = field(default=Path())
    veth: str = ""  # root-namespace side of the veth pair
    veth_peer: str = ""  # namespace side
    gateway_address: str = ""  # root-namespace side address (.1)

    # -- file locations ------------------------------------------------------------------

    @property
    def devtools_active_port_file(self) -> Path:
        return self.profile_dir / "DevToolsActivePort"

    @property
    def host_key(self) -> Path:
        return self.state_dir / "ssh_host_ed25519_key"

    @property
    def known_host_key(self) -> Path:
        """The host key the client's known_hosts trusts (restored by :meth:`reset`)."""
        return self.state_dir / "ssh_host_ed25519_key.known"

    @property
    def sshd_config(self) -> Path:
        return self.state_dir / "sshd_config"

    @property
    def sshd_pid_file(self) -> Path:
        return self.state_dir / "sshd.pid"

    @property
    def sshd_log(self) -> Path:
        return self.state_dir / "sshd.log"

    @property
    def chrome_pid_file(self) -> Path:
        return self.state_dir / "chrome.pid"

    @property
    def chrome_log(self) -> Path:
        return self.state_dir / "chrome.log"

    def netns_exec(self, *argv: str) -> list[str]:
        """The argv that runs ``argv`` inside this host (as root, with the host's /etc)."""
        return [_ip(), "netns", "exec", self.netns, *argv]

    def run_in_netns(self, fn: Callable[[], _T]) -> _T:
        """Call ``fn`` on a thread inside this host's network namespace (sockets live there)."""
        return _in_netns(self.netns, fn)

    # -- Chromium ------------------------------------------------------------------------

    def chrome_pid(self) -> int | None:
        pid = _read_pid(self.chrome_pid_file)
        if pid is None or not _alive(pid) or not _ours(pid):
            return None
        return pid

    def chrome_port(self, timeout: float = 10.0) -> int:
        """The DevTools port from DevToolsActivePort (waits up to ``timeout`` for the file)."""

        def read() -> int | None:
            try:
                first = self.devtools_active_port_file.read_text().split("\n", 1)[0].strip()
            except FileNotFoundError:
                return None
            return int(first) if first.isdigit() and int(first) > 0 else None

        return _wait_for(f"{self.devtools_active_port_file}", read, timeout)

    def devtools_version(self, port: int | None = None) -> dict[str, Any]:
        """``GET /json/version`` from inside the host (Chrome listens on its loopback only)."""
        port = self.chrome_port() if port is None else port
        status, body = self.run_in_netns(lambda: _http_get("127.0.0.1", port, "/json/version"))
        if status != 200:
            raise RuntimeError(f"{self.name}: /json/version answered {status}")
        result: dict[str, Any] = json.loads(body)
        return result

    def _chrome_ready(self, port: int) -> bool:
        try:
            self.devtools_version(port)
        except (OSError, RuntimeError, ValueError):
            return False
        return True

    def _spawn_chrome(self, port: int) -> int:
        if self.chrome_pid() is not None:
            raise RuntimeError(f"{self.name}: Chromium already running; use restart_chrome()")
        # A stale DevToolsActivePort (Chrome never deletes it) would make us read an old
        # port; the harness removes it so "started" means "wrote a fresh one".
        with contextlib.suppress(FileNotFoundError):
            self.devtools_active_port_file.unlink()
        argv = self.netns_exec(
            "setpriv",
            f"--reuid={self.uid}",
            f"--regid={self.uid}",
            "--clear-groups",
            "env",
            "-i",
            f"HOME={self.home}",
            "PATH=/usr/bin:/bin",
            "LANG=C.UTF-8",
            f"TMPDIR={self.home / 'tmp'}",  # Chromium's SingletonSocket dir, not /tmp
            # Crashpad keeps its database under the *default* profile dir; point that at
            # our profile so h2 has no ~/.config/chromium at all (as with Google Chrome).
            f"CHROME_CONFIG_HOME={self.profile_dir}",
            CHROMIUM,
            *CHROME_FLAGS,
            f"--remote-debugging-port={port}",
            f"--user-data-dir={self.profile_dir}",
            "about:blank",
        )
        # `ip netns exec`, setpriv and env all exec(), so the PID is Chromium's browser PID.
        pid = _spawn(argv, self.chrome_log)
        _write(self.chrome_pid_file, f"{pid}\n")
        return pid

    def _await_chrome(self, pid: int, timeout: float = 30.0) -> int:
        def ready() -> int | None:
            if not _alive(pid):
                raise RuntimeError(
                    f"{self.name}: Chromium exited during startup; see {self.chrome_log}"
                )
            try:
                port = self.chrome_port(timeout=0)
            except TimeoutError:
                return None
            return port if self._chrome_ready(port) else None

        return _wait_for(f"Chromium on {self.name}", ready, timeout)

    def start_chrome(self, port: int = 0) -> int:
        """Start Chromium (``port`` 0 = let it pick); returns the DevTools port once it answers."""
        return self._await_chrome(self._spawn_chrome(port))

    def stop_chrome(self) -> None:
        """SIGTERM the browser, wait for it (and its children), SIGKILL as a fallback."""
        pid = self.chrome_pid()
        if pid is None:
            return
        family = [pid, *_descendants(pid)]
        # Like `kill <pid>`: only the browser gets SIGTERM; it shuts its children down.
        _terminate([pid], grace=10.0)
        leftovers = [p for p in family if _alive(p)]
        if leftovers:
            _terminate(leftovers, grace=0)
        with contextlib.suppress(FileNotFoundError):
            self.chrome_pid_file.unlink()

    def kill_chrome(self) -> int | None:
        """SIGKILL the browser and its children, as a crash or an OOM kill would.

        Unlike :meth:`stop_chrome` nothing shuts down cleanly, and the DevToolsActivePort
        file stays behind naming a port nobody listens on any more (Chrome never deletes
        it) — the stale file the gateway has to see through.  Returns that stale port
        (None if the file was already gone).
        """
        port = None
        with contextlib.suppress(TimeoutError):
            port = self.chrome_port(timeout=0)
        pid = self.chrome_pid()
        if pid is not None:
            family = [pid, *_descendants(pid)]
            _signal(family, signal.SIGKILL)
            _wait_for("killed Chromium to exit", lambda: not any(_alive(p) for p in family), 10)
        with contextlib.suppress(FileNotFoundError):
            self.chrome_pid_file.unlink()
        return port

    def start_chrome_on_new_port(self, old: int | None) -> int:
        """Start Chromium on port 0 until it gets a port other than ``old``; returns it."""
        for _ in range(5):
            port = self.start_chrome(0)
            if port != old:
                return port
            self.stop_chrome()  # the kernel handed out the same port again: try once more
        raise RuntimeError(f"{self.name}: Chromium kept getting port {old}")

    def restart_chrome(self) -> int:
        """Stop and start on port 0; returns the new port (guaranteed to differ from the old)."""
        old = None
        with contextlib.suppress(TimeoutError, ValueError):
            old = self.chrome_port(timeout=0) if self.chrome_pid() is not None else None
        self.stop_chrome()
        return self.start_chrome_on_new_port(old)

    # -- sshd ----------------------------------------------------------------------------

    def sshd_pid(self) -> int | None:
        pid = _read_pid(self.sshd_pid_file)
        if pid is None or not _alive(pid) or not _ours(pid):
            return None
        return pid

    def _spawn_sshd(self) -> int:
        if self.sshd_pid() is not None:
            raise RuntimeError(f"{self.name}: sshd already running")
        with contextlib.suppress(FileNotFoundError):
            self.sshd_pid_file.unlink()
        pid = _spawn(
            self.netns_exec(SSHD, "-D", "-f", str(self.sshd_config), "-E", str(self.sshd_log)),
            self.state_dir / "sshd.out",
        )
        return pid

    def _await_sshd(self, pid: int, timeout: float = 15.0) -> None:
        def ready() -> bool:
            if not _alive(pid):
                raise RuntimeError(f"{self.name}: sshd exited; see {self.sshd_log}")
            try:
                banner = self.run_in_netns(lambda: _tcp_banner(self.address, self.ssh_port))
            except OSError:
                return False
            return banner.startswith(b"SSH-") and self.sshd_pid() == pid

        _wait_for(f"sshd on {self.name}", ready, timeout)

    def start_sshd(self) -> None:
        """Start the listener and wait until it answers with an SSH banner."""
        self._await_sshd(self._spawn_sshd())

    def stop_sshd(self, *, kill_sessions: bool = False) -> None:
        """Stop the listener; established sessions stay (like ``systemctl stop ssh``)
        unless ``kill_sessions``, which SIGKILLs them too (like a reboot of sshd)."""
        pid = self.sshd_pid()
        if pid is not None:
            _terminate([pid], grace=5.0)
        with contextlib.suppress(FileNotFoundError):
            self.sshd_pid_file.unlink()
        if kill_sessions:
            self.kill_ssh_sessions()

    def ssh_session_pids(self) -> list[int]:
        """sshd's per-connection processes and everything they run.

        Found through the namespace, not only as children of the current listener: a
        session outlives a listener restart (``rotate_host_key``, ``stop_sshd``).
        """
        listener = self.sshd_pid()
        proc = _run(_ip(), "netns", "pids", self.netns, check=False)
        sessions = {
            pid for pid in (int(p) for p in proc.stdout.split() if p.isdigit())
            if pid != listener and _alive(pid)
            and os.path.basename((_proc_cmdline(pid) or [""])[0]).startswith("sshd")
        }
        if listener is not None:
            sessions.update(_descendants(listener))
        for pid in list(sessions):
            sessions.update(_descendants(pid))
        return sorted(p for p in sessions if _alive(p))

    def kill_ssh_sessions(self) -> None:
        """SIGKILL every per-connection sshd process (and its children); keep the listener."""
        sessions = self.ssh_session_pids()
        _signal(sessions, signal.SIGKILL)
        with contextlib.suppress(TimeoutError):
            _wait_for("ssh sessions to die", lambda: not any(_alive(p) for p in sessions), 5)

    def ssh_logins(self) -> int:
        """How many logins sshd has accepted so far (its VERBOSE log says each one)."""
        try:
            text = self.sshd_log.read_text(errors="replace")
        except FileNotFoundError:
            return 0
        return text.count(f"Accepted publickey for {self.user} ")

    def rotate_host_key(self) -> None:
        """Give the host a new ed25519 key and restart sshd; known_hosts is NOT updated."""
        fresh = self.state_dir / "ssh_host_ed25519_key.new"
        for stale in (fresh, fresh.with_suffix(".new.pub")):
            with contextlib.suppress(FileNotFoundError):
                stale.unlink()
        _keygen(fresh, comment=f"{self.name}-rotated")
        os.replace(fresh, self.host_key)
        os.replace(fresh.with_suffix(".new.pub"), self.host_key.with_suffix(".pub"))
        self.stop_sshd()
        self.start_sshd()

    def host_key_rotated(self) -> bool:
        return self.host_key.read_bytes() != self.known_host_key.read_bytes()

    # -- link ----------------------------------------------------------------------------

    def link_down(self, *, silent: bool = False) -> None:
        """Cut the host off the network.

        Default: take the root-namespace end of the veth down (as asked for by the tests'
        design): the connected route disappears and the harness's ``unreachable`` route
        takes over, so new connections fail at once with EHOSTUNREACH while established
        ones just stop getting answers.  ``silent=True`` instead downs the namespace end:
        the route stays, packets are dropped on the wire, and new connections time out
        like a real partition.  Either way nothing is sent anywhere else.
        """
        if silent:
            # Without its neighbour entry the kernel would soon give up resolving the
            # address and fail new connections with EHOSTUNREACH after ~3 s: pinning the
            # entry keeps SYNs going out into the void, so they time out like a partition.
            _run(_ip(), "neigh", "replace", self.address, "lladdr", self._peer_mac(),
                 "dev", self.veth, "nud", "permanent")
            _run(_ip(), "-n", self.netns, "link", "set", self.veth_peer, "down")
        else:
            _run(_ip(), "link", "set", self.veth, "down")

    def _peer_mac(self) -> str:
        out = _run(_ip(), "-n", self.netns, "-o", "link", "show", self.veth_peer).stdout
        return out.split("link/ether", 1)[1].split()[0]

    def link_up(self) -> None:
        """Undo :meth:`link_down` (either kind)."""
        _run(_ip(), "neigh", "del", self.address, "dev", self.veth, check=False)
        _run(_ip(), "-n", self.netns, "link", "set", self.veth_peer, "up")
        _run(_ip(), "link", "set", self.veth, "up")
        _wait_for(f"{self.veth} up", self._link_is_up, 5)

    def _link_is_up(self) -> bool:
        def admin_up(*prefix: str, name: str) -> bool:
            proc = _run(_ip(), *prefix, "-o", "link", "show", name, check=False)
            if proc.returncode != 0 or "<" not in proc.stdout:
                return False
            flags = proc.stdout.split("<", 1)[1].split(">", 1)[0].split(",")
            return "UP" in flags and "LOWER_UP" in flags

        return admin_up(name=self.veth) and admin_up("-n", self.netns, name=self.veth_peer)

    # -- health --------------------------------------------------------------------------

    def problems(self) -> list[str]:
        """What is wrong with this host compared to the state up() leaves it in."""
        found: list[str] = []
        if self.netns not in _netns_names():
            return [f"{self.name}: netns {self.netns} missing"]
        if not self._link_is_up():
            found.append(f"{self.name}: link {self.veth} down")
        if self.sshd_pid() is None:
            found.append(f"{self.name}: sshd not running")
        if self.host_key_rotated():
            found.append(f"{self.name}: host key differs from known_hosts")
        if self.chrome_pid() is None:
            found.append(f"{self.name}: Chromium not running")
        else:
            try:
                port = self.chrome_port(timeout=0)
            except TimeoutError:
                found.append(f"{self.name}: no DevToolsActivePort")
            else:
                if not self._chrome_ready(port):
                    found.append(f"{self.name}: Chromium not answering on {port}")
        return found

    def reset(self) -> None:
        """Undo fault injection: link up, original host key, sshd and Chromium running."""
        if not self._link_is_up():
            self.link_up()
        if self.host_key_rotated():
            shutil.copyfile(self.known_host_key, self.host_key)
            shutil.copyfile(
                self.known_host_key.with_suffix(".known.pub"), self.host_key.with_suffix(".pub")
            )
            self.stop_sshd()
        if self.sshd_pid() is None:
            self.start_sshd()
        if not self._chrome_healthy():
            self.stop_chrome()
            self.start_chrome()

    def _chrome_healthy(self) -> bool:
        if self.chrome_pid() is None:
            return False
        try:
            port = self.chrome_port(timeout=5)
        except TimeoutError:
            return False
        return self._chrome_ready(port)


# ------------------------------------------------------------------------------- topology


@dataclass
class Topology:
    """The running set of hosts plus a client HOME whose ssh config names them all."""

    root: Path
    hosts: list[RemoteHost]
    client_home: Path

    def host(self, name: str) -> RemoteHost:
        for candidate in self.hosts:
            if candidate.name == name:
                return candidate
        raise KeyError(f"no host {name!r} (have {', '.join(h.name for h in self.hosts)})")

    @property
    def ssh_config(self) -> Path:
        return self.client_home / ".ssh" / "config"

    @property
    def identity_file(self) -> Path:
        return self.client_home / ".ssh" / "id_ed25519"

    @property
    def known_hosts(self) -> Path:
        return self.client_home / ".ssh" / "known_hosts"

    def client_env(self, home: Path | None = None) -> dict[str, str]:
        """Environment for a gateway subprocess: this HOME, no ssh-agent, a UTF-8 locale."""
        return {
            "HOME": str(home or self.client_home),
            "PATH": os.environ.get("PATH") or "/usr/local/bin:/usr/bin:/bin",
            "LANG": "C.UTF-8",
        }

    def known_hosts_text(self) -> str:
        lines = []
        for host in self.hosts:
            key_type, key = host.known_host_key.with_suffix(".known.pub").read_text().split()[:2]
            lines.append(f"{host.address} {key_type} {key}\n")
        return "".join(lines)

    def ssh_config_text(self, home: Path) -> str:
        ssh_dir = home / ".ssh"
        blocks = []
        for host in self.hosts:
            blocks.append(
                f"Host {host.name}\n"
                f"    HostName {host.address}\n"
                f"    Port {host.ssh_port}\n"
                f"    User {host.user}\n"
                f"    IdentityFile {ssh_dir / 'id_ed25519'}\n"
                f"    IdentitiesOnly yes\n"
                f"    UserKnownHostsFile {ssh_dir / 'known_hosts'}\n"
                f"    GlobalKnownHostsFile /dev/null\n"
            )
        return "\n".join(blocks)

    def make_client_home(self, path: Path, *, known_hosts: bool = True) -> Path:
        """Another HOME with the same key and ssh config; ``known_hosts=False`` leaves it empty.

        The config there points ``UserKnownHostsFile`` at *its own* known_hosts.
        """
        path = Path(path)
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.chmod(path, 0o700)
        ssh_dir = path / ".ssh"
        ssh_dir.mkdir(mode=0o700, exist_ok=True)
        os.chmod(ssh_dir, 0o700)
        if (ssh_dir / "id_ed25519").resolve() != self.identity_file.resolve():
            shutil.copyfile(self.identity_file, ssh_dir / "id_ed25519")
            shutil.copyfile(self.identity_file.with_suffix(".pub"), ssh_dir / "id_ed25519.pub")
        os.chmod(ssh_dir / "id_ed25519", 0o600)
        os.chmod(ssh_dir / "id_ed25519.pub", 0o644)
        _write(ssh_dir / "config", self.ssh_config_text(path))
        _write(ssh_dir / "known_hosts", self.known_hosts_text() if known_hosts else "")
        return path

    def problems(self) -> list[str]:
        found = [p for host in self.hosts for p in host.problems()]
        for needed in (self.ssh_config, self.identity_file, self.known_hosts):
            if not needed.is_file():
                found.append(f"{needed} missing")
        return found

    def reset(self) -> None:
        """Bring every host back to its initial state (see :meth:`RemoteHost.reset`)."""
        for host in self.hosts:
            host.reset()

    # -- persistence ---------------------------------------------------------------------

    def _to_json(self) -> str:
        def plain(obj: Any) -> Any:
            if isinstance(obj, Path):
                return str(obj)
            if isinstance(obj, dict):
                return {k: plain(v) for k, v in obj.items()}
            if isinstance(obj, list):
                return [plain(v) for v in obj]
            return obj

        return json.dumps(plain(asdict(self)), indent=2) + "\n"

    @classmethod
    def _from_json(cls, text: str) -> Topology:
        data = json.loads(text)
        hosts = []
        for h in data["hosts"]:
            fields: dict[str, Any] = dict(h)
            for key in ("home", "profile_dir", "state_dir"):
                fields[key] = Path(fields[key])
            hosts.append(RemoteHost(**fields))
        return cls(root=Path(data["root"]), hosts=hosts, client_home=Path(data["client_home"]))


# --------------------------------------------------------------------------- building up


def _keygen(path: Path, comment: str) -> None:
    _run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(path))
    os.chmod(path, 0o600)


def _plan_host(index: int) -> RemoteHost:
    name = f"h{index}"
    host_dir = ROOT / name
    home = host_dir / "home"
    profile = ".config/google-chrome" if index == 2 else ".config/chromium"
    return RemoteHost(
        name=name,
        netns=f"{PREFIX}-{name}",
        address=f"{SUBNET}.{index}.2",
        user=USER,
        home=home,
        profile_dir=home / profile,
        state_dir=host_dir / "state",
        veth=f"{PREFIX}-{name}-o",  # outer end, root namespace  (<= 15 chars up to h9999)
        veth_peer=f"{PREFIX}-{name}-i",  # inner end, inside the namespace
        gateway_address=f"{SUBNET}.{index}.1",
    )


def _uid_in_machine_passwd(uid: int, name: str | None = None) -> bool:
    """Whether the machine's own /etc/passwd has ``uid`` (or the user ``name``)."""
    for line in Path("/etc/passwd").read_text().splitlines():
        parts = line.split(":")
        if len(parts) > 3 and (parts[2] == str(uid) or parts[0] == name):
            return True
    return False


def _check_identity_free() -> None:
    if _uid_in_machine_passwd(UID, USER):
        raise RuntimeError(
            f"/etc/passwd already has {USER!r} or uid {UID}; the test user must be unique"
        )


def _prepare_root() -> None:
    if ROOT.is_symlink() or (ROOT.exists() and ROOT.lstat().st_uid != 0):
        raise RuntimeError(f"{ROOT} exists and is not a root-owned directory; refusing to use it")
    # 0711: other users may traverse (the login user's home lives below) but not list.
    _mkdir(ROOT, 0o711)


def _build_host_files(host: RemoteHost, client_pub: str) -> None:
    host_dir = host.state_dir.parent
    _mkdir(host_dir, 0o711)
    _mkdir(host.state_dir, 0o700)
    if not host.host_key.exists():
        _keygen(host.host_key, comment=host.name)
    shutil.copyfile(host.host_key, host.known_host_key)
    os.chmod(host.known_host_key, 0o600)
    shutil.copyfile(
        host.host_key.with_suffix(".pub"), host.known_host_key.with_suffix(".known.pub")
    )

    # The login user's home, owned by it, 0700 (StrictModes checks this).
    _mkdir(host.home, 0o700, host.uid, host.uid)
    ssh_dir = host.home / ".ssh"
    _mkdir(ssh_dir, 0o700, host.uid, host.uid)
    _mkdir(host.home / "tmp", 0o700, host.uid, host.uid)
    _write(ssh_dir / "authorized_keys", client_pub)
    os.chown(ssh_dir / "authorized_keys", host.uid, host.uid)
    parent = host.home
    for part in host.profile_dir.relative_to(host.home).parts:
        parent = parent / part
        _mkdir(parent, 0o700, host.uid, host.uid)

    # /etc/netns/<ns>/{passwd,group}: ip netns exec bind-mounts them over /etc.
    etc = Path("/etc/netns") / host.netns
    Path("/etc/netns").mkdir(mode=0o755, exist_ok=True)
    _mkdir(etc, 0o755)
    passwd = Path("/etc/passwd").read_text().rstrip("\n") + "\n"
    group = Path("/etc/group").read_text().rstrip("\n") + "\n"
    _write(
        etc / "passwd",
        passwd + f"{USER}:x:{host.uid}:{host.uid}:csgw test:{host.home}:/bin/sh\n",
        0o644,
    )
    _write(etc / "group", group + f"{USER}:x:{host.uid}:\n", 0o644)

    _write(
        host.sshd_config,
        f"""# generated by tests/topology.py for {host.name}
Port {host.ssh_port}
ListenAddress {host.address}
HostKey {host.host_key}
PidFile {host.sshd_pid_file}
UsePAM no
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin no
AllowUsers {host.user}
AuthorizedKeysFile .ssh/authorized_keys
StrictModes yes
AllowTcpForwarding yes
AllowStreamLocalForwarding yes
Subsystem sftp internal-sftp
MaxStartups 100:30:200
UseDNS no
PrintMotd no
X11Forwarding no
LogLevel VERBOSE
""",
    )
    _run(*host.netns_exec(SSHD, "-t", "-f", str(host.sshd_config)))


def _build_netns(host: RemoteHost) -> None:
    ip = _ip()
    subnet = f"{host.gateway_address.rsplit('.', 1)[0]}.0/30"
    # Refuse address space the machine already routes somewhere other than its default.
    routes = _run(ip, "-o", "route", "show", "match", host.address, check=False).stdout
    for line in routes.splitlines():
        if line.strip() and not line.startswith("default"):
            raise RuntimeError(f"{subnet} is already in use on this machine: {line.strip()}")
    # Safety net: when the veth is down, traffic for the namespace must fail here instead
    # of following the default route off the machine.  Tagged proto 231 for down().
    _run(ip, "route", "add", "unreachable", subnet, "metric", ROUTE_METRIC, "proto", ROUTE_PROTO)
    _run(ip, "netns", "add", host.netns)
    _run(ip, "link", "add", host.veth, "type", "veth", "peer", "name", host.veth_peer)
    _run(ip, "link", "set", host.veth_peer, "netns", host.netns)
    _run(ip, "addr", "add", f"{host.gateway_address}/30", "dev", host.veth)
    _run(ip, "link", "set", host.veth, "up")
    _run(ip, "-n", host.netns, "addr", "add", f"{host.address}/30", "dev", host.veth_peer)
    _run(ip, "-n", host.netns, "link", "set", host.veth_peer, "up")
    _run(ip, "-n", host.netns, "link", "set", "lo", "up")


def _build(n_hosts: int) -> Topology:
    _prepare_root()
    Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # sshd's privilege-separation dir
    client_home = ROOT / "client"
    _mkdir(client_home, 0o700)
    _mkdir(client_home / ".ssh", 0o700)
    identity = client_home / ".ssh" / "id_ed25519"
    if not identity.exists():
        _keygen(identity, comment="csgw-client")
    client_pub = identity.with_suffix(".pub").read_text()

    hosts = [_plan_host(i) for i in range(1, n_hosts + 1)]
    topology = Topology(root=ROOT, hosts=hosts, client_home=client_home)
    for host in hosts:
        _build_netns(host)
        _build_host_files(host, client_pub)
    # Record state before starting anything, so down() can clean a half-built run.
    _write(ROOT / STATE_FILE, topology._to_json())
    topology.make_client_home(client_home)

    # Start every daemon first, then wait: the hosts come up in parallel.
    sshd_pids = {host.name: host._spawn_sshd() for host in hosts}
    chrome_pids = {host.name: host._spawn_chrome(0) for host in hosts}
    for host in hosts:
        host._await_sshd(sshd_pids[host.name])
    for host in hosts:
        host._await_chrome(chrome_pids[host.name])
    return topology


def load() -> Topology | None:
    """The topology recorded under /tmp/csgw-topology, or None when there is none."""
    try:
        text = (ROOT / STATE_FILE).read_text()
    except (FileNotFoundError, PermissionError):
        return None
    try:
        return Topology._from_json(text)
    except (ValueError, KeyError, TypeError):
        return None


@contextlib.contextmanager
def _locked() -> Iterator[None]:
    """Serialise up()/down() across processes (pytest and a benchmark may start together).

    down() deletes the lock file while holding it, so after locking we check that the
    path still names the file we locked, and retry otherwise.
    """
    while True:
        fd = os.open(LOCK_FILE, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                current = os.stat(LOCK_FILE, follow_symlinks=False).st_ino
            except FileNotFoundError:
                current = None
        except BaseException:
            os.close(fd)
            raise
        if current == os.fstat(fd).st_ino:
            break
        os.close(fd)
    try:
        yield
    finally:
        os.close(fd)


def _log_tails(topology: Topology | None, lines: int = 15) -> str:
    if topology is None:
        return ""
    parts = []
    for host in topology.hosts:
        for log in (host.sshd_log, host.chrome_log):
            with contextlib.suppress(OSError):
                tail = log.read_text(errors="replace").splitlines()[-lines:]
                if tail:
                    parts.append(f"--- {log} (last {len(tail)} lines)\n" + "\n".join(tail))
    return "\n".join(parts)


def up(n_hosts: int = 2) -> Topology:
    """Bring up ``n_hosts`` hosts, or reuse a healthy running topology with at least that many."""
    if n_hosts < 1 or n_hosts > 250:
        raise ValueError("n_hosts must be between 1 and 250")
    missing = missing_requirements()
    if missing:
        raise RuntimeError("cannot build the test topology: " + "; ".join(missing))
    _check_identity_free()
    with _locked():
        current = load()
        if current is not None and len(current.hosts) >= n_hosts and not current.problems():
            return current
        _down()
        try:
            return _build(n_hosts)
        except Exception as exc:
            details = _log_tails(load())
            _down()
            raise RuntimeError(f"test topology failed to come up: {exc}\n{details}") from exc
        except BaseException:
            _down()
            raise


def _kill_everything_ours(known: Topology | None) -> None:
    victims: set[int] = set()
    if known is not None:
        for host in known.hosts:
            for pid_file in (host.chrome_pid_file, host.sshd_pid_file):
                pid = _read_pid(pid_file)
                if pid is not None and _alive(pid) and _ours(pid):
                    victims.add(pid)
    for netns in _netns_names():
        if netns.startswith(f"{PREFIX}-"):
            proc = _run(_ip(), "netns", "pids", netns, check=False)
            victims.update(int(p) for p in proc.stdout.split() if p.isdigit())
    # Stragglers whose namespace is already gone: our sshd/Chromium (command line names
    # our state dir) and anything running as the namespace-only uid.
    protected = {os.getpid(), os.getppid()}
    uid_is_ours = not _uid_in_machine_passwd(UID)
    for pid in _all_pids():
        if pid in protected or not _alive(pid):
            continue
        cmd = _proc_cmdline(pid)
        exe = os.path.basename(cmd[0]) if cmd else ""
        if (exe in {"sshd", "chromium", "chrome_crashpad_handler"} and _ours(pid)) or (
            uid_is_ours and _proc_uid(pid) == UID
        ):
            victims.add(pid)
    victims -= protected
    if victims:
        _terminate(sorted(victims), grace=3.0)


def down() -> None:
    """Remove everything a (possibly crashed) run left: processes, namespaces, links, files."""
    if os.geteuid() != 0:
        raise RuntimeError("tests.topology.down() needs root")
    with _locked():
        _down()
        with contextlib.suppress(FileNotFoundError):
            LOCK_FILE.unlink()  # while still holding it; see _locked()


def _down() -> None:
    known = load()
    _kill_everything_ours(known)
    ip = _ip()
    for netns in _netns_names():
        if netns.startswith(f"{PREFIX}-"):
            _run(ip, "netns", "del", netns, check=False)
    for link in _links():
        if link.startswith(f"{PREFIX}-"):
            _run(ip, "link", "del", link, check=False)
    routes = _run(ip, "-o", "route", "show", "proto", ROUTE_PROTO, check=False).stdout
    for line in routes.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0] == "unreachable" and parts[1].startswith(f"{SUBNET}."):
            _run(ip, "route", "del", "unreachable", parts[1], "metric", ROUTE_METRIC, check=False)
    etc_netns = Path("/etc/netns")
    if etc_netns.is_dir():
        for entry in etc_netns.iterdir():
            if entry.name.startswith(f"{PREFIX}-"):
                shutil.rmtree(entry, ignore_errors=True)
        with contextlib.suppress(OSError):
            etc_netns.rmdir()  # only if empty, i.e. nobody else uses it
    # Chromium puts its SingletonSocket dir in TMPDIR (we point that into the home), but a
    # run started by an older harness or by hand may have left some in /tmp.
    for leftover in Path("/tmp").glob("org.chromium.Chromium.*"):
        with contextlib.suppress(OSError):
            if leftover.lstat().st_uid == UID:
                shutil.rmtree(leftover, ignore_errors=True)
    if ROOT.is_symlink():
        ROOT.unlink()
    elif ROOT.exists():
        shutil.rmtree(ROOT)


# ------------------------------------------------------------------------------------ CLI


def _status() -> int:
    topology = load()
    netns = [n for n in _netns_names() if n.startswith(f"{PREFIX}-")]
    if topology is None:
        print(f"no topology recorded in {ROOT}" + (f"; stray netns: {netns}" if netns else ""))
        return 1
    for host in topology.hosts:
        chrome = host.chrome_pid()
        port: int | str = "-"
        if chrome is not None:
            with contextlib.suppress(TimeoutError):
                port = host.chrome_port(timeout=0)
        print(
            f"{host.name}: netns={host.netns} address={host.address} "
            f"sshd={host.sshd_pid() or '-'} chrome={chrome or '-'} port={port} "
            f"profile={host.profile_dir}"
        )
    print(f"client HOME={topology.client_home}  ssh -F {topology.ssh_config} h1")
    problems = topology.problems()
    for problem in problems:
        print(f"problem: {problem}")
    return 1 if problems else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.topology", description=__doc__.split("\n")[0]
    )
    sub = parser.add_subparsers(dest="command", required=True)
    up_parser = sub.add_parser("up", help="bring the hosts up (reuses a healthy running topology)")
    up_parser.add_argument("--hosts", type=int, default=2)
    sub.add_parser("down", help="tear everything down, including a crashed run")
    sub.add_parser("status", help="show what is running")
    args = parser.parse_args(argv)
    if args.command == "up":
        started = time.monotonic()
        up(args.hosts)
        print(f"up in {time.monotonic() - started:.2f} s")
        return _status()
    if args.command == "down":
        down()
        return 0
    return _status()


if __name__ == "__main__":
    sys.exit(main())
