"""A person's own Chrome: turned debuggable by its remote-debugging setting, asked once.

The browser is real and headed: Chromium on an Xvfb display, its ``Local State`` saying
the person turned remote debugging on (chrome://inspect), started with no
``--remote-debugging-port`` — so it listens on 127.0.0.1:9222 of its machine, serves no
/json, and holds each websocket until the person answers "Allow remote debugging?".
The person is played with real X input (``headed.press``: Tab Return is Allow, Escape
is Cancel). It runs on topology host h1 as its login user (found there over SSH, and by a
gateway on h1 itself), or in a share host behind ``share``. How many dialogs the person
saw is counted on the browser's side: each one is a TCP connection Chrome accepted on
its port (``_connections``); a handshake it holds is one, an allowed websocket stays one.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from tests.e2e.headed import press, xvfb
from tests.e2e.helpers import (
    call_ok,
    data_url,
    eventually,
    open_gateway,
    open_stdio,
    targets_by_name,
    write_targets,
)
from tests.e2e.share_host import GATEWAY, ShareHost, as_login_user
from tests.topology import CHROME_FLAGS, CHROMIUM, Topology, _ip

pytestmark = pytest.mark.anyio

SETTING = '{"devtools":{"remote_debugging":{"user-enabled":true}}}'
PORT = 9222  # where Chromium 156 listens with the setting on
HEADED = tuple(flag for flag in CHROME_FLAGS if flag != "--headless")
QUICK = {"initial_delay_s": 0.1, "max_delay_s": 0.2, "call_wait_s": 2.0}
WAITING = "waiting for the person to allow"
MAIL = "person-mail"  # the title of the person's own tab, open before the agent came


class OwnChrome:
    """One headed Chromium with the setting on, in network namespace ``netns``."""

    def __init__(self, netns: str, profile: Path, argv: list[str]) -> None:
        self.netns = netns
        self.profile = profile
        self._argv = argv
        self.process = self._start()

    def _start(self) -> subprocess.Popen[bytes]:
        (self.profile / "DevToolsActivePort").unlink(missing_ok=True)
        self.process = subprocess.Popen(self._argv, stdin=subprocess.DEVNULL,
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                        close_fds=True, start_new_session=True, cwd="/")
        deadline = time.monotonic() + 30
        while not self._listening():
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"Chromium with the setting on did not listen on {PORT} "
                                     f"(exit {self.process.poll()})")
            time.sleep(0.05)
        return self.process

    def _ss(self, *query: str) -> list[str]:
        out = subprocess.run([_ip(), "netns", "exec", self.netns, "ss", "-Htn", *query],
                             capture_output=True, text=True, timeout=10, check=True).stdout
        return out.splitlines()

    def _listening(self) -> bool:
        return (self.profile / "DevToolsActivePort").exists() and bool(
            self._ss("state", "listening", f"( sport = :{PORT} )"))

    def connections(self) -> int:
        """The connections Chrome holds on its port: each one a dialog the person saw
        (pending or allowed)."""
        return len(self._ss("state", "established", f"( sport = :{PORT} )"))

    def _end(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)

    def restart(self) -> None:
        """The person quits Chrome and starts it again (the setting stays on)."""
        self._end()
        self._start()

    def stop(self) -> None:
        self._end()
        shutil.rmtree(self.profile, ignore_errors=True)


def _profile(directory: Path, uid: int) -> Path:
    """A fresh user-data directory whose Local State has the setting on, owned by ``uid``."""
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    (directory / "Local State").write_text(SETTING)
    for path in (directory.parent, directory, directory / "Local State"):
        os.chown(path, uid, uid)
    return directory


@pytest.fixture(scope="module")
def display() -> Iterator[str]:
    with xvfb() as display:
        yield display


@pytest.fixture
def on_h1(topology: Topology, display: str) -> Iterator[OwnChrome]:
    """The person's Chrome on h1, in the login user's ~/.config/google-chrome (a usual
    profile; h1's own headless Chromium is in ~/.config/chromium), one tab of theirs open."""
    h1 = topology.host("h1")
    profile = _profile(h1.home / ".config" / "google-chrome", h1.uid)
    argv = h1.netns_exec(
        "setpriv", f"--reuid={h1.uid}", f"--regid={h1.uid}", "--clear-groups", "env", "-i",
        f"HOME={h1.home}", "PATH=/usr/bin:/bin", "LANG=C.UTF-8", f"DISPLAY={display}",
        f"CHROME_CONFIG_HOME={profile}", CHROMIUM, *HEADED, f"--user-data-dir={profile}",
        data_url(MAIL))
    chrome = OwnChrome(h1.netns, profile, argv)
    yield chrome
    chrome.stop()


async def _state(client: Client, name: str) -> dict[str, Any]:
    return (await targets_by_name(client)).get(name, {})


async def _waiting(client: Client, name: str, chrome: OwnChrome,
                   timeout: float = 30) -> dict[str, Any]:
    """The target, once it says it waits for the person — and Chrome holds the handshake."""
    target = await eventually(lambda: _state(client, name),
                              until=lambda t: t.get("state") == WAITING,
                              timeout=timeout, what=f"{name} waiting for the person")
    await eventually(lambda: _ok(chrome.connections() == 1), timeout=10,
                     what="Chrome holding the handshake")
    return target


async def _ok(value: bool) -> bool:
    return value


async def _answer(client: Client, name: str, keys: tuple[str, ...],
                  answered: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
    """The person answers the dialog (pressed again until the target shows it: the
    dialog is drawn a moment after the handshake arrives, and has no window to wait for)."""
    for _ in range(10):
        press(*keys)
        with contextlib.suppress(AssertionError):
            return await eventually(lambda: _state(client, name), until=answered,
                                    timeout=3, what=f"{name} answered")
    raise AssertionError(f"{name}: the dialog was not answered; last {await _state(client, name)}")


async def _allow(client: Client, name: str) -> dict[str, Any]:
    return await _answer(client, name, ("Tab", "Return"), lambda t: t.get("state") == "up")


async def _decline(client: Client, name: str) -> dict[str, Any]:
    return await _answer(client, name, ("Escape",), lambda t: t.get("state") == "down")


async def _agent_only(client: Client, name: str) -> None:
    """Only the agent's own tab is listed: the person's tab stays theirs."""
    opened = await call_ok(client, "navigate", {"target": name, "url": data_url("agent-tab")})
    tabs = (await call_ok(client, "list_tabs", {"target": name}))["tabs"]
    assert [t["tab"] for t in tabs] == [opened["tab"]], tabs
    assert not any(MAIL in str(t) for t in tabs), tabs


async def test_over_ssh_the_person_is_asked_once_and_their_tabs_stay_theirs(
        topology: Topology, on_h1: OwnChrome, tmp_path: Path) -> None:
    path = write_targets(tmp_path / "targets.toml", {"own": {"ssh": "h1", "reconnect": QUICK}})
    async with open_gateway(topology.client_env(), ["--config", str(path)]) as client:
        waiting = await _waiting(client, "own", on_h1)
        assert waiting["personal"] is True
        assert waiting["error"].startswith(f"{WAITING}: their Chrome on ")
        asked = await call_ok(client, "ping", {"target": "own"})
        assert not asked["connected"] and "call again once they have" in asked["error"]
        up = await _allow(client, "own")
        assert (up["personal"], up["tab_scope"]) == (True, "agent"), up
        assert "DevToolsActivePort in " in up["cdp_endpoint"]
        await _agent_only(client, "own")
        assert on_h1.connections() == 1  # one dialog, one websocket kept


async def test_a_declined_dialog_is_said_so_and_only_a_call_asks_again(
        topology: Topology, on_h1: OwnChrome, tmp_path: Path) -> None:
    path = write_targets(tmp_path / "targets.toml", {"own": {"ssh": "h1", "reconnect": QUICK}})
    async with open_gateway(topology.client_env(), ["--config", str(path)]) as client:
        await _waiting(client, "own", on_h1)
        down = await _decline(client, "own")
        assert down["error"].startswith("the person declined remote debugging (Cancel in "
                                        "\"Allow remote debugging?\""), down
        # Ten times the longest backoff (0.2 s): a gateway that retried by itself would
        # have put a new dialog in front of the person by now.
        deadline = time.monotonic() + 2
        while time.monotonic() < deadline:
            assert on_h1.connections() == 0
            assert (await _state(client, "own"))["state"] == "down"
        asked = await call_ok(client, "ping", {"target": "own"})
        assert WAITING in asked["error"], asked  # the call asked again: one new dialog
        await _waiting(client, "own", on_h1)
        await _allow(client, "own")
        assert on_h1.connections() == 1


async def test_a_restarted_chrome_asks_again_and_says_why(
        topology: Topology, on_h1: OwnChrome, tmp_path: Path) -> None:
    # The profile named: while the person's Chrome is closed, h1's other browser (in
    # ~/.config/chromium) must not be taken instead.
    path = write_targets(tmp_path / "targets.toml", {"own": {
        "ssh": "h1", "profile": "~/.config/google-chrome", "reconnect": QUICK}})
    async with open_gateway(topology.client_env(), ["--config", str(path)]) as client:
        await _waiting(client, "own", on_h1)
        await _allow(client, "own")
        on_h1.restart()
        waiting = await _waiting(client, "own", on_h1)
        assert "again (their Chrome restarted)" in waiting["error"], waiting
        await _allow(client, "own")


async def test_a_gateway_on_the_person_s_machine_finds_it_with_nothing_but_a_name(
        topology: Topology, on_h1: OwnChrome) -> None:
    h1 = topology.host("h1")
    config = h1.home / "own-targets.toml"
    write_targets(config, {"own": {"reconnect": QUICK}})
    os.chown(config, h1.uid, h1.uid)
    argv = as_login_user(h1, *GATEWAY, "serve", "--config", str(config))
    try:
        async with open_stdio(argv[0], argv[1:]) as client:
            waiting = await _waiting(client, "own", on_h1)
            assert waiting["transport"] == "local"
            up = await _allow(client, "own")
            assert (up["personal"], up["tab_scope"]) == (True, "agent")
            await _agent_only(client, "own")
    finally:
        config.unlink()


def test_doctor_finds_the_person_s_chrome_without_asking_them(
        topology: Topology, on_h1: OwnChrome, tmp_path: Path) -> None:
    path = write_targets(tmp_path / "targets.toml", {"own": {"ssh": "h1"}})
    done = subprocess.run([*GATEWAY, "doctor", "--json", "--config", str(path)],
                          env=topology.client_env(), capture_output=True, text=True,
                          timeout=60, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stdout + done.stderr
    [target] = json.loads(done.stdout)["targets"]
    steps = {s["name"]: s for s in target["steps"]}
    assert steps["endpoint"]["status"] == "ok"
    assert "the person's own Chrome, its remote debugging turned on" in \
        steps["endpoint"]["detail"]
    assert steps["websocket"]["status"] == "skipped"
    assert steps["websocket"]["detail"].startswith("not opened: Chrome would ask the person")
    assert on_h1.connections() == 0  # no question was put to the person


@pytest.fixture
def shared(topology: Topology, display: str) -> Iterator[tuple[ShareHost, OwnChrome]]:
    """A laptop nobody can dial (a share host linked to h2) with the person's Chrome in
    its default profile."""
    with ShareHost(topology, topology.host("h2"), index=3) as share:
        profile = _profile(share.default_profile, 0)
        chrome = OwnChrome(share.netns, profile, share.argv(
            CHROMIUM, *HEADED, f"--user-data-dir={profile}", data_url(MAIL),
            env={"DISPLAY": display}))
        try:
            yield share, chrome
        finally:
            chrome.stop()


def test_doctor_says_in_the_person_s_terms_that_the_setting_is_off(
        topology: Topology, display: str) -> None:
    """On a laptop whose Chrome runs with the setting off (doctor run there, nothing
    configured but a name): what to turn on, and where."""
    with ShareHost(topology, topology.host("h2"), index=3) as share:
        profile = share.default_profile
        profile.mkdir(parents=True)
        process = share.spawn(CHROMIUM, *HEADED, f"--user-data-dir={profile}",
                              env={"DISPLAY": display})
        try:
            # Running: its Local State is written a moment after it starts.
            deadline = time.monotonic() + 30
            while not (profile / "Local State").exists():
                assert time.monotonic() < deadline and process.poll() is None
                time.sleep(0.05)
            config = write_targets(share.home / "targets.toml", {"own": {}})
            done = share.run(*GATEWAY, "doctor", "--json", "--config", str(config),
                             timeout=60)
            assert done.returncode == 1, done.stdout + done.stderr
            [target] = json.loads(done.stdout)["targets"]
            endpoint = next(s for s in target["steps"] if s["name"] == "endpoint")
            assert endpoint["detail"] == (f"Chrome runs in {profile} on this machine with "
                                          "remote debugging turned off"), endpoint
            assert endpoint["fix"].startswith(
                "the person opens chrome://inspect/#remote-debugging in their Chrome and "
                "turns on \"Allow remote debugging for this browser instance\"")
        finally:
            process.terminate()
            process.wait(timeout=15)


@pytest.mark.parametrize("named", [False, True], ids=["found", "cdp-ws-path"])
async def test_shared_from_a_laptop_the_person_is_asked_once_by_the_gateway(
        topology: Topology, shared: tuple[ShareHost, OwnChrome], tmp_path: Path,
        named: bool) -> None:
    """Found by its setting, or named as ``--cdp ws://127.0.0.1:9222/devtools/browser/…``
    (its /json answers 404: the receiving side once insisted on /json/version)."""
    share, chrome = shared
    path = (chrome.profile / "DevToolsActivePort").read_text().split("\n")[1]
    cdp = ("--cdp", f"ws://127.0.0.1:{PORT}{path}") if named else ()
    out = tmp_path / "sharer.out"
    with out.open("wb") as stdout:
        sharer = share.spawn(*GATEWAY, "share", "h2", "--name", "lap", *cdp, stdout=stdout,
                             stderr=subprocess.STDOUT)
    try:
        await eventually(lambda: _ok("now sharing" in out.read_text()
                                     or "chrome-ssh-gateway share: sharing" in out.read_text()),
                         timeout=30, what="the sharer's status line")
        assert "the person's own Chrome" in out.read_text()
        assert chrome.connections() == 0  # the sharer asked nobody
        targets = write_targets(tmp_path / "targets.toml", {"h2": {
            "ssh": "h2", "shared": True, "scan_interval_s": 0.5, "reconnect": QUICK}})
        async with open_gateway(topology.client_env(), ["--config", str(targets)]) as client:
            waiting = await _waiting(client, "lap", chrome)
            assert waiting["error"].startswith(f"{WAITING}: their Chrome on ")
            up = await _allow(client, "lap")
            assert (up["personal"], up["tab_scope"]) == (True, "agent"), up
            assert up["sharer"], up
            await _agent_only(client, "lap")
            assert chrome.connections() == 1
    finally:
        sharer.send_signal(signal.SIGINT)
        sharer.wait(timeout=20)
