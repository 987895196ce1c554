"""The share-host harness itself (tests/e2e/share_host.py): a host nobody can dial that
dials out to h2.  The ``share`` tests mean nothing unless it is what it claims, so these
check the real effect from the outside: raw sockets in each namespace, OpenSSH's own
client, sshd's log, /proc — not the harness's bookkeeping.
"""

from __future__ import annotations

import errno
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.e2e.share_host import GATEWAY, ShareHost, as_login_user
from tests.topology import ROOT, Topology, down, up

pytestmark = pytest.mark.e2e


@pytest.fixture
def share(topology: Topology) -> Iterator[ShareHost]:
    with ShareHost(topology, dest=topology.host("h2"), index=1) as host:
        yield host


def connect(address: str, port: int, timeout: float = 3) -> OSError | bytes:
    """A TCP connect from the calling thread's namespace: the error, or the first bytes
    the server sends (b"" if it sends none within ``timeout``)."""
    try:
        with socket.create_connection((address, port), timeout=timeout) as sock:
            try:
                return sock.recv(64)
            except TimeoutError:
                return b""
    except OSError as exc:
        return exc


def connecting(address: str, port: int) -> Callable[[], OSError | bytes]:
    """:func:`connect` for ``run_in_netns`` (a thread inside a namespace)."""
    return lambda: connect(address, port)


def netns_pids(netns: str) -> set[int]:
    out = subprocess.run(["ip", "netns", "pids", netns], capture_output=True, text=True,
                         check=True).stdout
    return {int(p) for p in out.split()}


def comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def proc_uid(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Uid:"):
            return int(line.split()[1])
    raise AssertionError(f"no Uid line for {pid}")


def running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


def share_leftovers(netns: str, subnet: str, home: Path) -> list[str]:
    """What of a share host still exists on the machine."""
    found = []
    if netns in subprocess.run(["ip", "netns", "list"], capture_output=True,
                               text=True).stdout.split():
        found.append(f"netns {netns}")
    routes = subprocess.run(["ip", "route", "show", subnet], capture_output=True,
                            text=True).stdout
    if routes.strip():
        found.append(f"route {routes.strip()}")
    if (Path("/etc/netns") / netns).exists():
        found.append(f"/etc/netns/{netns}")
    if home.exists():
        found.append(f"home {home}")
    return found


# ----------------------------------------------------------------------------- network


def test_the_share_host_reaches_dest_sshd(share: ShareHost) -> None:
    dest = share.dest
    banner = share.run_in_netns(connecting(dest.address, dest.ssh_port))
    assert isinstance(banner, bytes) and banner.startswith(b"SSH-2.0-OpenSSH"), banner


def test_the_share_host_has_no_sshd_and_reaches_nothing_else(
        share: ShareHost, topology: Topology) -> None:
    mine = share.run_in_netns(connecting(share.address, 22))
    assert isinstance(mine, ConnectionRefusedError), mine
    assert not [pid for pid in netns_pids(share.netns) if comm(pid).startswith("sshd")]
    # Only dest is routed: h1 (another host) and the root namespace's side of h2's own
    # link are not, and the failure is local and immediate.
    h1 = topology.host("h1")
    for address in (h1.address, share.dest.gateway_address):
        started = time.monotonic()
        error = share.run_in_netns(connecting(address, 22))
        assert isinstance(error, OSError) and error.errno == errno.ENETUNREACH, (address, error)
        assert time.monotonic() - started < 2


def test_the_root_namespace_cannot_reach_the_share_host(share: ShareHost) -> None:
    browser = share.start_browser()
    for address, port in ((share.address, 22), (share.address, browser.port),
                          (share.dest_side_address, 22)):
        started = time.monotonic()
        error = connect(address, port, timeout=5)
        elapsed = time.monotonic() - started
        # The harness's `unreachable` route: refused here, nothing sent off the machine.
        assert isinstance(error, OSError) and error.errno == errno.EHOSTUNREACH, (address, error)
        assert elapsed < 2, elapsed


def test_an_ssh_login_with_the_homes_key_comes_from_the_share_host(share: ShareHost) -> None:
    dest = share.dest
    logins = dest.ssh_logins()
    proc = share.run("ssh", "-F", str(share.ssh_config), "-o", "BatchMode=yes",
                     "-o", "ConnectTimeout=5", "h2", 'echo "$SSH_CONNECTION"; id -un')
    assert proc.returncode == 0, proc.stderr
    client, _, server, port = proc.stdout.splitlines()[0].split()
    assert (client, server, int(port)) == (share.address, dest.address, dest.ssh_port)
    assert proc.stdout.splitlines()[1] == dest.user
    # Without -F too: root's home in the share namespace is the sharer's HOME, which
    # is where OpenSSH's client looks (it reads the home from passwd, not $HOME).
    plain = share.run("ssh", "-o", "BatchMode=yes", "h2", "true")
    assert plain.returncode == 0, plain.stderr
    assert dest.ssh_logins() == logins + 2


# ----------------------------------------------------------------------------- browsers


def test_a_browser_answers_on_the_share_hosts_loopback(share: ShareHost) -> None:
    browser = share.start_browser()
    assert browser.profile == share.home / ".config" / "chromium" == share.default_profile
    assert browser.devtools_active_port_file.read_text().split("\n")[0] == str(browser.port)
    assert "Chrome/" in share.devtools_version(browser)["Browser"]
    assert browser.pid in netns_pids(share.netns)
    assert comm(browser.pid) == "chromium" and proc_uid(browser.pid) == 0
    # Loopback only: not even dest, the one host linked to the share host, reaches it.
    from_dest = share.dest.run_in_netns(connecting(share.address, browser.port))
    assert isinstance(from_dest, ConnectionRefusedError), from_dest

    second = share.start_browser("--window-size=800,600")
    assert second.profile.parent == share.home and second.profile != browser.profile
    assert second.port != browser.port
    assert not (share.default_profile / "chromium").exists()  # CHROME_CONFIG_HOME kept out
    share.kill_browser(second)
    assert second.process.returncode == -9 and not running(second.pid)
    assert not [pid for pid in netns_pids(share.netns)  # its children and crashpad too
                if running(pid) and str(second.profile) in cmdline(pid)]
    # As after a crash: the file stays, naming a port nobody listens on.
    assert second.devtools_active_port_file.read_text().split("\n")[0] == str(second.port)
    gone = share.run_in_netns(connecting("127.0.0.1", second.port))
    assert isinstance(gone, ConnectionRefusedError), gone

    share.stop_browser(browser)
    assert browser.process.returncode == 0  # SIGTERM: a clean exit
    assert not [pid for pid in netns_pids(share.netns) if comm(pid).startswith("chrom")]

    again = share.start_browser(profile=share.default_profile)
    assert again.profile == share.default_profile and again.pid != browser.pid
    assert share.devtools_version(again)["webSocketDebuggerUrl"]


# ----------------------------------------------------------------------------- commands


def test_spawned_commands_run_as_root_in_the_share_namespace_with_a_clean_env(
        share: ShareHost) -> None:
    proc = share.run("sh", "-c", 'id -u; echo "$HOME"; env | sort; readlink /proc/self/ns/net')
    assert proc.returncode == 0, proc.stderr
    uid, home, *env, netns = proc.stdout.splitlines()
    assert (uid, home) == ("0", str(share.home))
    names = {line.split("=", 1)[0] for line in env}
    assert names == {"HOME", "PATH", "LANG", "TMPDIR", "XDG_RUNTIME_DIR", "PWD"}, names
    assert netns != os.readlink("/proc/self/ns/net")

    child = share.spawn("sleep", "600")
    assert os.getpgid(child.pid) == child.pid  # a session of its own: signal it, or its group
    assert child.pid in netns_pids(share.netns)
    os.kill(child.pid, signal.SIGINT)
    assert child.wait(timeout=10) == -signal.SIGINT


def test_as_login_user_runs_the_gateway_as_the_hosts_user(topology: Topology) -> None:
    h2 = topology.host("h2")
    probe = ("import gateway, os; print(os.getuid(), os.getgid(), os.getgroups(), "
             "os.environ['HOME'], gateway.__file__)")
    proc = subprocess.run(as_login_user(h2, GATEWAY[0], "-c", probe), capture_output=True,
                          text=True, timeout=30, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == [str(h2.uid), str(h2.uid), "[]", str(h2.home),
                                   str(Path(__file__).parents[2] / "gateway" / "__init__.py")]
    cli = subprocess.run(as_login_user(h2, *GATEWAY, "--help"), capture_output=True,
                         text=True, timeout=30, stdin=subprocess.DEVNULL)
    assert cli.returncode == 0 and "share" in cli.stdout, cli.stderr
    # The user's permissions stay real: what opened the interpreter's path opened no more.
    closed = subprocess.run(as_login_user(h2, GATEWAY[0], "-c", "import os; os.listdir('/tmp/"
                                          f"{ROOT.name}/client')"),
                            capture_output=True, text=True, timeout=30)
    assert closed.returncode != 0 and "PermissionError" in closed.stderr
    extra = subprocess.run(as_login_user(h2, "/bin/sh", "-c", 'echo "$X $LANG"',
                                         env={"X": "1", "LANG": "C"}),
                           capture_output=True, text=True, timeout=30)
    assert extra.stdout == "1 C\n", extra.stderr


# ----------------------------------------------------------------------------- cleanup


def test_close_kills_everything_and_removes_the_host_twice_over(topology: Topology) -> None:
    share = ShareHost(topology, index=2)
    child = share.spawn("sleep", "600")
    browser = share.start_browser()
    family = netns_pids(share.netns)
    assert len(family) > 2
    share.close()
    assert child.returncode == -9 and browser.process.returncode is not None
    assert not [pid for pid in family if running(pid)]
    assert share_leftovers(share.netns, share.subnet, share.home) == []
    share.close()  # idempotent


def test_a_new_share_host_replaces_the_leftovers_of_an_old_one(topology: Topology) -> None:
    old = ShareHost(topology, index=2)
    child = old.spawn("sleep", "600")
    with ShareHost(topology, index=2) as new:
        assert child.wait(timeout=10) == -9
        banner = new.run_in_netns(connecting(new.dest.address, 22))
        assert isinstance(banner, bytes) and banner.startswith(b"SSH-"), banner
    assert share_leftovers(new.netns, new.subnet, new.home) == []
    old.close()


def test_topology_down_removes_what_a_crashed_run_left(topology: Topology) -> None:
    """A pytest killed mid-test leaves a share host; the session teardown (down()) must
    remove all of it.  Last in the module: it tears the topology down and builds it
    again (same names and paths, so the session's ``topology`` stays valid)."""
    crash = (
        "import os, signal\n"
        "from tests.topology import load\n"
        "from tests.e2e.share_host import ShareHost\n"
        "share = ShareHost(load(), index=3)\n"
        "child = share.spawn('sleep', '600')\n"
        "browser = share.start_browser()\n"
        "print(share.netns, share.subnet, share.home, child.pid, browser.pid, flush=True)\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    proc = subprocess.run([sys.executable, "-c", crash], capture_output=True, text=True,
                          timeout=60, cwd=Path(__file__).parents[2])
    assert proc.returncode == -9, proc.stderr
    netns, subnet, home, *pids = proc.stdout.split()
    assert all(running(int(pid)) for pid in pids)
    assert len(share_leftovers(netns, subnet, Path(home))) == 4
    try:
        down()
        assert share_leftovers(netns, subnet, Path(home)) == []
        assert not [pid for pid in pids if running(int(pid))]
    finally:
        up(2)
    assert not topology.problems()
