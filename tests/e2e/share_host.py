"""A test host nobody can dial, for ``chrome-ssh-gateway share`` (a laptop behind NAT, a
CI runner): it only dials *out*, to one topology host.

A :class:`ShareHost` is a network namespace of its own (``csgw-sN``; ``csgwK-sN`` with
``CSGW_TOPOLOGY_SLOT=K``) with no sshd in it, joined by a veth pair **directly to the
destination host's namespace**, not to the root namespace.  Share host N takes the /30
at ``10.231.0.(4N)`` (third octet 0, which the topology's hosts never use: host N has
``10.231.N.0/30``, N >= 1; slot-shifted like them, ``10.(231+K)``)::

    share host  csgw-sN-i  10.231.0.(4N+2)/30  ──veth──  10.231.0.(4N+1)/30  csgw-sN-o  dest

The share host routes only ``dest.address/32`` via the dest-side address.  Dest owns
that address, so the packets are delivered locally there: no IP forwarding and no
sysctl anywhere.  From the share host ``dest.address:22`` is dest's sshd; nothing else
is reachable.  The root namespace has no route to the share host but the harness's
``unreachable`` one (the topology's own safety net, same tag), so a connect from there
fails at once and nothing leaves the machine.

The sharer runs as root in its namespace with a HOME of its own made by
``Topology.make_client_home`` (``ssh h2`` works from it).  ``ip netns exec`` bind-mounts
``/etc/netns/<ns>/passwd`` over ``/etc/passwd``; ours gives root that HOME, so OpenSSH's
client (which takes the home from passwd, not ``$HOME``) finds the same ``~/.ssh`` as
asyncssh does.

Everything carries the topology's prefix and lives under its state directory, so
``python -m tests.topology down`` (and the e2e session teardown) removes what a crashed
run left: it kills every process in a ``<prefix>-*`` namespace, deletes those namespaces
(the veth pair goes with them), the ``unreachable`` routes it tagged, ``/etc/netns``
entries with the prefix and the state directory holding the sharer's HOME.

:func:`as_login_user` is the other half: the argv that runs a command on a topology
host as its login user, e.g. the gateway reading a share's socket there.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import IO, Any, TypeVar

from tests.topology import (
    CHROME_FLAGS,
    CHROMIUM,
    PREFIX,
    ROOT,
    ROUTE_METRIC,
    ROUTE_PROTO,
    SUBNET,
    RemoteHost,
    Topology,
    _descendants,
    _http_get,
    _in_netns,
    _ip,
    _netns_names,
    _run,
)

__all__ = [
    "GATEWAY",
    "MAX_SHARE_HOSTS",
    "ShareBrowser",
    "ShareHost",
    "as_login_user",
]

GATEWAY: tuple[str, ...] = (sys.executable, "-m", "gateway")
"""The gateway's argv prefix (this venv's interpreter): ``share.spawn(*GATEWAY, "share",
"h2")`` or ``as_login_user(h2, *GATEWAY, "serve")``."""

MAX_SHARE_HOSTS = 63
"""Indexes 1..63: /30s 10.231.0.4 .. 10.231.0.252 (0.0/30 left alone, as network 0)."""

_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
_LOGIN_PATH = "/usr/local/bin:/usr/bin:/bin"

_T = TypeVar("_T")


@dataclass
class ShareBrowser:
    """One Chromium a :class:`ShareHost` started (root, inside the share namespace)."""

    pid: int
    profile: Path
    port: int  # from its DevToolsActivePort once it answered; stays after it dies
    flags: tuple[str, ...]
    log: Path
    process: subprocess.Popen[bytes] = field(repr=False)

    @property
    def devtools_active_port_file(self) -> Path:
        return self.profile / "DevToolsActivePort"


class ShareHost:
    """A namespace with no inbound SSH, linked only to ``dest``; see the module docstring.

    One ``ShareHost`` per ``index`` at a time: building one removes whatever an earlier
    one with the same index left (a crashed run's namespace, route, home).
    """

    def __init__(self, topology: Topology, dest: RemoteHost | None = None,
                 index: int = 1) -> None:
        if os.geteuid() != 0:
            raise RuntimeError("a ShareHost needs root (network namespaces)")
        if not 1 <= index <= MAX_SHARE_HOSTS:
            raise ValueError(f"index must be 1..{MAX_SHARE_HOSTS}, not {index}")
        self.topology = topology
        self.dest = dest if dest is not None else topology.host("h2")
        if self.dest not in topology.hosts:
            raise ValueError(f"{self.dest.name} is not a host of this topology")
        self.index = index
        self.name = f"s{index}"
        self.netns = f"{PREFIX}-{self.name}"
        self.veth = f"{PREFIX}-{self.name}-i"  # share-host end
        self.dest_veth = f"{PREFIX}-{self.name}-o"  # end inside dest's namespace
        self.subnet = f"{SUBNET}.0.{4 * index}/30"
        self.dest_side_address = f"{SUBNET}.0.{4 * index + 1}"
        self.address = f"{SUBNET}.0.{4 * index + 2}"
        # Under the topology's state dir (root 0711), so its down() removes it too.
        self.home = ROOT / f"share-{self.name}"
        self.default_profile = self.home / ".config" / "chromium"
        self.browsers: list[ShareBrowser] = []
        self.processes: list[subprocess.Popen[bytes]] = []
        self._default_profile_taken = False
        self._browser_count = 0
        self._closed = False
        self._remove()
        try:
            self._build_netns()
            self._build_home()
        except BaseException:
            self._remove()
            raise

    # -- building and removing ----------------------------------------------------------

    @property
    def _etc(self) -> Path:
        return Path("/etc/netns") / self.netns

    def _build_netns(self) -> None:
        ip = _ip()
        if self.dest.netns not in _netns_names():
            raise RuntimeError(f"{self.dest.name}: netns {self.dest.netns} missing")
        # Refuse address space the machine (or dest) already routes, as the topology does.
        for prefix in ((), ("-n", self.dest.netns)):
            routes = _run(ip, *prefix, "-o", "route", "show", "match", self.address,
                          check=False).stdout
            for line in routes.splitlines():
                if line.strip() and not line.startswith("default"):
                    where = f"in {self.dest.netns}" if prefix else "on this machine"
                    raise RuntimeError(f"{self.subnet} is already in use {where}: {line.strip()}")
        # The root namespace has no way to the share host; without this its packets for
        # the address would follow the default route off the machine instead of failing.
        _run(ip, "route", "add", "unreachable", self.subnet, "metric", ROUTE_METRIC,
             "proto", ROUTE_PROTO)
        _run(ip, "netns", "add", self.netns)
        _run(ip, "-n", self.netns, "link", "set", "lo", "up")
        _run(ip, "-n", self.netns, "link", "add", self.veth, "type", "veth",
             "peer", "name", self.dest_veth, "netns", self.dest.netns)
        _run(ip, "-n", self.dest.netns, "addr", "add", f"{self.dest_side_address}/30",
             "dev", self.dest_veth)
        _run(ip, "-n", self.dest.netns, "link", "set", self.dest_veth, "up")
        _run(ip, "-n", self.netns, "addr", "add", f"{self.address}/30", "dev", self.veth)
        _run(ip, "-n", self.netns, "link", "set", self.veth, "up")
        _run(ip, "-n", self.netns, "route", "add", f"{self.dest.address}/32",
             "via", self.dest_side_address, "dev", self.veth)

    def _build_home(self) -> None:
        self.home.mkdir(mode=0o700)
        self.topology.make_client_home(self.home)
        for sub in ("tmp", "run", ".config", "log"):
            (self.home / sub).mkdir(mode=0o700)
        # root's home inside the share namespace only (see the module docstring).
        lines = []
        for line in Path("/etc/passwd").read_text().splitlines():
            parts = line.split(":")
            if len(parts) == 7 and parts[2] == "0":
                parts[5] = str(self.home)
                line = ":".join(parts)
            lines.append(line)
        Path("/etc/netns").mkdir(mode=0o755, exist_ok=True)
        self._etc.mkdir(mode=0o755)
        (self._etc / "passwd").write_text("\n".join(lines) + "\n")
        os.chmod(self._etc / "passwd", 0o644)

    def _remove(self) -> None:
        """Remove this index's namespace, veths, route, passwd and home (ours or a
        leftover); every step tolerates its part being gone already."""
        ip = _ip()
        if self.netns in _netns_names():
            pids = _netns_pids(self.netns)
            _kill_and_wait(pids)
            _run(ip, "netns", "del", self.netns, check=False)
        # Deleting the namespace deletes the pair; this is for a half-built one.
        if self.dest.netns in _netns_names():
            _run(ip, "-n", self.dest.netns, "link", "del", self.dest_veth, check=False)
        routes = _run(ip, "-o", "route", "show", "proto", ROUTE_PROTO, check=False).stdout
        for line in routes.splitlines():
            parts = line.split()
            if parts[:2] == ["unreachable", self.subnet]:
                _run(ip, "route", "del", "unreachable", self.subnet, "metric", ROUTE_METRIC,
                     check=False)
        shutil.rmtree(self._etc, ignore_errors=True)
        with contextlib.suppress(OSError):
            Path("/etc/netns").rmdir()  # only if empty, i.e. nobody else uses it
        if self.home.is_symlink():
            self.home.unlink()
        else:
            shutil.rmtree(self.home, ignore_errors=True)

    def close(self) -> None:
        """Kill what was spawned, stop the browsers, remove everything (idempotent)."""
        if self._closed:
            return
        self._closed = True
        for process in self.processes:
            if process.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
        for process in self.processes:
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=10)
        for browser in self.browsers:
            self.stop_browser(browser)
        self._remove()

    def __enter__(self) -> ShareHost:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    # -- running things -----------------------------------------------------------------

    @property
    def ssh_config(self) -> Path:
        return self.home / ".ssh" / "config"

    def env(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        """The sharer's whole environment.  ``TMPDIR`` and ``XDG_RUNTIME_DIR`` point into
        its HOME: both sides run as root on one filesystem, and ``/tmp/chrome-ssh-
        gateway-0`` would otherwise be shared with a gateway in the root namespace."""
        env = {
            "HOME": str(self.home),
            "PATH": _PATH,
            "LANG": "C.UTF-8",
            "TMPDIR": str(self.home / "tmp"),
            "XDG_RUNTIME_DIR": str(self.home / "run"),
        }
        env.update(extra or {})
        return env

    def argv(self, *argv: str, env: Mapping[str, str] | None = None) -> list[str]:
        """The argv that runs ``argv`` in the share namespace as root with :meth:`env`
        only (``env -i``), plus ``env``'s entries."""
        if not argv:
            raise ValueError("argv is empty")
        assignments = [f"{key}={value}" for key, value in _checked_env(self.env(env)).items()]
        return [_ip(), "netns", "exec", self.netns, "env", "-i", *assignments, *argv]

    def spawn(self, *argv: str, env: Mapping[str, str] | None = None,
              stdin: int | IO[Any] | None = subprocess.DEVNULL,
              stdout: int | IO[Any] | None = subprocess.DEVNULL,
              stderr: int | IO[Any] | None = subprocess.DEVNULL) -> subprocess.Popen[bytes]:
        """Start ``argv`` there in a session of its own (so a test can signal it or its
        group), cwd the HOME, no inherited fds; :meth:`close` kills it if still running.

        ``ip netns exec`` and ``env`` exec, so ``.pid`` is the command's own — once they
        have: this returns only then (or when it exited), so a signal sent at once
        reaches the command, not its launcher, and it is already in the namespace."""
        process = subprocess.Popen(
            self.argv(*argv, env=env), stdin=stdin, stdout=stdout, stderr=stderr,
            close_fds=True, start_new_session=True, cwd=self.home)
        self.processes.append(process)
        launchers = {os.path.realpath(_ip()), os.path.realpath(shutil.which("env") or "")}
        deadline = time.monotonic() + 10
        while process.poll() is None:
            with contextlib.suppress(OSError):
                if (_cmdline(process.pid)[: len(argv)] == list(argv)
                        or os.readlink(f"/proc/{process.pid}/exe") not in launchers):
                    break
            if time.monotonic() > deadline:
                raise TimeoutError(f"{argv[0]} was not exec'd in {self.netns} within 10 s")
            time.sleep(0.005)
        return process

    def run(self, *argv: str, env: Mapping[str, str] | None = None, timeout: float = 30,
            input: str | None = None) -> subprocess.CompletedProcess[str]:
        """Run ``argv`` there to completion (killed after ``timeout``); text output."""
        return subprocess.run(
            self.argv(*argv, env=env), input=input, capture_output=True, text=True,
            timeout=timeout, close_fds=True, cwd=self.home,
            stdin=subprocess.DEVNULL if input is None else None)

    def run_in_netns(self, fn: Callable[[], _T]) -> _T:
        """Call ``fn`` on a thread inside the share namespace (sockets it opens live there)."""
        return _in_netns(self.netns, fn)

    # -- Chromium -----------------------------------------------------------------------

    def start_browser(self, *flags: str, profile: Path | None = None,
                      timeout: float = 30) -> ShareBrowser:
        """Start a headless Chromium as root in the share namespace and wait until its
        ``/json/version`` answers on the namespace's loopback.

        ``profile`` None: the first time the default profile location of the sharer
        (``HOME/.config/chromium``, where local discovery looks), after that a fresh
        directory under the HOME.  Pass ``profile=share.default_profile`` to restart in
        the default one.  A stale ``DevToolsActivePort`` there is removed first, so the
        port returned is the new browser's.
        """
        if profile is None:
            if self._default_profile_taken:
                profile = Path(tempfile.mkdtemp(prefix="profile-", dir=self.home))
            else:
                profile = self.default_profile
            self._default_profile_taken = True
        elif profile == self.default_profile:
            self._default_profile_taken = True
        profile.mkdir(mode=0o700, parents=True, exist_ok=True)
        with contextlib.suppress(FileNotFoundError):
            (profile / "DevToolsActivePort").unlink()
        self._browser_count += 1
        log = self.home / "log" / f"chromium-{self._browser_count}.log"
        # Crashpad keeps its database under the *default* user data dir: a browser on
        # another profile must not create HOME/.config/chromium (discovery looks there).
        extra = {} if profile == self.default_profile else {"CHROME_CONFIG_HOME": str(profile)}
        with open(log, "ab", buffering=0) as out:
            process = subprocess.Popen(
                self.argv(CHROMIUM, *CHROME_FLAGS, "--remote-debugging-port=0", *flags,
                          f"--user-data-dir={profile}", "about:blank", env=extra),
                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                close_fds=True, start_new_session=True, cwd="/")
        browser = ShareBrowser(process.pid, profile, 0, flags, log, process)
        self.browsers.append(browser)
        try:
            browser.port = self._await_browser(browser, timeout)
        except BaseException:
            self.kill_browser(browser)
            raise
        return browser

    def _await_browser(self, browser: ShareBrowser, timeout: float) -> int:
        deadline = time.monotonic() + timeout
        while True:
            code = browser.process.poll()
            if code is not None:
                tail = browser.log.read_text(errors="replace").splitlines()[-15:]
                raise RuntimeError(f"Chromium exited ({code}) during startup:\n"
                                   + "\n".join(tail))
            port = _active_port(browser.profile)
            if port is not None:
                with contextlib.suppress(OSError, RuntimeError, ValueError):
                    self.devtools_version(port)
                    return port
            if time.monotonic() > deadline:
                raise TimeoutError(f"Chromium {browser.pid} did not answer in {timeout:g} s; "
                                   f"see {browser.log}")
            time.sleep(0.05)

    def devtools_version(self, port: int | ShareBrowser) -> dict[str, Any]:
        """``GET /json/version`` on the share namespace's loopback."""
        port = port.port if isinstance(port, ShareBrowser) else port
        status, body = self.run_in_netns(lambda: _http_get("127.0.0.1", port, "/json/version"))
        if status != 200:
            raise RuntimeError(f"{self.netns}: /json/version on {port} answered {status}")
        result: dict[str, Any] = json.loads(body)
        return result

    def _family(self, browser: ShareBrowser) -> set[int]:
        """The browser, its descendants, its process group (it leads one: own session)
        and its crashpad handlers (they detach into groups of their own, but name the
        profile: ``--database=<profile>/Crash Reports``).

        Once the browser is reaped its pid may be reused, so then it and its descendants
        are left out: a pid is not handed out again while a process group of that id
        has members, and the handlers are found by name."""
        marker = f"{browser.profile}/"
        found = _pgid_members(browser.pid)
        found.update(pid for pid in _netns_pids(self.netns)
                     if any(marker in arg for arg in _cmdline(pid)))
        if browser.process.poll() is None:
            found.update((browser.pid, *_descendants(browser.pid)))
        return found

    def kill_browser(self, browser: ShareBrowser) -> None:
        """SIGKILL the browser and its children, as a crash would: its
        ``DevToolsActivePort`` stays, naming a port nobody listens on. The family is
        looked for again after each round: a child the browser was starting while it
        was read (a renderer, crashpad) is not in it yet."""
        deadline = time.monotonic() + 10
        family = self._family(browser)
        while family and time.monotonic() < deadline:
            _kill_and_wait(family, browser.process)
            family = {pid for pid in self._family(browser) if _running(pid)}

    def stop_browser(self, browser: ShareBrowser, grace: float = 15) -> None:
        """SIGTERM the browser (as ``kill <pid>``), wait for it; SIGKILL what is left."""
        family = self._family(browser)
        if browser.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(browser.pid, signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                browser.process.wait(timeout=grace)
        _kill_and_wait(family | self._family(browser), browser.process)


def as_login_user(host: RemoteHost, *argv: str,
                  env: Mapping[str, str] | None = None) -> list[str]:
    """The argv that runs ``argv`` inside ``host``'s namespace as its login user
    (``setpriv``, no supplementary groups, ``env -i`` with its HOME), as Chromium is run
    there; ``env`` adds to or overrides ``HOME``, ``PATH`` and ``LANG``.

    The program must be reachable by that user, and this venv's interpreter may not be:
    here it lives under ``/root`` (0700).  Then the command's own mount namespace (``ip
    netns exec`` makes a private one per command) gets a tmpfs over the closed directory
    holding only the one entry on the program's path, bind-mounted from the original, so
    exactly that path works and the user's permissions stay real everywhere (no
    capability, nothing changed on the machine).  A script's ``#!`` interpreter counts.
    """
    if not argv:
        raise ValueError("argv is empty")
    assignments = {"HOME": str(host.home), "PATH": _LOGIN_PATH, "LANG": "C.UTF-8"}
    assignments.update(env or {})
    command = ["setpriv", f"--reuid={host.uid}", f"--regid={host.uid}", "--clear-groups",
               "env", "-i", *(f"{k}={v}" for k, v in _checked_env(assignments).items()), *argv]
    hidden = _hidden_entry(argv[0], host.uid)
    if hidden is None:
        return host.netns_exec(*command)
    closed, entry = hidden
    # Stash the entry on the host's state dir (root 0700, ours) for a moment, cover the
    # closed directory with a world-traversable tmpfs, move the entry back into it.
    script = ('set -e; mount --bind "$1" "$2"; '
              'mount -t tmpfs -o mode=0755,size=64k csgw-reach "$3"; '
              'mkdir "$1"; mount --move "$2" "$1"; shift 3; exec "$@"')
    return host.netns_exec("sh", "-c", script, "sh", str(entry), str(host.state_dir),
                           str(closed), *command)


# ------------------------------------------------------------------------------ helpers


def _checked_env(env: Mapping[str, str]) -> dict[str, str]:
    for key in env:
        if not key or "=" in key:
            raise ValueError(f"bad environment variable name {key!r}")
    return dict(env)


def _may_search(path: Path, uid: int) -> bool:
    """Whether ``uid`` (its own group only, as ``--clear-groups`` leaves it) may traverse
    the directory ``path``."""
    st = path.stat()
    if st.st_uid == uid:
        return bool(st.st_mode & stat.S_IXUSR)
    if st.st_gid == uid:
        return bool(st.st_mode & stat.S_IXGRP)
    return bool(st.st_mode & stat.S_IXOTH)


def _hidden_entry(program: str, uid: int) -> tuple[Path, Path] | None:
    """``(closed dir, entry in it)`` when ``uid`` cannot reach ``program`` (or its ``#!``
    interpreter) because one directory on the resolved path is closed to it; None when
    it can (or the path is not absolute: then PATH finds it, or not)."""
    if not program.startswith("/"):
        return None
    paths = [Path(program).resolve()]
    with contextlib.suppress(OSError), open(paths[0], "rb") as fh:
        first = fh.readline(256)
        if first.startswith(b"#!"):
            interpreter = first[2:].split()
            if interpreter and interpreter[0].startswith(b"/"):
                paths.append(Path(os.fsdecode(interpreter[0])).resolve())
    found: set[tuple[Path, Path]] = set()
    for path in paths:
        parts = path.parts
        closed = [i for i in range(1, len(parts) - 1)
                  if not _may_search(Path(*parts[: i + 1]), uid)]
        if not closed:
            continue
        if len(closed) > 1 or parts[: closed[0] + 1] == parts[:-1]:
            raise RuntimeError(f"{path}: uid {uid} cannot reach it and as_login_user only "
                               "opens one closed directory above the program")
        directory = Path(*parts[: closed[0] + 1])
        found.add((directory, directory / parts[closed[0] + 1]))
    if len(found) > 1:
        raise RuntimeError(f"{program}: needs several closed directories opened: {found}")
    return found.pop() if found else None


def _netns_pids(netns: str) -> set[int]:
    proc = _run(_ip(), "netns", "pids", netns, check=False)
    return {int(p) for p in proc.stdout.split() if p.isdigit()}


def _cmdline(pid: int) -> list[str]:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return [part.decode(errors="replace") for part in raw.split(b"\0") if part]


def _pgid_members(pgid: int) -> set[int]:
    members = set()
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        with contextlib.suppress(OSError, IndexError, ValueError):
            data = Path(f"/proc/{name}/stat").read_text()
            if int(data.rpartition(")")[2].split()[2]) == pgid:
                members.add(int(name))
    return members


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


def _kill_and_wait(pids: set[int], child: subprocess.Popen[bytes] | None = None,
                   timeout: float = 10) -> None:
    """SIGKILL ``pids`` and wait until they are gone (reaping ``child``, ours)."""
    pids = pids - {os.getpid()}
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    if child is not None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            child.wait(timeout=timeout)
    deadline = time.monotonic() + timeout
    while any(_running(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.02)


def _active_port(profile: Path) -> int | None:
    try:
        first = (profile / "DevToolsActivePort").read_text().split("\n", 1)[0].strip()
    except OSError:
        return None
    return int(first) if first.isdigit() and int(first) > 0 else None
