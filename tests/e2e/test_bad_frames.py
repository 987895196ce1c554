"""Malformed CDP frames from one browser cost nothing but those frames.

A real websocket proxy sits between the gateway and a real headless Chromium
started by this test on loopback; target ``proxied`` reaches that browser only
through it, target ``direct`` is the topology's h1 over SSH and is not proxied.
Driven through the MCP client, the proxy injects every kind of unusable frame:
between the events of a page that logs, between a command and its real reply,
and as the reply itself. Afterwards both targets still answer, the proxied
browser's one websocket was never replaced, the gateway is alive, each kind of
frame was logged once, and a malformed reply failed its call at once with the
browser's fault named, not a timeout.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from websockets.asyncio.client import ClientConnection, connect
from websockets.asyncio.server import ServerConnection, serve

from tests.e2e.helpers import (
    call_err,
    call_ok,
    data_url,
    eventually,
    gateway_pid,
    marked_env,
    open_gateway,
    present,
    wait_for_targets,
    write_targets,
)
from tests.e2e.person import local_chromium
from tests.topology import Topology
from tests.unit.test_cdp_frames import MALFORMED_REPLIES, UNUSABLE

pytestmark = pytest.mark.anyio

TEST_BOUND_S = 150.0
"""The whole test, proxy included, ends within this (it takes a few seconds)."""

BAD_REPLY = re.compile(r"csgw-bad-reply-(\d+)")
IN_FLIGHT = "csgw-garbage-in-flight"
BETWEEN_EVENTS = "csgw-garbage-between-events"


def _in_flight_garbage(command: dict[str, Any]) -> list[str | bytes]:
    """Unusable frames aimed at a command in flight and at its session."""
    call_id, session = command["id"], command.get("sessionId")
    aimed: list[str | bytes] = [
        json.dumps({"id": str(call_id), "result": {"result": {"type": "string", "value": "no"}}}),
        json.dumps({"id": [call_id], "result": {}}),
        json.dumps({"id": float(call_id) + 0.5, "error": {"code": 1, "message": "no"}}),
        json.dumps({"method": "Runtime.consoleAPICalled", "sessionId": session, "params": []}),
        json.dumps({"method": 5, "sessionId": session, "params": {}}),
    ]
    return aimed + [frame for frame, _kind in UNUSABLE]


class InjectingProxy:
    """Forwards CDP both ways between the gateway and Chromium, and injects frames when a
    ``Runtime.evaluate`` carries one of the markers above in its expression."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream
        self.connections = 0
        self.injected = 0
        self.between_events: list[str | bytes] = []

    async def handle(self, gateway: ServerConnection) -> None:
        self.connections += 1
        async with (connect(self.upstream, compression=None, max_size=None, ping_interval=None,
                            open_timeout=10, proxy=None) as browser,
                    anyio.create_task_group() as tg):
            tg.start_soon(self._to_browser, gateway, browser, tg.cancel_scope)
            await self._to_gateway(browser, gateway)
            tg.cancel_scope.cancel()

    async def _inject(self, gateway: ServerConnection, frame: str | bytes) -> None:
        await gateway.send(frame)
        self.injected += 1

    async def _to_gateway(self, browser: ClientConnection, gateway: ServerConnection) -> None:
        async for frame in browser:
            await gateway.send(frame)
            if self.between_events and '"method"' in str(frame)[:40]:
                await self._inject(gateway, self.between_events.pop(0))

    async def _to_browser(self, gateway: ServerConnection, browser: ClientConnection,
                          scope: anyio.CancelScope) -> None:
        async for frame in gateway:
            command = json.loads(frame)
            expression = str(command.get("params", {}).get("expression", ""))
            bad_reply = BAD_REPLY.search(expression)
            if bad_reply is not None:  # answered here, never reaches the browser
                reply, _detail = MALFORMED_REPLIES[int(bad_reply.group(1))]
                await self._inject(gateway, json.dumps({"id": command["id"], **reply}))
                continue
            if IN_FLIGHT in expression:  # the garbage first, then the real reply
                for garbage in _in_flight_garbage(command):
                    await self._inject(gateway, garbage)
            if BETWEEN_EVENTS in expression:
                session = command.get("sessionId")
                self.between_events = [
                    json.dumps({"method": "Runtime.consoleAPICalled", "sessionId": session,
                                "params": "not an object"}),
                    *(frame for frame, _kind in UNUSABLE)]
            await browser.send(frame)
        scope.cancel()


@asynccontextmanager
async def proxy_to(upstream: str) -> AsyncIterator[tuple[InjectingProxy, str]]:
    """The proxy listening on 127.0.0.1, and the websocket URL the gateway should use."""
    proxy = InjectingProxy(upstream)
    async with serve(proxy.handle, "127.0.0.1", 0, compression=None, max_size=None,
                     ping_interval=None) as server:
        port = server.sockets[0].getsockname()[1]
        path = upstream.split("/", 3)[3]
        yield proxy, f"ws://127.0.0.1:{port}/{path}"


async def _page(gw: Any, target: str, title: str) -> int:
    nav = await call_ok(gw, "navigate", {"target": target, "url": data_url(title)})
    assert nav["title"] == title
    tab: int = nav["tab"]
    return tab


async def _evaluate(gw: Any, tab: int, expression: str) -> Any:
    return (await call_ok(gw, "evaluate", {"tab": tab, "expression": expression}))["value"]


async def test_bad_frames_from_one_browser_leave_every_target_up(
    topology: Topology, tmp_path: Path
) -> None:
    errlog_path = tmp_path / "gateway.stderr"
    with anyio.fail_after(TEST_BOUND_S), local_chromium(tmp_path / "chromium") as upstream:
        async with proxy_to(upstream) as (proxy, via_proxy):
            targets = write_targets(tmp_path / "targets.toml", {
                "proxied": {"cdp": via_proxy},
                "direct": {"ssh": "h1"},
            })
            env, marker = marked_env(topology.client_env())
            with errlog_path.open("w") as errlog:
                async with open_gateway(env, ["--config", str(targets)], errlog=errlog) as gw:
                    await wait_for_targets(gw, {"proxied": "up", "direct": "up"})
                    pid = gateway_pid(marker)
                    tab = await _page(gw, "proxied", "proxied-page")
                    other = await _page(gw, "direct", "direct-page")

                    # Between the events of a page that logs: every event still arrives.
                    count = len(UNUSABLE) + 20
                    logged = await _evaluate(gw, tab, f"'{BETWEEN_EVENTS}'; for (let i = 0; "
                                             f"i < {count}; i++) console.log('between-' + i); "
                                             f"{count}")
                    assert logged == count
                    console = await call_ok(gw, "console_messages", {"tab": tab,
                                                                     "limit": 1000})
                    texts = [m["text"] for m in console["messages"]]
                    assert [t for t in texts if t.startswith("between-")] == [
                        f"between-{i}" for i in range(count)]
                    assert proxy.between_events == [], "not every frame was slipped in"

                    # Between a command and its real reply: the real reply answers.
                    assert await _evaluate(gw, tab, f"'{IN_FLIGHT}'; 6 * 7") == 42

                    # As the reply itself: that call fails at once and says why.
                    for index, (_reply, detail) in enumerate(MALFORMED_REPLIES):
                        started = time.monotonic()
                        error = await call_err(gw, "evaluate", {
                            "tab": tab, "expression": f"'csgw-bad-reply-{index}'",
                            "timeout_s": 60})
                        assert time.monotonic() - started < 10, "it waited for a timeout"
                        assert ("the browser sent a malformed reply to Runtime.evaluate on "
                                f"target 'proxied' ({detail}") in error, error

                    # Both targets still answer; nothing reconnected; the gateway lives.
                    assert await _evaluate(gw, tab, "document.title") == "proxied-page"
                    assert await _evaluate(gw, other, "document.title") == "direct-page"
                    for name, title in (("proxied", "proxied-page"), ("direct", "direct-page")):
                        listing = await call_ok(gw, "list_tabs", {"target": name})
                        assert title in [t["title"] for t in listing["tabs"]], listing
                    states = await wait_for_targets(gw, {"proxied": "up", "direct": "up"})
                    assert states["proxied"].get("error") is None, states["proxied"]
                    assert proxy.connections == 1, "the proxied browser's websocket was replaced"
                    assert proxy.injected >= 2 * len(UNUSABLE) + len(MALFORMED_REPLIES)
                    os.kill(pid, 0)  # still running (raises if it is gone)
                    with Path(f"/proc/{pid}/stat").open() as stat:
                        assert stat.read().rpartition(")")[2].split()[0] not in ("Z", "X")

    stderr = await eventually(lambda: _read(errlog_path), until=present,
                              timeout=5, what="the gateway's log")
    drops = [line for line in stderr.splitlines() if "dropped a CDP frame" in line]
    kinds = {kind for _frame, kind in UNUSABLE} | {"malformed reply"}
    for kind in kinds:
        lines = [line for line in drops if f"kind={kind} " in line or f"kind='{kind}'" in line]
        assert len(lines) == 1, (kind, drops)  # once per kind, however many came
        assert "target=proxied" in lines[0] or "target='proxied'" in lines[0], lines[0]
    assert len(drops) == len(kinds), drops
    assert "event listener failed" not in stderr  # nothing unusable reached a listener
    assert "Traceback" not in stderr


async def _read(path: Path) -> str | None:
    text = path.read_text()
    return text or None
