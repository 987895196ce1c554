"""Faults on the way to a browser, and what a tab id means afterwards.

* The SSH connection drops (sessions killed on the host): the gateway reconnects to
  the same browser, and the same tab ids keep working on the same pages.
* The browser restarts (new process, new port): old tab ids fail with a message that
  says so, instead of reaching a different page; new tabs get new, higher ids.
* sshd is down, or the network silently drops packets: calls fail within bounded
  time, and the target comes back once the host does.

Each test starts its own gateway and leaves the hosts as it found them
(``fault_topology``).
"""

from __future__ import annotations

import itertools
from pathlib import Path

import anyio
import av
import pytest
from mcp import Client

from tests.e2e.helpers import (
    ERROR_BOUND,
    call_err,
    call_ok,
    data_url,
    eventually,
    open_gateway,
    present,
    remote_active_port,
    text_of,
    wait_for_targets,
)
from tests.e2e.load_mix import flood_js
from tests.topology import Topology

pytestmark = pytest.mark.anyio


async def _evaluate_when_possible(gw: Client, tab: int, expression: str) -> object:
    """The value once the call succeeds (the gateway may still be reconnecting)."""

    async def attempt() -> dict[str, object] | None:
        result = await gw.call_tool("evaluate", {"tab": tab, "expression": expression,
                                                 "timeout_s": 5})
        return None if result.is_error else result.structured_content

    content = await eventually(attempt, until=present,
                               timeout=30, what=f"evaluate on tab {tab} to work again")
    return content["value"]


async def test_tab_ids_survive_an_ssh_reconnect(fault_topology: Topology) -> None:
    topology = fault_topology
    h1 = topology.host("h1")
    url = data_url("survivor")
    async with open_gateway(topology.client_env() | {"SSH_PROXY_TO": "h1"}) as gw:
        await wait_for_targets(gw, {"default": "up"})
        tab = (await call_ok(gw, "navigate", {"url": url}))["tab"]
        await call_ok(gw, "evaluate", {"tab": tab, "expression": "window.mark = 'same-page'"})
        sessions = set(h1.ssh_session_pids())
        assert sessions, "the gateway has no SSH session on h1"

        h1.kill_ssh_sessions()

        # The very same page (its JS state survived) answers under the very same id.
        assert await _evaluate_when_possible(gw, tab, "window.mark") == "same-page"
        assert not set(h1.ssh_session_pids()) & sessions  # over a new SSH connection
        listing = await call_ok(gw, "list_tabs")
        assert [t["tab"] for t in listing["tabs"] if t["url"] == url] == [tab]
        newer = await call_ok(gw, "new_tab")
        assert newer["tab"] > tab
        for t in (tab, newer["tab"]):
            await call_ok(gw, "close_tab", {"tab": t})


async def test_a_flooding_tab_survives_an_ssh_reconnect(fault_topology: Topology) -> None:
    """The link drops while a tab's console flood is being sampled
    (``gateway.tabs.console_flood``): the tab answers again under its id, its
    console goes on, and once the flood is over a message it logs comes through."""
    topology = fault_topology
    h1 = topology.host("h1")
    async with open_gateway(topology.client_env() | {"SSH_PROXY_TO": "h1"}) as gw:
        await wait_for_targets(gw, {"default": "up"})
        tab = (await call_ok(gw, "navigate", {"url": data_url("flooding")}))["tab"]
        started = await call_ok(gw, "evaluate", {"tab": tab, "expression": flood_js(6.0, 10_000)})
        assert started["value"] == "started"

        async def sampled() -> bool:
            listing = await call_ok(gw, "console_messages", {"tab": tab, "limit": 1})
            return "did not see every message" in listing.get("note", "")

        await eventually(sampled, timeout=30, what="the flooding tab's console to be sampled")
        h1.kill_ssh_sessions()

        async def flood_over() -> bool:
            return await _evaluate_when_possible(gw, tab, "window.floodDone") is True

        await eventually(flood_over, timeout=60, what="the flood to end (after the reconnect)")
        await call_ok(gw, "evaluate", {"tab": tab, "expression": "console.log('after'); 1"})

        async def after_came() -> bool:
            listing = await call_ok(gw, "console_messages", {"tab": tab, "limit": 1})
            return [m["text"] for m in listing["messages"]] == ["after"]

        await eventually(after_came, timeout=30, what="the message logged after the flood")
        await call_ok(gw, "close_tab", {"tab": tab})


async def _download(gw: Client, tab: int, text: str) -> int:
    """Have the page download ``text`` as a file; its id once completed."""
    await _evaluate_when_possible(gw, tab, (
        "const a = document.createElement('a'); a.download = 'note.txt';"
        f"a.href = 'data:text/plain,{text}'; a.click(); 1"))

    async def completed() -> int | None:
        listed = (await call_ok(gw, "downloads", {"tab": tab}))["downloads"]
        done = [d["id"] for d in listed if d["state"] == "completed"]
        return done[-1] if len(done) == len(listed) and listed else None

    return await eventually(completed, until=present, timeout=30, what=f"the download of {text!r}")


async def test_downloads_survive_an_ssh_reconnect(fault_topology: Topology,
                                                  tmp_path: Path) -> None:
    """The directory on the host is kept (its holder written again for the new
    connection) and the new connection sends downloads there too. In a context of the
    gateway's (h1's browser is not one it launched): Chrome disposes of it with the
    old connection, so the download after the reconnect is made in the context of
    that name the new connection makes."""
    h1 = fault_topology.host("h1")
    async with open_gateway(fault_topology.client_env() | {"SSH_PROXY_TO": "h1"}) as gw:
        await wait_for_targets(gw, {"default": "up"})
        nav = {"url": data_url("downloader"), "context": "downloads"}
        tab = (await call_ok(gw, "navigate", nav))["tab"]
        before = await _download(gw, tab, "before")
        h1.kill_ssh_sessions()
        await eventually(lambda: _gone(gw, tab), timeout=30,
                         what="the context's tab gone with the old connection")
        tab = (await call_ok(gw, "navigate", nav))["tab"]
        after = await _download(gw, tab, "after")
        assert after > before
        for n, text in ((before, "before"), (after, "after")):
            save = tmp_path / f"{text}.txt"
            await call_ok(gw, "downloads", {"target": "default", "fetch": n,
                                            "save_to": str(save)})
            assert save.read_text() == text
        await call_ok(gw, "close_tab", {"tab": tab})


async def _gone(gw: Client, tab: int) -> bool:
    """True once the target is up again without ``tab``."""
    result = await gw.call_tool("list_tabs", {})
    if result.is_error or result.structured_content is None:
        return False
    return tab not in [t["tab"] for t in result.structured_content["tabs"]]


async def test_browser_restart_retires_old_tab_ids(fault_topology: Topology) -> None:
    topology = fault_topology
    h1 = topology.host("h1")
    async with open_gateway(topology.client_env() | {"SSH_PROXY_TO": "h1"}) as gw:
        await wait_for_targets(gw, {"default": "up"})
        tab = (await call_ok(gw, "navigate", {"url": data_url("before-restart")}))["tab"]
        old_ids = [t["tab"] for t in (await call_ok(gw, "list_tabs"))["tabs"]]
        assert tab in old_ids

        new_port = h1.restart_chrome()

        async def restarted_error() -> str | None:
            result = await gw.call_tool("evaluate", {"tab": tab, "expression": "1",
                                                     "timeout_s": 5})
            text = text_of(result)
            assert result.is_error, f"old tab {tab} still answers after the restart: {text}"
            return text if "restarted" in text else None

        error = await eventually(restarted_error, until=present, timeout=30,
                                 what=f"tab {tab} to be reported gone after the restart")
        assert f"tab {tab} was in the browser on 'default', which restarted; it is gone" in error
        assert "call list_tabs" in error
        # Not reused, and still refused later.
        again = await call_err(gw, "evaluate", {"tab": tab, "expression": "1"},
                               timeout=ERROR_BOUND)
        assert "restarted" in again

        listing = await call_ok(gw, "list_tabs")
        assert listing["tabs"], "the restarted browser's first tab is not listed"
        assert all(t["tab"] > max(old_ids) for t in listing["tabs"]), listing
        fresh = await call_ok(gw, "navigate", {"url": data_url("after-restart")})
        assert fresh["tab"] > max(old_ids)
        assert fresh["title"] == "after-restart"

        # Rediscovered on the new port.
        port, path = remote_active_port(h1)
        assert port == new_port
        targets = await wait_for_targets(gw, {"default": "up"})
        assert targets["default"]["cdp_endpoint"].startswith(f"127.0.0.1:{new_port}{path} ")


async def test_target_recovers_when_sshd_comes_back(fault_topology: Topology) -> None:
    topology = fault_topology
    h2 = topology.host("h2")
    h2.stop_sshd()
    async with open_gateway(topology.client_env() | {"SSH_PROXY_TO": "h2"}) as gw:
        targets = await wait_for_targets(gw, {"default": "down"})
        assert "SSH connect to h2 failed" in targets["default"]["error"]
        assert "the connection was refused: nothing listens there" in targets["default"]["error"]
        with anyio.fail_after(ERROR_BOUND):
            error = await call_err(gw, "new_tab")
        assert "target 'default' unreachable (SSH connect to h2 failed" in error
        assert "retry shortly" in error

        h2.start_sshd()

        async def connected() -> bool:
            ping = await call_ok(gw, "ping")  # a call also wakes the reconnect loop
            return bool(ping["connected"])

        await eventually(connected, timeout=30, what="h2 to be reachable again")
        nav = await call_ok(gw, "navigate", {"url": data_url("sshd-is-back")})
        assert nav["title"] == "sshd-is-back"
        await call_ok(gw, "close_tab", {"tab": nav["tab"]})


async def test_silent_partition_does_not_hang_calls(fault_topology: Topology) -> None:
    topology = fault_topology
    h1 = topology.host("h1")
    async with open_gateway(topology.client_env() | {"SSH_PROXY_TO": "h1"}) as gw:
        await wait_for_targets(gw, {"default": "up"})
        tab = (await call_ok(gw, "navigate", {"url": data_url("partitioned")}))["tab"]

        h1.link_down(silent=True)  # packets vanish; no error comes back from anywhere
        try:
            error = await call_err(gw, "evaluate", {"tab": tab, "expression": "1",
                                                    "timeout_s": 2}, timeout=ERROR_BOUND)
            assert "got no answer within 2 s" in error
        finally:
            h1.link_up()

        assert await _evaluate_when_possible(gw, tab, "document.title") == "partitioned"
        await call_ok(gw, "close_tab", {"tab": tab})


async def test_a_recording_outlasts_a_reconnect_longer_than_a_start_attempt(
        fault_topology: Topology, tmp_path: Path) -> None:
    """sshd down for 15 s (longer than one attempt to start a screencast, 10 s): the
    recorded tab lives on in its browser, so its screencast starts again on the tab's new
    session and the recording goes on, rather than ending as if the tab went."""
    h1 = fault_topology.host("h1")
    ticking = data_url("ticking", "<h1 id=n>0</h1><script>let n=0;setInterval(()=>"
                       "{document.getElementById('n').textContent=++n},50)</script>")
    path = tmp_path / "reconnect.webm"
    async with open_gateway(fault_topology.client_env() | {"SSH_PROXY_TO": "h1"},
                            ["--tools", "all"]) as gw:
        await wait_for_targets(gw, {"default": "up"})
        tab = (await call_ok(gw, "navigate", {"url": ticking, "wait": "load"}))["tab"]
        await call_ok(gw, "record", {"tab": tab, "action": "start", "save_to": str(path)})
        await anyio.sleep(1.0)
        h1.stop_sshd(kill_sessions=True)
        try:
            await anyio.sleep(15)
        finally:
            h1.start_sshd()
        assert await _evaluate_when_possible(gw, tab, "n") > 0   # the same page, still ticking
        await anyio.sleep(2.0)
        info = await call_ok(gw, "record", {"tab": tab, "action": "stop"})
        assert "ended" not in info, info
        await call_ok(gw, "close_tab", {"tab": tab})
    with av.open(str(path)) as container:
        times = [float(f.time) for f in container.decode(container.streams.video[0])]
    gap = [b - a for a, b in itertools.pairwise(times)]
    assert times[-1] > 17 and max(gap) > 10, (times[-1], max(gap))
    assert sum(1 for t in times if t > times[-1] - 2.5) > 5, "frames after the reconnect"
