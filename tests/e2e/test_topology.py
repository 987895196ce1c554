"""The test topology itself: each fault-injection helper must do what it claims.

If these fail, every gateway e2e test built on the topology is meaningless, so they check
the real effect from the outside (OpenSSH's own client, raw sockets) rather than trusting
the helpers' bookkeeping.
"""

from __future__ import annotations

import errno
import json
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tests.topology import RemoteHost, Topology

pytestmark = pytest.mark.e2e


def ssh(
    topology: Topology,
    host: str,
    command: str,
    *,
    home: Path | None = None,
    options: tuple[str, ...] = (),
    timeout: float = 20,
) -> subprocess.CompletedProcess[str]:
    """Run ``command`` on ``host`` with OpenSSH's client, as the gateway's user would."""
    home = home or topology.client_home
    return subprocess.run(
        [
            "ssh",
            "-F",
            str(home / ".ssh" / "config"),
            "-o",
            "BatchMode=yes",
            "-o",
            "ConnectTimeout=5",
            *options,
            host,
            command,
        ],
        env=topology.client_env(home),
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def connect_from_root_ns(address: str, port: int, timeout: float = 2) -> OSError | None:
    """Try a TCP connect from the root namespace; the error, or None if it connected."""
    try:
        socket.create_connection((address, port), timeout=timeout).close()
    except OSError as exc:
        return exc
    return None


def probe_inside(host: RemoteHost, port: int) -> subprocess.CompletedProcess[str]:
    """``GET /json/version`` from a separate process inside the host's namespace."""
    script = textwrap.dedent(
        f"""
        import http.client, sys
        conn = http.client.HTTPConnection("127.0.0.1", {port}, timeout=5)
        conn.request("GET", "/json/version")
        response = conn.getresponse()
        sys.stdout.write(response.read().decode())
        sys.exit(0 if response.status == 200 else 1)
        """
    )
    return subprocess.run(
        host.netns_exec(sys.executable, "-c", script),
        capture_output=True,
        text=True,
        timeout=20,
        stdin=subprocess.DEVNULL,
    )


@pytest.fixture
def h1(fault_topology: Topology) -> RemoteHost:
    return fault_topology.host("h1")  # reset after the test by fault_topology


def test_ssh_login_to_every_host(topology: Topology) -> None:
    assert len(topology.hosts) >= 2
    for host in topology.hosts:
        result = ssh(topology, host.name, "id -un; echo $HOME; echo $SHELL")
        assert result.returncode == 0, result.stderr
        assert result.stdout.split() == [host.user, str(host.home), "/bin/sh"]


def test_devtools_active_port_sits_in_the_default_profile_dirs(topology: Topology) -> None:
    expected = {"h1": ".config/chromium", "h2": ".config/google-chrome"}
    for name, relative in expected.items():
        host = topology.host(name)
        assert host.profile_dir == host.home / relative
        result = ssh(topology, name, f"cat ~/{relative}/DevToolsActivePort")
        assert result.returncode == 0, result.stderr
        port_line, path_line = result.stdout.split("\n")
        assert int(port_line) == host.chrome_port()
        assert path_line.startswith("/devtools/browser/")
    # Nothing under h2's home hints at ~/.config/chromium: discovery must really search.
    assert not (topology.host("h2").home / ".config" / "chromium").exists()


def test_chrome_is_reachable_only_inside_its_namespace(topology: Topology) -> None:
    host = topology.host("h1")
    port = host.chrome_port()
    # The host itself is reachable from here (sshd answers) ...
    assert connect_from_root_ns(host.address, host.ssh_port) is None
    # ... but Chrome's port is not: it listens on the namespace's loopback only.
    error = connect_from_root_ns(host.address, port)
    assert error is not None, f"Chrome port {port} reachable from the root namespace"
    assert error.errno in (errno.ECONNREFUSED, errno.EHOSTUNREACH, errno.ENETUNREACH), error
    # Our own loopback has nothing there either.
    assert connect_from_root_ns("127.0.0.1", port) is not None

    inside = probe_inside(host, port)
    assert inside.returncode == 0, inside.stderr
    version = json.loads(inside.stdout)
    assert version["Browser"].startswith(("Chrome/", "HeadlessChrome/"))
    assert version["webSocketDebuggerUrl"].startswith(f"ws://127.0.0.1:{port}/devtools/browser/")


def test_restart_chrome_gives_a_new_working_port(h1: RemoteHost) -> None:
    old_port, old_pid = h1.chrome_port(), h1.chrome_pid()
    assert old_pid is not None

    new_port = h1.restart_chrome()

    assert new_port != old_port
    assert h1.chrome_port() == new_port
    assert h1.chrome_pid() not in (None, old_pid)
    assert probe_inside(h1, new_port).returncode == 0
    assert probe_inside(h1, old_port).returncode != 0


def test_stop_chrome_leaves_a_stale_devtools_active_port(h1: RemoteHost) -> None:
    port = h1.chrome_port()
    h1.stop_chrome()
    assert h1.chrome_pid() is None
    assert h1.chrome_port(timeout=0) == port  # the file stays, as after a real crash
    assert probe_inside(h1, port).returncode != 0


def test_rotated_host_key_is_rejected(topology: Topology, h1: RemoteHost) -> None:
    strict = ("-o", "StrictHostKeyChecking=yes")
    assert ssh(topology, "h1", "true", options=strict).returncode == 0

    h1.rotate_host_key()

    result = ssh(topology, "h1", "true", options=strict)
    assert result.returncode == 255
    assert "REMOTE HOST IDENTIFICATION HAS CHANGED" in result.stderr
    h1.reset()
    assert ssh(topology, "h1", "true", options=strict).returncode == 0


def test_unknown_host_key_with_empty_known_hosts(topology: Topology, tmp_path: Path) -> None:
    home = topology.make_client_home(tmp_path / "home", known_hosts=False)
    config = (home / ".ssh" / "config").read_text()
    assert f"UserKnownHostsFile {home}/.ssh/known_hosts" in config
    assert (home / ".ssh" / "known_hosts").read_text() == ""

    result = ssh(topology, "h1", "true", home=home, options=("-o", "StrictHostKeyChecking=yes"))
    assert result.returncode == 255
    assert "Host key verification failed" in result.stderr

    trusted = topology.make_client_home(tmp_path / "trusted")
    assert ssh(topology, "h1", "true", home=trusted).returncode == 0


def test_kill_ssh_sessions_keeps_the_listener(topology: Topology, h1: RemoteHost) -> None:
    session = subprocess.Popen(
        ["ssh", "-F", str(topology.ssh_config), "-o", "BatchMode=yes", "h1", "sleep 60"],
        env=topology.client_env(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 10
        while not any("sleep" in _cmdline(pid) for pid in h1.ssh_session_pids()):
            assert session.poll() is None, "ssh exited before its session started"
            assert time.monotonic() < deadline, "the ssh session never started"
            time.sleep(0.05)
        listener = h1.sshd_pid()

        h1.kill_ssh_sessions()

        assert session.wait(timeout=10) == 255
        assert h1.sshd_pid() == listener
        assert h1.ssh_session_pids() == []
        assert ssh(topology, "h1", "true").returncode == 0
    finally:
        session.kill()
        session.wait()


def test_stop_and_start_sshd(topology: Topology, h1: RemoteHost) -> None:
    h1.stop_sshd()
    error = connect_from_root_ns(h1.address, h1.ssh_port)
    assert isinstance(error, ConnectionRefusedError)
    h1.start_sshd()
    assert ssh(topology, "h1", "true").returncode == 0


def test_link_down_makes_the_host_unreachable(topology: Topology, h1: RemoteHost) -> None:
    h1.link_down()
    # Fails here and now: the packets must not wander off along the default route.
    error = connect_from_root_ns(h1.address, h1.ssh_port)
    assert error is not None and error.errno == errno.EHOSTUNREACH, error
    assert ssh(topology, "h1", "true").returncode == 255
    assert topology.host("h2").problems() == []
    h1.link_up()
    assert ssh(topology, "h1", "true").returncode == 0


def test_silent_link_down_drops_packets(topology: Topology, h1: RemoteHost) -> None:
    h1.link_down(silent=True)
    assert "link" in " ".join(h1.problems())
    error = connect_from_root_ns(h1.address, h1.ssh_port, timeout=0.5)
    assert isinstance(error, TimeoutError), error
    h1.link_up()
    assert h1.problems() == []
    assert ssh(topology, "h1", "true").returncode == 0


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""
