"""``launch = true`` on a remote host with no browser running (issue 11).

h1's own Chromium is stopped for each test (``fault_topology`` restores it), and the
target launches into a fresh profile under the test user's home on h1. Every process
a test started, or the gateway started for it, is killed by pid afterwards.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.e2e.helpers import (
    call_ok,
    data_url,
    eventually,
    gateway_pid,
    marked_env,
    open_gateway,
    present,
    text_of,
    wait_for_targets,
    write_targets,
)
from tests.topology import CHROMIUM, RemoteHost, Topology

pytestmark = pytest.mark.anyio
REPO = Path(__file__).resolve().parents[2]


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except (OSError, IndexError):
        return "gone"


def _on_profile(profile: Path) -> list[tuple[int, list[str]]]:
    """Live processes running with ``--user-data-dir=<profile>`` (browser and helpers)."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            argv = Path(f"/proc/{name}/cmdline").read_bytes().decode(errors="replace").split("\0")
        except OSError:
            continue
        if f"--user-data-dir={profile}" in argv and _state(int(name)) not in ("Z", "X", "gone"):
            found.append((int(name), argv))
    return found


def _browser_pid(profile: Path) -> int | None:
    """The browser process on ``profile`` (not a renderer or other helper)."""
    main = [pid for pid, argv in _on_profile(profile)
            if not any(a.startswith("--type=") for a in argv)]
    assert len(main) <= 1, f"more than one browser on {profile}: {main}"
    return main[0] if main else None


def _kill_on_profile(profile: Path) -> None:
    for _ in range(50):
        pids = [pid for pid, _ in _on_profile(profile)]
        if not pids:
            return
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.1)
    raise AssertionError(f"processes on {profile} survived SIGKILL")


@pytest.fixture
def no_browser(fault_topology: Topology) -> Iterator[tuple[Topology, RemoteHost, Path]]:
    """h1 with its Chromium stopped and a fresh launch profile (path on h1) to use."""
    h1 = fault_topology.host("h1")
    h1.stop_chrome()
    profile = h1.home / f"launch-{uuid.uuid4().hex[:8]}"
    try:
        yield fault_topology, h1, profile
    finally:
        _kill_on_profile(profile)
        shutil.rmtree(profile, ignore_errors=True)


def _config(tmp_path: Path, profile: Path, **more: object) -> Path:
    table: dict[str, object] = {"ssh": "h1", "launch": True,
                                "launch_profile": f"~/{profile.name}", **more}
    return write_targets(tmp_path / "targets.toml", {"vm": table})


async def _launched_target(gw: Any) -> dict[str, Any]:
    targets = await wait_for_targets(gw, {"vm": "up"}, timeout=60)
    return targets["vm"]


async def test_first_call_launches_and_a_gateway_restart_reattaches(
        no_browser: tuple[Topology, RemoteHost, Path], tmp_path: Path) -> None:
    topology, _, profile = no_browser
    config = _config(tmp_path, profile)
    env = topology.client_env()
    async with open_gateway(env, ["--config", str(config)]) as gw:
        listing = await call_ok(gw, "list_tabs", {"target": "vm"}, timeout=60)
        assert [t["url"] for t in listing["tabs"]] == ["about:blank"]
        vm = await _launched_target(gw)
        assert (vm["launched"], vm["restarts"], vm.get("error")) == (True, 0, None)
        assert vm["cdp_endpoint"].endswith(f"(DevToolsActivePort in {profile})")
        first = _browser_pid(profile)
        assert first is not None
        assert os.stat(profile).st_mode & 0o077 == 0  # a private profile
    # keep_running (the default): the browser outlives the gateway…
    assert _browser_pid(profile) == first
    async with open_gateway(env, ["--config", str(config)]) as gw:
        vm = await _launched_target(gw)
        # …and the next one attaches to it instead of starting a second.
        assert (vm["launched"], vm["restarts"]) == (True, 0)
        assert _browser_pid(profile) == first
        nav = await call_ok(gw, "navigate", {"target": "vm", "url": data_url("again")})
        assert nav["title"] == "again"


async def test_keep_running_false_stops_it_and_the_profile_keeps_a_login(
        no_browser: tuple[Topology, RemoteHost, Path], tmp_path: Path) -> None:
    topology, _, profile = no_browser
    config = _config(tmp_path, profile, keep_running=False, redact=False)
    env = topology.client_env()
    cookie = {"name": "session", "value": uuid.uuid4().hex, "domain": "login.test",
              "path": "/", "expires": time.time() + 86400}
    async with open_gateway(env, ["--config", str(config)]) as gw:
        await _launched_target(gw)
        first = _browser_pid(profile)
        assert first is not None
        await call_ok(gw, "cdp_command", {"target": "vm", "method": "Storage.setCookies",
                                          "params": {"cookies": [cookie]}})
    await eventually(lambda: _async(_browser_pid(profile) is None), timeout=15,
                     what="the launched browser to stop with the gateway")
    async with open_gateway(env, ["--config", str(config)]) as gw:
        vm = await _launched_target(gw)
        assert vm["launched"] is True
        second = _browser_pid(profile)
        assert second is not None and second != first  # a new browser, the same profile
        got = await call_ok(gw, "cdp_command", {"target": "vm", "method": "Storage.getCookies"})
        values = {c["name"]: c["value"] for c in got["result"]["cookies"]
                  if c["domain"] == "login.test"}
        assert values == {"session": cookie["value"]}
    await eventually(lambda: _async(_browser_pid(profile) is None), timeout=15,
                     what="the second browser to stop with the gateway")


async def test_keep_running_false_ties_the_browser_to_the_gateway_and_its_ssh_connection(
        no_browser: tuple[Topology, RemoteHost, Path], tmp_path: Path) -> None:
    """A gateway killed outright cannot stop anything; its SSH connection going does."""
    topology, _, profile = no_browser
    config = _config(tmp_path, profile, keep_running=False)
    env, marker = marked_env(topology.client_env())
    killed = False
    try:
        async with open_gateway(env, ["--config", str(config)]) as gw:
            await call_ok(gw, "list_tabs", {"target": "vm"}, timeout=60)
            assert _browser_pid(profile) is not None
            os.kill(gateway_pid(marker), signal.SIGKILL)
            killed = True
    except Exception:
        if not killed:
            raise
    # (the client's end of a gateway killed under it fails as it may)
    assert killed
    await eventually(lambda: _async(not _on_profile(profile)), timeout=5,
                     what="the browser of a killed gateway to stop")
    assert profile.is_dir()  # a persistent profile stays


async def test_a_held_browser_whose_holder_died_is_stopped_and_launched_afresh(
        no_browser: tuple[Topology, RemoteHost, Path], tmp_path: Path) -> None:
    """sshd's session processes killed with the script holding the browser (the browser
    has a session of its own and survives): the next connect must not serve that
    browser unheld, but stop it and start one it holds."""
    topology, h1, profile = no_browser
    config = _config(tmp_path, profile, keep_running=False)
    async with open_gateway(topology.client_env(), ["--config", str(config)]) as gw:
        await _launched_target(gw)
        first = _browser_pid(profile)
        assert first is not None
        # The gateway's SSH sessions die, and the script holding the browser with them;
        # the browser (a session of its own) lives on: it would be served again as it
        # was, unheld, had the gateway not stopped it.
        for pid in h1.ssh_session_pids():
            if os.getpgid(pid) != first:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        args = {"target": "vm", "url": data_url("afresh")}
        with anyio.fail_after(60):
            first_try = await gw.call_tool("navigate", args)
        # The call may reach the connection before the gateway hears it died: it then
        # says so and to retry (never retried for the agent: navigate opens a tab).
        assert not first_try.is_error or "retry the call" in text_of(first_try), first_try
        nav = (first_try.structured_content if not first_try.is_error
               else await call_ok(gw, "navigate", args, timeout=60))
        assert nav is not None
        assert nav["title"] == "afresh"
        second = _browser_pid(profile)
        assert second is not None and second != first
        assert _state(first) in ("Z", "X", "gone")
    await eventually(lambda: _async(not _on_profile(profile)), timeout=15,
                     what="the fresh browser to stop with the gateway")


async def _async(value: bool) -> bool:
    return value


async def test_ssh_drop_keeps_it_and_a_kill_by_hand_restarts_it(
        no_browser: tuple[Topology, RemoteHost, Path], tmp_path: Path) -> None:
    topology, h1, profile = no_browser
    config = _config(tmp_path, profile)
    async with open_gateway(topology.client_env(), ["--config", str(config)]) as gw:
        await _launched_target(gw)
        first = _browser_pid(profile)
        assert first is not None
        h1.kill_ssh_sessions()  # every SSH session the gateway had on h1 dies
        nav = await call_ok(gw, "navigate", {"target": "vm", "url": data_url("after-drop")},
                            timeout=60)
        assert nav["title"] == "after-drop"
        vm = await _launched_target(gw)
        assert (vm["launched"], vm["restarts"]) == (True, 0)
        assert _browser_pid(profile) == first  # reattached, not started again

        os.kill(first, signal.SIGKILL)

        async def restarted() -> dict[str, Any] | None:
            vm = (await wait_for_targets(gw, timeout=60))["vm"]
            return vm if vm["state"] == "up" and vm["restarts"] == 1 else None

        vm = await eventually(restarted, until=present,
                              timeout=60, what="the killed browser to be restarted")
        assert vm["launched"] is True
        second = _browser_pid(profile)
        assert second is not None and second != first


async def test_a_profile_held_by_a_chrome_without_a_port_is_refused_with_its_fix(
        no_browser: tuple[Topology, RemoteHost, Path], tmp_path: Path) -> None:
    topology, h1, profile = no_browser
    profile.mkdir(mode=0o700)
    os.chown(profile, h1.uid, h1.uid)
    holder = subprocess.Popen(h1.netns_exec(
        "setpriv", f"--reuid={h1.uid}", f"--regid={h1.uid}", "--clear-groups", "env", "-i",
        f"HOME={h1.home}", "PATH=/usr/bin:/bin", CHROMIUM, "--headless", "--disable-gpu",
        f"--user-data-dir={profile}", "about:blank"),
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True)
    try:
        deadline = time.monotonic() + 20
        while not os.path.lexists(profile / "SingletonLock") and time.monotonic() < deadline:
            time.sleep(0.05)
        assert os.path.lexists(profile / "SingletonLock"), "the holding Chromium took no lock"
        config = _config(tmp_path, profile)
        async with open_gateway(topology.client_env(), ["--config", str(config)]) as gw:
            vm = (await wait_for_targets(gw, {"vm": "down"}, timeout=60))["vm"]
            assert f"is in use by a Chrome (pid {holder.pid})" in vm["error"], vm
            assert "close it, or set launch_profile to another directory" in vm["error"]
            assert vm["launched"] is False
    finally:
        holder.kill()
        holder.wait(timeout=10)


async def test_a_display_that_cannot_be_opened_says_so_with_its_output(
        no_browser: tuple[Topology, RemoteHost, Path], tmp_path: Path) -> None:
    topology, _, profile = no_browser
    config = _config(tmp_path, profile, headless=False, display=":97")
    async with open_gateway(topology.client_env(), ["--config", str(config)]) as gw:
        vm = (await wait_for_targets(gw, {"vm": "down"}, timeout=60))["vm"]
        assert "but it exited at once; its last output: " in vm["error"], vm
        assert "the display :97 cannot be opened there" in vm["error"], vm


async def test_no_binary_on_the_host_lists_the_paths_tried(
        no_browser: tuple[Topology, RemoteHost, Path], tmp_path: Path) -> None:
    """sshd's mount namespace on h1 gets Chromium hidden (the test's own Chromium, run
    through `ip netns exec`, has a namespace of its own and is unaffected)."""
    topology, h1, profile = no_browser
    sshd = h1.sshd_pid()
    assert sshd is not None
    enter = ["nsenter", "-t", str(sshd), "-m", "--"]
    hidden = ["/usr/lib/chromium", "/usr/bin/chromium"]
    subprocess.run([*enter, "mount", "-t", "tmpfs", "none", hidden[0]], check=True, timeout=10)
    try:
        subprocess.run([*enter, "mount", "--bind", "/dev/null", hidden[1]], check=True,
                       timeout=10)
        try:
            config = _config(tmp_path, profile)
            async with open_gateway(topology.client_env(), ["--config", str(config)]) as gw:
                vm = (await wait_for_targets(gw, {"vm": "down"}, timeout=60))["vm"]
        finally:
            subprocess.run([*enter, "umount", hidden[1]], check=True, timeout=10)
    finally:
        subprocess.run([*enter, "umount", hidden[0]], check=True, timeout=10)
    assert ("no Chrome/Chromium binary found on h1 (tried google-chrome-stable, "
            "google-chrome, chromium, chromium-browser, microsoft-edge, /snap/bin/chromium, "
            "/var/lib/flatpak/exports/bin/org.chromium.Chromium, /usr/lib/chromium/chromium, "
            "/Applications/") in vm["error"], vm
    assert "sudo apt install chromium" in vm["error"]
    assert not profile.exists()  # nothing was started, no profile made


def test_doctor_says_what_it_would_launch_without_starting_it(
        no_browser: tuple[Topology, RemoteHost, Path], tmp_path: Path) -> None:
    topology, _, profile = no_browser
    config = _config(tmp_path, profile)
    done = subprocess.run([sys.executable, "-m", "gateway", "doctor", "--config", str(config),
                           "--json"], env=topology.client_env(), capture_output=True,
                          text=True, timeout=90, stdin=subprocess.DEVNULL, cwd=REPO)
    assert done.returncode == 0, done.stdout + done.stderr
    [target] = json.loads(done.stdout)["targets"]
    steps = {s["name"]: s for s in target["steps"]}
    assert steps["endpoint"]["status"] == "ok"
    assert steps["endpoint"]["detail"].startswith("no running Chrome found")
    assert (steps["launch"]["status"], steps["launch"]["detail"]) == (
        "ok", f"`serve` would start /usr/bin/chromium (headless) on profile ~/{profile.name} "
              "(not locked)")
    assert not profile.exists() and _browser_pid(profile) is None  # nothing started
