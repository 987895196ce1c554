"""A ``webdriver`` target: Debian's chromedriver on h1's loopback, reached through SSH.

The session is created by the first call (not at start-up), every core tool
works on the browser it reports, the session is deleted when the gateway exits
(chromedriver's ``GET /sessions`` and the process table both show it), and a
session ended on the host side makes the target ``down`` with the reason and is
replaced by the next call — whose tab ids are new, while the old ones fail.
``doctor`` checks such a target step by step and deletes its session too.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from gateway.cdp.connection import CdpConnection
from gateway.config import TargetConfig
from gateway.discovery.strategy import Attached, Search
from gateway.discovery.webdriver import WebDriverSession
from gateway.errors import DiscoveryError
from gateway.hosts.ssh import SshHost
from tests.e2e.helpers import (
    call_err,
    call_ok,
    data_url,
    eventually,
    open_gateway,
    present,
    targets_by_name,
    write_targets,
)
from tests.e2e.pages import act, ref_of
from tests.e2e.webdriver_host import CAPABILITIES, PORT, Chromedriver
from tests.topology import Topology

pytestmark = pytest.mark.anyio

KEEPALIVE_COMMAND = "GetTimeouts"  # chromedriver's log name of the keep-alive request


@pytest.fixture
def driver(topology: Topology) -> Iterator[Chromedriver]:
    chromedriver = Chromedriver(topology.host("h1"))
    try:
        yield chromedriver
    finally:
        chromedriver.close()


def _targets(tmp_path: Path, **extra: object) -> Path:
    return write_targets(tmp_path / "targets.toml", {"wd": {
        "ssh": "h1", "webdriver": f"http://127.0.0.1:{PORT}", "capabilities": CAPABILITIES,
        **extra}})


async def _gone(driver: Chromedriver) -> bool:
    return not driver.sessions() and not driver.browser_pids()


async def test_session_on_first_use_core_tools_and_deleted_on_exit(
        topology: Topology, driver: Chromedriver, tmp_path: Path) -> None:
    async with open_gateway(topology.client_env(), ["--config", str(_targets(tmp_path))]) as gw:
        before = (await targets_by_name(gw))["wd"]
        assert before["state"] == "down" and "first call" in before["error"], before
        assert driver.sessions() == [], "a session was created before any call"

        page = data_url("wd-form", '<input aria-label="Name"><button>Go</button>')
        opened = await call_ok(gw, "browse", {"target": "wd", "url": page})
        tab = opened["tab"]
        [session] = driver.sessions()
        assert len(driver.browser_pids()) == 1
        target = (await targets_by_name(gw))["wd"]
        assert target["state"] == "up" and session in target["cdp_endpoint"], target

        view = (await call_ok(gw, "browse_view", {"tab": tab}))["view"]
        assert "title: wd-form" in view, view
        await act(gw, tab, {"do": "type", "ref": ref_of(view, "Name", "textbox"),
                            "text": "over webdriver"})
        typed = await call_ok(gw, "evaluate", {
            "tab": tab, "expression": "document.querySelector('input').value"})
        assert typed["value"] == "over webdriver"
        listed = await call_ok(gw, "list_tabs", {"target": "wd"})
        assert tab in [t["tab"] for t in listed["tabs"]]
        await call_ok(gw, "close_tab", {"tab": tab})
        assert driver.sessions() == [session], "one session serves every call"

    await eventually(lambda: _gone(driver), timeout=20, what="the session deleted at exit")


async def test_session_ended_host_side_is_replaced_on_next_call(
        topology: Topology, driver: Chromedriver, tmp_path: Path) -> None:
    async with open_gateway(topology.client_env(), ["--config", str(_targets(tmp_path))]) as gw:
        tab = (await call_ok(gw, "new_tab", {"target": "wd", "url": data_url("wd-old")}))["tab"]
        [old] = driver.sessions()
        await anyio.to_thread.run_sync(driver.delete, old)  # as a Grid's timeout would

        async def down() -> dict[str, object] | None:
            target = (await targets_by_name(gw))["wd"]
            return target if target["state"] == "down" else None

        target = await eventually(down, until=present,
                                  timeout=20, what="wd down after its session ended")
        assert old in str(target.get("error")) and "invalid session id" in str(target.get("error"))
        assert "next call creates a new session" in str(target.get("error"))
        assert driver.sessions() == [], "no session may be created without a call"

        error = await call_err(gw, "evaluate", {"tab": tab, "expression": "1"})
        assert f"tab {tab}" in error and "restarted" in error, error
        [new] = driver.sessions()  # that call created the new session
        assert new != old
        fresh = await call_ok(gw, "navigate", {"target": "wd", "url": data_url("wd-new")})
        assert fresh["tab"] > tab
        value = await call_ok(gw, "evaluate", {"tab": fresh["tab"],
                                               "expression": "document.title"})
        assert value["value"] == "wd-new"
    await eventually(lambda: _gone(driver), timeout=20, what="the new session deleted at exit")


def _doctor(topology: Topology, config: Path) -> dict[str, dict[str, Any]]:
    result = subprocess.run([sys.executable, "-m", "gateway", "doctor", "--json", "--config",
                             str(config)], env=topology.client_env(), capture_output=True,
                            text=True, timeout=90, stdin=subprocess.DEVNULL)
    [target] = json.loads(result.stdout)["targets"]
    return {s["name"]: s for s in target["steps"]}


async def test_doctor_checks_status_session_and_browser_and_leaves_nothing(
        topology: Topology, driver: Chromedriver, tmp_path: Path) -> None:
    steps = await anyio.to_thread.run_sync(_doctor, topology, _targets(tmp_path))
    for name in ("auth", "webdriver", "session", "endpoint", "websocket", "browser", "tabs"):
        assert steps[name]["status"] == "ok", steps[name]
    assert steps["webdriver"]["detail"].endswith("ChromeDriver ready for new sessions.")
    assert steps["endpoint"]["detail"].startswith("WebDriver session ")
    assert await _gone(driver), "doctor left its session (or its browser) behind"

    nobody = write_targets(tmp_path / "nobody.toml", {"wd": {
        "ssh": "h1", "webdriver": f"http://127.0.0.1:{PORT + 1}"}})
    steps = await anyio.to_thread.run_sync(_doctor, topology, nobody)
    assert steps["webdriver"]["status"] == "failed", steps["webdriver"]
    assert f"chromedriver --port={PORT + 1}" in steps["webdriver"]["fix"]
    assert steps["session"]["status"] == "skipped"


async def test_sessions_two_are_two_browsers_taken_in_turn(
        topology: Topology, driver: Chromedriver, tmp_path: Path) -> None:
    async with open_gateway(topology.client_env(),
                            ["--config", str(_targets(tmp_path, sessions=2))]) as gw:
        listed = await targets_by_name(gw)
        assert {"wd-1", "wd-2"} <= set(listed) and "wd" not in listed, listed
        opened = [await call_ok(gw, "navigate", {"target": "wd", "url": data_url(f"wd-{i}")})
                  for i in range(4)]  # loaded (new_tab would not wait) for the titles below
        assert sorted(t["target"] for t in opened) == ["wd-1", "wd-1", "wd-2", "wd-2"]
        assert len(driver.sessions()) == 2 and len(driver.browser_pids()) == 2
        for tab in opened:  # each tab is in its own session's browser
            title = await call_ok(gw, "evaluate", {"tab": tab["tab"],
                                                   "expression": "document.title"})
            assert title["value"] == tab["url"].split("<title>")[1].split("<")[0]
    await eventually(lambda: _gone(driver), timeout=20, what="both sessions deleted at exit")


@pytest.fixture
async def held(topology: Topology, driver: Chromedriver, monkeypatch: pytest.MonkeyPatch,
               ) -> AsyncIterator[tuple[SshHost, WebDriverSession, Attached]]:
    """The strategy itself, over the gateway's own SshHost, with a 0.2 s keep-alive: its
    session created and its browser's websocket open; let go afterwards."""
    for key, value in topology.client_env().items():
        monkeypatch.setenv(key, value)  # SshHost reads ~/.ssh/config of this process
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)
    config = TargetConfig.model_validate({"name": "wd", "ssh": "h1", "capabilities":
                                          CAPABILITIES, "webdriver": f"http://127.0.0.1:{PORT}"})
    assert config.ssh is not None and config.webdriver is not None
    host = SshHost(config.ssh, config.host_key_policy, config.reconnect)
    strategy = WebDriverSession(config.webdriver, config.capabilities, keepalive_s=0.2)
    try:
        found = await strategy.find(Search(host, "wd", 20))
        assert found is not None and strategy.session is not None
        yield host, strategy, found
    finally:
        await strategy.let_go(host)
        await host.aclose()


async def test_keepalive_uses_the_session_and_sees_it_end(
        driver: Chromedriver, held: tuple[SshHost, WebDriverSession, Attached]) -> None:
    """It sends ``GET /session/<id>/timeouts`` while the browser is served (as a Grid's
    idle timeout needs), and when the session is ended host-side it says so and closes
    the socket."""
    host, strategy, found = held
    assert strategy.session is not None
    session = strategy.session.session_id
    cdp = CdpConnection(found[1], name="wd")
    async with anyio.create_task_group() as tg:
        tg.start_soon(cdp.run)
        tg.start_soon(strategy.hold, host, cdp)
        await eventually(lambda: _kept_alive(driver, session, 3), timeout=20,
                         what="three keep-alives on the session")
        await anyio.to_thread.run_sync(driver.delete, session)

        async def noticed() -> bool:
            return strategy.session is None

        await eventually(noticed, timeout=20, what="the keep-alive to see the session end")
        with anyio.fail_after(20):
            await cdp.closed.wait()
        tg.cancel_scope.cancel()
    with pytest.raises(DiscoveryError, match=f"{session} .* was ended by the driver"):
        await strategy.find(Search(host, "wd", 20))
    assert driver.sessions() == [], "a session was made without being asked for"


async def test_keepalive_leaves_an_open_dialog_alone(
        driver: Chromedriver, held: tuple[SshHost, WebDriverSession, Attached]) -> None:
    """A keep-alive must not touch the page: ``GET /url`` is a command that "handles user
    prompts", so chromedriver (unhandledPromptBehavior "dismiss and notify") dismissed
    any alert or confirm open in the browser every interval — under the agent's feet."""
    host, strategy, found = held
    assert strategy.session is not None
    session = strategy.session.session_id
    status, _ = await anyio.to_thread.run_sync(driver.request, "POST",
                                               f"/session/{session}/execute/sync",
                                               {"script": "setTimeout(() => alert("
                                                "'still here'), 0); return 1", "args": []})
    assert status == 200

    async def dialog() -> bool:
        status, answer = await anyio.to_thread.run_sync(
            driver.request, "GET", f"/session/{session}/alert/text")
        return status == 200 and answer["value"] == "still here"

    await eventually(dialog, timeout=20, what="the alert to be open")
    cdp = CdpConnection(found[1], name="wd")
    async with anyio.create_task_group() as tg:
        tg.start_soon(cdp.run)
        tg.start_soon(strategy.hold, host, cdp)
        asked = driver.commands(KEEPALIVE_COMMAND, session)
        await eventually(lambda: _kept_alive(driver, session, asked + 3), timeout=20,
                         what="three keep-alives while the alert is open")
        tg.cancel_scope.cancel()
    assert await dialog(), "a keep-alive dismissed the page's alert"


async def _kept_alive(driver: Chromedriver, session: str, times: int) -> bool:
    return driver.commands(KEEPALIVE_COMMAND, session) >= times
