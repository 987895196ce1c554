"""``python -m gateway doctor``: every failure kind, on real hosts, through the real CLI.

Each test breaks one thing on the topology (``fault_topology`` repairs it afterwards),
runs the doctor as a subprocess with the topology's client environment, and checks
the step that must fail, the fix it prints, that the steps after it are skipped,
and the exit status (0 all up, 1 a target down, 2 configuration error). Most runs
use ``--json`` so the assertions read fields rather than table columns; one test
checks the human table itself.

DNS is the delicate one: looking up a made-up name would send a query to the
machine's DNS server, which the tests must never do. So the doctor runs in a
private mount namespace (``unshare --mount``) where ``/etc/nsswitch.conf`` says
``hosts: files`` and ``/etc/hosts`` is a file of ours: glibc then answers from
that file alone — one name resolves, the other fails with "Name or service not
known" — and no socket is opened (checked with strace while writing this test).
The same trick, with ``unshare --net`` as well, gives the embedded local default a
loopback of its own, so nobody else's Chrome on 127.0.0.1:9222 can answer it.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.helpers import remote_pages, write_targets
from tests.topology import Topology

REPO = Path(__file__).resolve().parents[2]
RUN_BOUND = 90
"""Upper bound on one doctor run: a hang fails the test instead of stalling CI."""

STEP_NAMES = ["config", "dns", "tcp", "host_key", "auth", "webdriver", "session", "endpoint",
              "launch", "websocket", "browser", "tabs"]
SSH_STEPS = {"dns", "tcp", "host_key", "auth"}
# Steps only some targets run: "launch" (launch = true), the WebDriver ones (webdriver).
OPTIONAL_STEPS = {"launch", "webdriver", "session"}


def _doctor(
    env: dict[str, str], *args: str, config: Path | None = None, wrap: list[str] | None = None
) -> subprocess.CompletedProcess[str]:
    options = ["--config", str(config)] if config is not None else []
    argv = [sys.executable, "-m", "gateway", "doctor", *options, *args]
    return subprocess.run(
        [*(wrap or []), *argv], env=env, capture_output=True, text=True, timeout=RUN_BOUND,
        stdin=subprocess.DEVNULL, cwd=REPO,
    )


def _json(result: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    payload: dict[str, Any] = json.loads(result.stdout)  # stdout is the JSON and nothing else
    return payload


def _steps(payload: dict[str, Any], target: str) -> dict[str, dict[str, Any]]:
    [entry] = [t for t in payload["targets"] if t["name"] == target]
    assert [s["name"] for s in entry["steps"]] == STEP_NAMES
    return {s["name"]: s for s in entry["steps"]}


def _checked(steps: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """The steps of a target that does not launch nor use WebDriver: all but those, skipped."""
    for name in OPTIONAL_STEPS:
        assert steps[name]["status"] == "skipped", steps[name]
    return [s for name, s in steps.items() if name not in OPTIONAL_STEPS]


def _fingerprint(public_key: Path) -> str:
    out = subprocess.run(["ssh-keygen", "-lf", str(public_key)], capture_output=True,
                         text=True, check=True, timeout=10).stdout
    return out.split()[1]


def _assert_fails_at(steps: dict[str, dict[str, Any]], failed: str) -> dict[str, Any]:
    """Every step before ``failed`` ok (or, on a local target, a skipped SSH step),
    ``failed`` failed with a fix, every later one skipped."""
    index = STEP_NAMES.index(failed)
    local = steps["dns"]["detail"] == "local target: no SSH"
    for name in STEP_NAMES[:index]:
        # "launch" runs only for a target that launches when no browser is found.
        expected = "skipped" if (local and name in SSH_STEPS) or name in OPTIONAL_STEPS \
            else "ok"
        assert steps[name]["status"] == expected, (name, steps[name])
    step = steps[failed]
    assert step["status"] == "failed", step
    assert step["fix"], step
    assert isinstance(step["ms"], float)
    for name in STEP_NAMES[index + 1:]:
        assert (steps[name]["status"], steps[name]["ms"], steps[name]["fix"]) == (
            "skipped", None, None), (name, steps[name])
    return step


def _one_target(tmp_path: Path, table: dict[str, object]) -> Path:
    return write_targets(tmp_path / "targets.toml", {"t": table})


# ------------------------------------------------------------------------------ all up


def test_every_step_ok_on_two_hosts(topology: Topology, tmp_path: Path) -> None:
    h1, h2 = topology.host("h1"), topology.host("h2")
    config = write_targets(tmp_path / "targets.toml", {"one": {"ssh": "h1"},
                                                       "two": {"ssh": "h2"}})

    result = _doctor(topology.client_env(), "--json", config=config)

    assert result.returncode == 0, result.stdout + result.stderr
    payload = _json(result)
    assert (payload["config"], payload["up"]) == (str(config), True)
    assert [t["name"] for t in payload["targets"]] == ["one", "two"]
    for name, host in (("one", h1), ("two", h2)):
        steps = _steps(payload, name)
        assert all(s["status"] == "ok" and s["fix"] is None for s in _checked(steps)), steps
        assert all(isinstance(s["ms"], float) and s["ms"] >= 0 for s in _checked(steps))
        assert steps["dns"]["detail"] == (f"{host.address} (HostName of {host.name}) is an IP "
                                          "address, port 22")
        assert steps["tcp"]["detail"].startswith(f"{host.address}:22 answered: SSH-2.0-OpenSSH")
        fingerprint = _fingerprint(host.host_key.with_suffix(".pub"))
        assert steps["host_key"]["detail"] == (f"ssh-ed25519 {fingerprint} matches "
                                               f"{topology.known_hosts}")
        key = _fingerprint(topology.identity_file.with_suffix(".pub"))
        assert steps["auth"]["detail"] == (f"as {host.user} with {topology.identity_file} "
                                           f"(ssh-ed25519 {key})")
        port = host.chrome_port()
        profile = host.profile_dir.relative_to(host.home)
        assert steps["endpoint"]["detail"] == f"DevToolsActivePort in {profile}: port {port}"
        browser_path = host.devtools_active_port_file.read_text().split("\n")[1].strip()
        assert steps["websocket"]["detail"] == f"ws://127.0.0.1:{port}{browser_path}"
        version = host.devtools_version()
        assert steps["browser"]["detail"] == (f"{version['Browser']} (protocol "
                                              f"{version['Protocol-Version']})")
        pages = len(remote_pages(host))
        assert steps["tabs"]["detail"] == f"{pages} tab{'s' if pages != 1 else ''}"


def test_human_table(topology: Topology, tmp_path: Path) -> None:
    config = write_targets(tmp_path / "targets.toml", {"one": {"ssh": "h1"},
                                                       "gone": {"ssh": "h1", "cdp": "127.0.0.1:1"}})

    result = _doctor(topology.client_env(), config=config)

    assert result.returncode == 1, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == f"configuration: {config}"
    assert "one (ssh h1): UP" in lines
    assert "gone (ssh h1): DOWN" in lines
    header = lines.index("gone (ssh h1): DOWN") + 1
    assert lines[header].split() == ["step", "status", "ms", "detail"]
    rows = lines[header + 1: header + 13]
    assert [row.split("  ")[1].strip() for row in rows] == [
        "config parsed", "DNS resolution", "TCP connect", "host key known", "authenticated",
        "WebDriver status", "session created", "DevTools endpoint", "launch",
        "websocket handshake", "browser version", "tab count"]
    statuses = [row[2 + 19 + 2:].split()[0] for row in rows]
    assert statuses == ["ok"] * 5 + ["skip"] * 2 + ["FAIL"] + ["skip"] * 4
    assert lines[header + 13] == (
        "  fix (DevTools endpoint): no Chrome DevTools at 127.0.0.1:1 on h1: start one with "
        "--remote-debugging-port=1 --user-data-dir=<dir> (Chrome ≥136 needs --user-data-dir "
        "for remote debugging), or fix `cdp`")
    assert lines[-1] == "2 targets: 1 up, 1 down"


def test_target_selection(topology: Topology, tmp_path: Path) -> None:
    config = write_targets(tmp_path / "targets.toml", {"one": {"ssh": "h1"},
                                                       "broken": {"ssh": "h1",
                                                                  "cdp": "127.0.0.1:1"}})

    result = _doctor(topology.client_env(), "--json", "--target", "one", config=config)

    assert result.returncode == 0, result.stdout  # the broken target was not checked
    assert [t["name"] for t in _json(result)["targets"]] == ["one"]


def test_unknown_target_is_a_configuration_error(topology: Topology, tmp_path: Path) -> None:
    config = write_targets(tmp_path / "targets.toml", {"one": {"ssh": "h1"},
                                                       "two": {"ssh": "h2"}})

    result = _doctor(topology.client_env(), "--target", "nope", config=config)

    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.strip() == (
        f"chrome-ssh-gateway: configuration error: --target: unknown target 'nope'; "
        f"configured targets in {config}: one, two")


def test_bad_targets_file_exits_2_with_file_and_key(topology: Topology, tmp_path: Path) -> None:
    config = tmp_path / "targets.toml"
    config.write_text('[targets.t]\nssh = "h1"\nhost_key_policy = "yolo"\n')

    result = _doctor(topology.client_env(), "--json", config=config)

    assert result.returncode == 2
    assert result.stdout == ""
    assert f"configuration error: {config}: targets.t.host_key_policy" in result.stderr


# --------------------------------------------------------------------------- SSH faults


def test_unknown_host_key(topology: Topology, tmp_path: Path) -> None:
    home = topology.make_client_home(tmp_path / "home", known_hosts=False)
    known_hosts = home / ".ssh" / "known_hosts"
    h1 = topology.host("h1")
    fingerprint = _fingerprint(h1.host_key.with_suffix(".pub"))

    result = _doctor(topology.client_env(home), "--json", config=_one_target(tmp_path, {
        "ssh": "h1"}))

    assert result.returncode == 1
    step = _assert_fails_at(_steps(_json(result), "t"), "host_key")
    assert step["detail"] == (f"h1 ({h1.address}) offers {fingerprint}, which is not in "
                              f"{known_hosts}")
    assert f"`ssh-keyscan -p 22 {h1.address} >> {known_hosts}`" in step["fix"]
    assert f"fingerprint is {fingerprint}" in step["fix"]
    assert known_hosts.read_text() == ""


def test_accept_new_is_reported_but_not_recorded(topology: Topology, tmp_path: Path) -> None:
    home = topology.make_client_home(tmp_path / "home", known_hosts=False)
    known_hosts = home / ".ssh" / "known_hosts"
    h2 = topology.host("h2")

    result = _doctor(topology.client_env(home), "--json", config=_one_target(tmp_path, {
        "ssh": "h2", "host_key_policy": "accept-new"}))

    assert result.returncode == 0, result.stdout
    steps = _steps(_json(result), "t")
    assert all(s["status"] == "ok" for s in _checked(steps)), steps
    fingerprint = _fingerprint(h2.host_key.with_suffix(".pub"))
    assert steps["host_key"]["detail"] == (
        f"{fingerprint} is not in {known_hosts} yet; host_key_policy accept-new: `serve` "
        "records it on its first connect")
    assert known_hosts.read_text() == ""  # a diagnosis writes nothing


def test_changed_host_key(fault_topology: Topology, tmp_path: Path) -> None:
    topology = fault_topology
    home = topology.make_client_home(tmp_path / "home")
    known_hosts = home / ".ssh" / "known_hosts"
    before = known_hosts.read_bytes()
    h2 = topology.host("h2")
    h2.rotate_host_key()
    fingerprint = _fingerprint(h2.host_key.with_suffix(".pub"))

    result = _doctor(topology.client_env(home), "--json", config=_one_target(tmp_path, {
        "ssh": "h2", "host_key_policy": "accept-new"}))

    assert result.returncode == 1
    step = _assert_fails_at(_steps(_json(result), "t"), "host_key")
    assert step["detail"] == (f"h2 ({h2.address}) offers {fingerprint}, which is NOT the one "
                              f"in {known_hosts}")
    assert f"`ssh-keygen -R {h2.address} -f {known_hosts}`" in step["fix"]
    assert f"`ssh-keyscan -p 22 {h2.address} >> {known_hosts}`" in step["fix"]
    assert known_hosts.read_bytes() == before


def test_sshd_down(fault_topology: Topology, tmp_path: Path) -> None:
    h1 = fault_topology.host("h1")
    h1.stop_sshd()

    result = _doctor(fault_topology.client_env(), "--json",
                     config=_one_target(tmp_path, {"ssh": "h1"}))

    assert result.returncode == 1
    step = _assert_fails_at(_steps(_json(result), "t"), "tcp")
    assert step["detail"] == f"connection to {h1.address}:22 refused"
    assert step["fix"].startswith(f"sshd not listening on {h1.address}:22 — start it there")


@pytest.mark.parametrize("silent", [False, True], ids=["no-route", "dropped"])
def test_link_down(fault_topology: Topology, tmp_path: Path, silent: bool) -> None:
    """The broken host fails at TCP within its connect timeout; the other host is still up."""
    h1 = fault_topology.host("h1")
    config = write_targets(tmp_path / "targets.toml", {
        "cut": {"ssh": "h1", "reconnect.connect_timeout_s": 2},  # a TOML dotted key
        "fine": {"ssh": "h2"},
    })
    h1.link_down(silent=silent)

    started = time.monotonic()
    result = _doctor(fault_topology.client_env(), "--json", config=config)
    elapsed = time.monotonic() - started

    assert result.returncode == 1
    payload = _json(result)
    step = _assert_fails_at(_steps(payload, "cut"), "tcp")
    if silent:
        assert step["detail"] == f"no answer from {h1.address}:22 within 2 s"
        assert step["fix"].startswith(f"host unreachable (no answer from {h1.address}:22)")
        assert 1.5 <= step["ms"] / 1000 <= 6  # the connect timeout, not the kernel's minutes
    else:
        assert step["detail"] == f"no route to {h1.address} (No route to host)"
        assert step["fix"].startswith("host unreachable (no route) — check VPN")
    assert elapsed < 45
    assert all(s["status"] == "ok" for s in _checked(_steps(payload, "fine")))


def test_authentication_failure(topology: Topology, tmp_path: Path) -> None:
    h1 = topology.host("h1")
    key = _fingerprint(topology.identity_file.with_suffix(".pub"))

    result = _doctor(topology.client_env(), "--json",
                     config=_one_target(tmp_path, {"ssh": "nosuchuser@h1"}))

    assert result.returncode == 1
    steps = _steps(_json(result), "t")
    step = _assert_fails_at(steps, "auth")
    assert steps["host_key"]["detail"].endswith(f"matches {topology.known_hosts}")
    assert step["detail"] == (f"nosuchuser@h1 accepted none of the keys offered: "
                              f"{topology.identity_file} (ssh-ed25519 {key})")
    assert "`ssh-copy-id nosuchuser@h1`" in step["fix"]
    assert "check that nosuchuser is the right login on h1" in step["fix"]
    assert h1.sshd_pid() is not None


def test_proxy_jump_checks_the_jump_host(topology: Topology, tmp_path: Path) -> None:
    """``ProxyJump h1`` to h1's own address: DNS/TCP probe the jump host, the rest goes through."""
    home = topology.make_client_home(tmp_path / "home")
    h1 = topology.host("h1")
    ssh_config = home / ".ssh" / "config"
    ssh_config.write_text(ssh_config.read_text() + (
        f"\nHost viajump\n    HostName {h1.address}\n    ProxyJump h1\n    User {h1.user}\n"
        f"    IdentityFile {home}/.ssh/id_ed25519\n    IdentitiesOnly yes\n"
        f"    UserKnownHostsFile {home}/.ssh/known_hosts\n    GlobalKnownHostsFile /dev/null\n"))

    result = _doctor(topology.client_env(home), "--json",
                     config=_one_target(tmp_path, {"ssh": "viajump"}))

    assert result.returncode == 0, result.stdout
    steps = _steps(_json(result), "t")
    assert all(s["status"] == "ok" for s in _checked(steps)), steps
    assert steps["dns"]["detail"] == (f"ProxyJump h1: checking the jump host — {h1.address} is "
                                      "an IP address, port 22")
    assert steps["browser"]["detail"].startswith(h1.devtools_version()["Browser"])


# ----------------------------------------------------------------------- browser faults


def test_chrome_not_running(fault_topology: Topology, tmp_path: Path) -> None:
    h2 = fault_topology.host("h2")
    h2.stop_chrome()
    h2.devtools_active_port_file.unlink()  # as on a host where Chrome never ran

    result = _doctor(fault_topology.client_env(), "--json",
                     config=_one_target(tmp_path, {"ssh": "h2"}))

    assert result.returncode == 1
    step = _assert_fails_at(_steps(_json(result), "t"), "endpoint")
    assert step["detail"].startswith("no DevToolsActivePort in the usual profile directories "
                                     "(~/.config/google-chrome, ~/.config/chromium")
    assert step["detail"].endswith("nothing at 127.0.0.1:9222: nothing listens there "
                                   "(the SSH server could not connect to it)")
    assert step["fix"] == (
        "no Chrome found in ~/.config/google-chrome, ~/.config/chromium on h2: for the "
        "person's own Chrome (144+), the person opens chrome://inspect/#remote-debugging in "
        "their Chrome and turns on \"Allow remote debugging for this browser instance\" (it "
        "stays on across restarts); Chrome then asks them once for each connection; for a "
        "browser of the agent's own, start one with --remote-debugging-port=0 "
        "--user-data-dir=<dir> (Chrome ≥136 needs --user-data-dir for remote debugging)")


@pytest.mark.parametrize("how", ["SIGKILL", "SIGTERM"])
def test_stale_devtools_active_port(fault_topology: Topology, tmp_path: Path, how: str) -> None:
    """A crashed (or stopped) Chrome leaves DevToolsActivePort behind, naming a dead port."""
    h1 = fault_topology.host("h1")
    port = h1.chrome_port()
    if how == "SIGKILL":
        h1.kill_chrome()
    else:
        h1.stop_chrome()
    assert h1.devtools_active_port_file.exists()

    result = _doctor(fault_topology.client_env(), "--json",
                     config=_one_target(tmp_path, {"ssh": "h1"}))

    assert result.returncode == 1
    step = _assert_fails_at(_steps(_json(result), "t"), "endpoint")
    assert step["detail"].startswith(
        f"stale DevToolsActivePort in .config/chromium (port {port}: DevTools websocket ")
    assert step["fix"] == (
        "the Chrome that wrote DevToolsActivePort in ~/.config/chromium is gone (it crashed "
        "or was killed and left the file behind): start Chrome again on h1 with "
        "--remote-debugging-port=0 --user-data-dir=~/.config/chromium")


def test_profile_without_devtools_active_port(topology: Topology, tmp_path: Path) -> None:
    h1 = topology.host("h1")
    profile = h1.home / "tmp"  # exists, holds no DevToolsActivePort

    result = _doctor(topology.client_env(), "--json",
                     config=_one_target(tmp_path, {"ssh": "h1", "profile": str(profile)}))

    assert result.returncode == 1
    step = _assert_fails_at(_steps(_json(result), "t"), "endpoint")
    assert step["detail"].startswith(f"no DevToolsActivePort in {profile}; nothing at "
                                     "127.0.0.1:9222")
    assert step["fix"] == (
        f"no Chrome runs with --user-data-dir={profile} on h1: start one with "
        f"--remote-debugging-port=0 --user-data-dir={profile} (Chrome ≥136 needs "
        "--user-data-dir for remote debugging), or fix `profile`")


# ----------------------------------------------------- private mount (and net) namespace


def _private_etc(tmp_path: Path, hosts: str, *, own_network: bool = False) -> list[str]:
    """argv prefix: run in a mount namespace whose resolver reads only our hosts file."""
    if shutil.which("unshare") is None:
        pytest.fail("unshare (util-linux) is needed for this test")
    nsswitch = tmp_path / "nsswitch.conf"
    nsswitch.write_text("hosts: files\n")
    hosts_file = tmp_path / "hosts"
    hosts_file.write_text("127.0.0.1 localhost\n" + hosts)
    script = (f"mount --bind {nsswitch} /etc/nsswitch.conf && "
              f"mount --bind {hosts_file} /etc/hosts && "
              + ("ip link set lo up && " if own_network else "") + 'exec "$@"')
    flags = ["--mount", "--propagation", "private"] + (["--net"] if own_network else [])
    return ["unshare", *flags, "sh", "-c", script, "doctor"]


def test_dns_resolution(topology: Topology, tmp_path: Path) -> None:
    """One alias whose HostName resolves through the private hosts file, one that does not."""
    home = topology.make_client_home(tmp_path / "home")
    h1 = topology.host("h1")
    ssh_config = home / ".ssh" / "config"
    extra = ""
    for alias, name in (("byname", "h1.doctor.test"), ("ghost", "ghost.doctor.test")):
        extra += (f"\nHost {alias}\n    HostName {name}\n    User {h1.user}\n"
                  f"    IdentityFile {home}/.ssh/id_ed25519\n    IdentitiesOnly yes\n"
                  f"    UserKnownHostsFile {home}/.ssh/known_hosts\n"
                  "    GlobalKnownHostsFile /dev/null\n")
    ssh_config.write_text(ssh_config.read_text() + extra)
    known_hosts = home / ".ssh" / "known_hosts"
    known_hosts.write_text(known_hosts.read_text().replace(
        f"{h1.address} ", f"h1.doctor.test,{h1.address} ", 1))
    config = write_targets(tmp_path / "targets.toml", {"named": {"ssh": "byname"},
                                                       "ghost": {"ssh": "ghost"}})
    wrap = _private_etc(tmp_path, f"{h1.address} h1.doctor.test\n")

    result = _doctor(topology.client_env(home), "--json", config=config, wrap=wrap)

    assert result.returncode == 1, result.stderr
    payload = _json(result)
    named = _steps(payload, "named")
    assert all(s["status"] == "ok" for s in _checked(named)), named
    assert named["dns"]["detail"] == f"h1.doctor.test (HostName of byname) → {h1.address}"
    step = _assert_fails_at(_steps(payload, "ghost"), "dns")
    assert step["detail"] == ("cannot resolve ghost.doctor.test (HostName of ghost in "
                              "~/.ssh/config): Name or service not known")
    assert step["fix"].startswith("ghost.doctor.test is not a known host name: check its "
                                  "spelling (HostName for ghost in ~/.ssh/config")


def test_embedded_local_default_is_not_launched(topology: Topology, tmp_path: Path) -> None:
    """Nothing configured, no Chrome running: ok with a note, and no browser started.

    The run gets a network namespace of its own (only an empty loopback), so the
    127.0.0.1:9222 fallback is certainly unanswered whatever runs on this machine.
    """
    home = tmp_path / "home"
    home.mkdir()
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    env = topology.client_env(home) | {"TMPDIR": str(scratch)}
    wrap = _private_etc(tmp_path, "", own_network=True)

    with_binary = _doctor(env | {"CHROME_PATH": "/usr/lib/chromium/chromium"}, "--json",
                          wrap=wrap)
    without = _doctor(env | {"CHROME_PATH": str(tmp_path / "no-such-chrome")}, "--json",
                      wrap=wrap)

    assert with_binary.returncode == 0, with_binary.stdout + with_binary.stderr
    payload = _json(with_binary)
    assert payload["config"] == "embedded default"
    steps = _steps(payload, "local")
    assert steps["endpoint"] == {
        "name": "endpoint", "status": "ok", "ms": steps["endpoint"]["ms"], "fix": None,
        "detail": "no running Chrome found"}
    assert steps["launch"]["detail"] == ("`serve` would start /usr/lib/chromium/chromium "
                                         "(headless) on a temporary profile")
    assert [steps[n]["status"] for n in STEP_NAMES] == ["ok"] + ["skipped"] * 6 + ["ok"] * 2 + [
        "skipped"] * 3
    assert steps["dns"]["detail"] == "local target: no SSH"
    assert list(scratch.iterdir()) == []  # no temporary profile: nothing was launched

    assert without.returncode == 1
    steps = _steps(_json(without), "local")
    assert steps["endpoint"]["status"] == "ok"
    step = steps["launch"]
    assert step["status"] == "failed"
    assert step["detail"] == (f"no Chrome/Chromium binary found on this machine (tried "
                              f"{tmp_path / 'no-such-chrome'})")
    assert step["fix"].startswith("install one there (`sudo apt install chromium`")

