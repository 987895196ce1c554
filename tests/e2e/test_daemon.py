"""``call`` from a shell, across processes: one background gateway keeps tab ids, refs
and the SSH connection; a killed daemon is replaced and says so; an idle one exits."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

from gateway.daemon.runtime_dir import pid_alive
from tests.e2e.helpers import data_url
from tests.topology import Topology

ROOT = Path(__file__).resolve().parents[2]
PAGE = ('<title>before</title><button onclick="document.title=\'clicked\'">Go</button>')


def _env(topology: Topology, run: Path) -> dict[str, str]:
    return topology.client_env() | {"SSH_PROXY_TO": "h1", "XDG_RUNTIME_DIR": str(run)}


def _gw(env: dict[str, str], *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gateway", *argv], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=90, stdin=subprocess.DEVNULL)


def _ok(env: dict[str, str], *argv: str) -> subprocess.CompletedProcess[str]:
    done = _gw(env, *argv)
    assert done.returncode == 0, done.stderr
    return done


def _gone(pid: object, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    assert isinstance(pid, int)
    while pid_alive(pid):
        assert time.monotonic() < deadline, f"pid {pid} still running"
        time.sleep(0.05)


def _pid_record(run: Path) -> dict[str, object]:
    [pid_file] = (run / "chrome-ssh-gateway").glob("*.pid")
    record: dict[str, object] = json.loads(pid_file.read_text())
    return record


def test_a_call_sequence_shares_tabs_refs_and_one_ssh_login(topology: Topology,
                                                            run_dir: Path) -> None:
    env, host = _env(topology, run_dir), topology.host("h1")
    logins = host.ssh_logins()

    view = json.loads(_ok(env, "call", "--json", "browse",
                          json.dumps({"url": data_url("b", PAGE)})).stdout)
    [ref] = re.findall(r'button#(\d+) "Go"', view["view"])
    acted = _ok(env, "call", "browse_act", json.dumps(
        {"tab": view["tab"], "actions": [{"do": "click", "ref": int(ref)}]}))
    # The ref from the first process worked; a view prints as the page's text.
    assert acted.stdout.startswith(f"tab {view['tab']} on ") and "title: clicked" in acted.stdout, \
        acted.stdout
    shot = _ok(env, "call", "screenshot", json.dumps({"tab": view["tab"]}))
    [path] = re.findall(r"^image saved: (\S+)$", shot.stdout, re.M)
    assert Path(path).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert Path(path).stat().st_mode & 0o777 == 0o600
    as_json = json.loads(_ok(env, "call", "--json", "screenshot",
                             json.dumps({"tab": view["tab"]})).stdout)
    assert as_json["tab"] == view["tab"] and Path(as_json["image_files"][0]).is_file()

    assert host.ssh_logins() - logins == 1  # one daemon, one SSH login, four calls
    files = sorted(p.name.rsplit(".", 1)[1] for p in (run_dir / "chrome-ssh-gateway").iterdir())
    assert files == ["log", "pid", "sock"]
    assert (run_dir / "chrome-ssh-gateway").stat().st_mode & 0o777 == 0o700
    for item in (run_dir / "chrome-ssh-gateway").iterdir():
        assert item.stat().st_mode & 0o777 == 0o600, item


def test_a_killed_daemon_is_replaced_and_says_tab_ids_are_gone(topology: Topology,
                                                               run_dir: Path) -> None:
    env = _env(topology, run_dir)
    tab = json.loads(_ok(env, "call", "navigate",
                         json.dumps({"url": data_url("k", "<p>k</p>")})).stdout)["tab"]
    old = _pid_record(run_dir)["pid"]
    assert isinstance(old, int)
    os.kill(old, signal.SIGKILL)
    _gone(old)

    # The new daemon numbers the browser's pages afresh, so `tab` may now name another
    # page: a call with a tab id is refused instead of run on the wrong one.
    done = _gw(env, "call", "close_tab", json.dumps({"tab": tab}))
    assert done.returncode == 1 and done.stdout == ""
    assert "previous gateway daemon is gone" in done.stderr
    assert "tab ids and view refs from before are no longer valid" in done.stderr
    assert "close_tab not run" in done.stderr
    assert _pid_record(run_dir)["pid"] != old
    assert "running: pid" in _ok(env, "daemon", "status").stdout
    # From then on the new daemon's ids work as usual.
    listing = json.loads(_ok(env, "call", "list_tabs").stdout)
    assert listing["tabs"]


def test_status_stop_start_and_idle_exit(topology: Topology, run_dir: Path) -> None:
    env = _env(topology, run_dir)
    assert _gw(env, "daemon", "status").returncode == 3  # not running
    started = _ok(env, "daemon", "start", "--idle-timeout", "2").stdout
    assert started.startswith("running: pid")
    assert _ok(env, "daemon", "start").stdout == started  # the same one, not a second
    pid = _pid_record(run_dir)["pid"]
    assert isinstance(pid, int)
    # No calls: it exits by itself after its idle timeout and cleans up after itself.
    _gone(pid, timeout=30)
    assert list((run_dir / "chrome-ssh-gateway").glob("*.pid")) == []
    assert list((run_dir / "chrome-ssh-gateway").glob("*.sock")) == []

    _ok(env, "daemon", "start")
    _ok(env, "daemon", "stop")
    assert _gw(env, "daemon", "status").returncode == 3


def test_a_daemon_of_another_version_is_reported_and_replaced_on_start(
        topology: Topology, run_dir: Path) -> None:
    env = _env(topology, run_dir)
    _ok(env, "daemon", "start")
    [pid_file] = (run_dir / "chrome-ssh-gateway").glob("*.pid")
    record = json.loads(pid_file.read_text())
    pid_file.write_text(json.dumps(record | {"version": "0.0.1"}))  # as an older one wrote it

    listed = _ok(env, "call", "list_targets")
    assert "the gateway daemon runs version 0.0.1" in listed.stderr
    _ok(env, "daemon", "start")
    assert not pid_alive(record["pid"])
    assert _pid_record(run_dir)["pid"] != record["pid"]


def test_a_tampered_runtime_directory_is_refused(topology: Topology, tmp_path: Path) -> None:
    run = tmp_path / "run"
    (run / "chrome-ssh-gateway").mkdir(parents=True, mode=0o700)
    (run / "chrome-ssh-gateway").chmod(0o777)
    env = _env(topology, run)

    done = _gw(env, "call", "list_tabs")
    assert done.returncode == 1
    assert "possible tampering" in done.stderr and "0777" in done.stderr

    (run / "chrome-ssh-gateway").chmod(0o700)
    os.chown(run / "chrome-ssh-gateway", 65534, 65534)
    done = _gw(env, "call", "list_tabs")
    assert done.returncode == 1 and "belongs to uid 65534" in done.stderr


def test_call_no_daemon_starts_none(topology: Topology, run_dir: Path) -> None:
    env = _env(topology, run_dir)
    started = time.monotonic()
    payload = json.loads(_ok(env, "call", "--no-daemon", "list_targets").stdout)
    assert payload["targets"][0]["state"] == "up", time.monotonic() - started
    assert not (run_dir / "chrome-ssh-gateway").exists()


def test_the_daemon_follows_its_edited_targets_file(topology: Topology, run_dir: Path,
                                                    tmp_path: Path) -> None:
    """A shell user edits the targets file and runs the next call: the daemon (which
    they never see, so never send SIGHUP) answered 'unknown target' for the new one."""
    env = topology.client_env() | {"XDG_RUNTIME_DIR": str(run_dir)}
    targets = tmp_path / "targets.toml"
    targets.write_text('[targets.one]\nssh = "h1"\n')
    tab = json.loads(_ok(env, "--config", str(targets), "call", "navigate",
                         json.dumps({"url": data_url("f", "<p>f</p>")})).stdout)["tab"]

    targets.write_text('[targets.one]\nssh = "h1"\n\n[targets.two]\nssh = "h2"\n')
    listed = json.loads(_ok(env, "--config", str(targets), "call", "list_targets").stdout)
    assert {t["name"]: t["state"] for t in listed["targets"]} == {"one": "up", "two": "up"}
    # The target left alone keeps its tabs (the same daemon, reloaded as on SIGHUP).
    tabs = json.loads(_ok(env, "--config", str(targets), "call", "list_tabs",
                          json.dumps({"target": "one"})).stdout)["tabs"]
    assert tab in [t["tab"] for t in tabs]

    targets.write_text('[targets.one]\nssh = "h1"\n\n[targets.two]\nbogus = 1\n')
    kept = json.loads(_ok(env, "--config", str(targets), "call", "list_targets").stdout)
    assert sorted(t["name"] for t in kept["targets"]) == ["one", "two"]  # a bad file: kept
