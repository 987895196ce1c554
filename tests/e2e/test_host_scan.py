"""``browsers = "all"``: every debuggable Chrome on a host, found and followed (issue 10).

On h1, browsers are started the way test frameworks start them (``browsers_on_host``)
and the gateway — a real process over stdio, a real SSH connection — must list each
with what tells them apart, attach to the attachable ones, explain the others with
their fix, pick up a browser started mid-test with its first console message and
request, and drop one that exits: its tab ids then fail with what happened. The
machine's other browsers (h2's, other test slots') are seen too; the assertions are
about the pids started here, and the topology's own h1 Chromium.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gateway.config import TargetConfig, load_config
from gateway.discovery.scan import SCAN_TIMEOUT_S, Candidate
from gateway.discovery.strategy import Scanned, Strategy
from gateway.fleet.host_scan import HostScan
from gateway.hosts.ssh import SshHost
from tests.e2e.browsers_on_host import BrowserFarm
from tests.e2e.helpers import (
    ERROR_BOUND,
    call_err,
    call_ok,
    eventually,
    open_gateway,
    present,
    targets_by_name,
    wait_for_targets,
    write_targets,
)
from tests.topology import Topology

pytestmark = pytest.mark.anyio

INTERVAL_S = 0.5
KARMA_PORT = 9444
PAGE = ("data:text/html,<title>first</title><script>console.log('csgw-first-message');"
        "fetch('data:text/plain,csgw-first-request')</script>")


@pytest.fixture
def farm(topology: Topology) -> Iterator[BrowserFarm]:
    farm = BrowserFarm(topology.host("h1"))
    try:
        yield farm
    finally:
        farm.close()


def _by_pid(targets: dict[str, dict[str, Any]]) -> dict[int, dict[str, Any]]:
    return {t["pid"]: t for t in targets.values() if t.get("pid") is not None}


async def _members(client: Any, pids: set[int], *, settled: bool = True,
                   timeout: float = 20) -> dict[int, dict[str, Any]]:
    """The targets of these pids, once each is listed (and not connecting)."""

    async def listed() -> dict[int, dict[str, Any]] | None:
        found = _by_pid(await targets_by_name(client))
        if not pids <= set(found):
            return None
        if settled and any(found[p]["state"] == "connecting" for p in pids):
            return None
        return {p: found[p] for p in pids}

    return await eventually(listed, until=present,
                            timeout=timeout, what=f"browsers {sorted(pids)} listed")


async def test_every_browser_on_the_host(topology: Topology, farm: BrowserFarm,
                                         tmp_path: Path) -> None:
    h1 = topology.host("h1")
    puppeteer = farm.start("puppeteer_dev_chrome_profile-", "--remote-debugging-port=0")
    driver = farm.start("org.chromium.Chromium.scoped_dir.", "--remote-debugging-port=0")
    karma = farm.start("karma-", f"--remote-debugging-port={KARMA_PORT}")
    playwright = farm.start("playwright_chromiumdev_profile-", "--remote-debugging-pipe",
                            pipe=True)
    boxed = farm.start("container-profile-", "--remote-debugging-port=0", own_netns=True)
    for browser in (puppeteer, driver, boxed):
        assert browser.port  # each has written its DevToolsActivePort
    path = write_targets(tmp_path / "targets.toml", {
        "ci": {"ssh": "h1", "browsers": "all", "scan_interval_s": INTERVAL_S}})
    async with open_gateway(topology.client_env(), ["--config", str(path)]) as client:
        await wait_for_targets(client, {"ci": "up"})
        ours = {b.pid for b in (puppeteer, driver, karma, playwright, boxed)}
        members = await _members(client, ours | {h1.chrome_pid() or 0})
        group = (await targets_by_name(client))["ci"]
        assert set(group["browsers"]) >= {m["name"] for m in members.values()}

        for browser, who in ((puppeteer, "puppeteer"), (driver, "chromedriver"),
                             (karma, "karma")):
            member = members[browser.pid]
            assert member["state"] == "up", member
            assert member["name"].startswith("ci-") and member["program"] == "chromium"
            assert member["started_by"] == who and member["profile"] == str(browser.profile)
            assert member["started"] and member["host"] == "h1"
        assert members[puppeteer.pid]["port"] == puppeteer.port
        assert members[karma.pid]["port"] == KARMA_PORT
        own = members[h1.chrome_pid() or 0]
        assert own["state"] == "up" and "started_by" not in own  # no guess: not listed
        assert own["port"] == h1.chrome_port()

        pipe = members[playwright.pid]
        assert pipe["state"] == "down" and pipe["started_by"] == "playwright"
        assert "over a pipe (--remote-debugging-pipe)" in pipe["error"]
        assert "args: ['--remote-debugging-port=0']" in pipe["error"]
        assert "another network namespace" in members[boxed.pid]["error"]

        # The group name alone is ambiguous now; a member's name reaches its browser.
        error = await call_err(client, "new_tab", {"target": "ci"}, timeout=ERROR_BOUND)
        assert "target 'ci' has" in error and members[puppeteer.pid]["name"] in error
        name = members[puppeteer.pid]["name"]
        tab = (await call_ok(client, "new_tab", {"target": name}))["tab"]
        value = await call_ok(client, "evaluate", {"tab": tab, "expression": "6 * 7"})
        assert value["value"] == 42 and value["target"] == name
        error = await call_err(client, "new_tab", {"target": members[playwright.pid]["name"]},
                               timeout=ERROR_BOUND)
        assert f"(pid {playwright.pid})" in error and "over a pipe" in error

        # A browser started now is there within the interval, watched from its first page.
        started = time.monotonic()
        late = farm.start("puppeteer_dev_chrome_profile-", "--remote-debugging-port=0")

        async def late_up() -> dict[str, Any] | None:
            listed = (await _members(client, {late.pid}, settled=False))[late.pid]
            return listed if listed["state"] == "up" else None

        late_member = await eventually(late_up, until=present, timeout=INTERVAL_S + 10,
                                       what="the late browser up")
        assert time.monotonic() - started < INTERVAL_S + 10

        async def first_page() -> int | None:
            tabs = (await call_ok(client, "list_tabs", {"target": late_member["name"]}))["tabs"]
            return next((t["tab"] for t in tabs if t["url"] == PAGE), None)

        opened = farm.open_page(late, PAGE)
        page = await eventually(first_page, until=present, timeout=10,
                                what=f"the late browser's first page {opened}")

        async def recorded() -> tuple[list[str], list[str]] | None:
            console = await call_ok(client, "console_messages", {"tab": page})
            requests = await call_ok(client, "network_requests", {"tab": page})
            texts = [m["text"] for m in console["messages"]]
            urls = [r["url"] for r in requests["requests"]]
            return (texts, urls) if texts and urls else None

        texts, urls = await eventually(recorded, until=present,
                                       timeout=10, what="the first page's records")
        assert texts == ["csgw-first-message"]
        assert urls == ["data:text/plain,csgw-first-request"]  # (a data: document is no request)

        # One that exits goes: gone in the listing, its tab ids and name fail clearly.
        farm.kill(puppeteer)

        async def gone() -> dict[str, Any] | None:
            listed = _by_pid(await targets_by_name(client)).get(puppeteer.pid)
            return listed if listed is not None and listed["state"] == "gone" else None

        await eventually(gone, until=present,
                         timeout=INTERVAL_S + 10, what="the killed browser gone")
        error = await call_err(client, "evaluate", {"tab": tab, "expression": "1"},
                               timeout=ERROR_BOUND)
        assert f"belonged to target '{name}' (pid {puppeteer.pid}), which exited" in error
        error = await call_err(client, "new_tab", {"target": name}, timeout=ERROR_BOUND)
        assert f"target '{name}' (pid {puppeteer.pid}) exited" in error
        names = [t["name"] for t in (await call_ok(client, "list_targets"))["targets"]]
        assert len(names) == len(set(names)), "a name was reused"


class _Counted(SshHost):
    """h1 over real SSH, counting the commands a scan runs."""

    runs = 0

    async def run(self, command: str, timeout_s: float) -> str:
        self.runs += 1
        return await super().run(command, timeout_s)


class _Recorder:
    """The registry's side of a scan, kept in a list."""

    def __init__(self) -> None:
        self.found: list[tuple[str, Candidate]] = []

    def add_found(self, target: TargetConfig, strategy: Strategy, group: str) -> None:
        assert isinstance(strategy, Scanned)
        self.found.append((target.name, strategy.candidate))

    def taken(self, name: str) -> bool:
        return any(found == name for found, _ in self.found)

    def update_found(self, name: str) -> None:
        return None

    async def remove(self, name: str, why: str = "was removed") -> None:
        return None


async def test_twenty_browsers_at_once(topology: Topology, farm: BrowserFarm,
                                       tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    browsers = [farm.start("puppeteer_dev_chrome_profile-", "--remote-debugging-port=0")
                for _ in range(20)]
    for browser in browsers:
        assert browser.port

    # One scan is one SSH exec, within its time bound, and sees all twenty.
    for key, value in topology.client_env().items():
        monkeypatch.setenv(key, value)  # asyncssh reads ~/.ssh/config of this process
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)
    config = load_config({**os.environ, "SSH_PROXY_TO": "h1",
                          "CHROME_SSH_GATEWAY_BROWSERS": "all"}).targets[0]
    assert config.ssh is not None
    host = _Counted(config.ssh, config.host_key_policy, config.reconnect)
    recorder = _Recorder()
    try:
        scan = HostScan(config, host, recorder)
        await scan.look()
    finally:
        await host.aclose()
    assert host.runs == 1 and scan.state == "up"
    assert scan.last_scan_ms is not None and scan.last_scan_ms < SCAN_TIMEOUT_S * 1000
    seen = {c.pid: c for _, c in recorder.found}
    assert {b.pid for b in browsers} <= set(seen)
    assert all(seen[b.pid].problem is None and seen[b.pid].active_port == b.port
               for b in browsers)

    path = write_targets(tmp_path / "targets.toml", {
        "ci": {"ssh": "h1", "browsers": "all", "scan_interval_s": INTERVAL_S}})
    async with open_gateway(topology.client_env(), ["--config", str(path)]) as client:
        members = await _members(client, {b.pid for b in browsers}, timeout=60)
        assert all(m["state"] == "up" for m in members.values()), members
        assert len({m["name"] for m in members.values()}) == 20


def test_doctor_shows_the_scan(topology: Topology, farm: BrowserFarm, tmp_path: Path) -> None:
    """What the scan saw, and what each process became, in doctor's endpoint step; then
    the first attachable browser is checked like any target's."""
    pipe = farm.start("playwright_chromiumdev_profile-", "--remote-debugging-pipe", pipe=True)
    path = write_targets(tmp_path / "targets.toml", {"ci": {"ssh": "h1", "browsers": "all"}})
    done = subprocess.run(
        [sys.executable, "-m", "gateway", "doctor", "--config", str(path), "--json"],
        env=topology.client_env(), capture_output=True, text=True, timeout=90,
        stdin=subprocess.DEVNULL, cwd=Path(__file__).resolve().parents[2])
    [entry] = json.loads(done.stdout)["targets"]
    steps = {s["name"]: s for s in entry["steps"]}
    assert done.returncode == 0 and entry["up"], done.stdout
    endpoint = steps["endpoint"]["detail"]
    assert f"pid {pipe.pid} chromium (playwright): not attachable" in endpoint
    own = topology.host("h1").chrome_pid()
    assert f"pid {own} chromium: port {topology.host('h1').chrome_port()}" in endpoint
    assert steps["websocket"]["status"] == "ok" and steps["tabs"]["status"] == "ok"
