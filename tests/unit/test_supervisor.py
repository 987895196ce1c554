"""``Browser.run``, the supervisor, against a browser played on loopback.

A set-up failure (Chrome took the socket but did not answer the set-up commands: a
``CdpError``, a ``CdpTimeout``, the socket closing meanwhile) used to return from
inside ``_serve``'s task group while its uploads sweeper (and a WebDriver session's
keeper) still ran there: the supervisor waited on them for ever, so the target stayed
``down`` for good — never retried, a call's wake-up going nowhere. Retried, it must
back off like any failed attempt (and stay ``down`` meanwhile), not reconnect in a
loop. A call that ``call_wait_s`` cuts short while the retry it woke is under way
says so, as it did when a retry read ``connecting``.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from websockets.asyncio.server import ServerConnection, serve

from gateway.browsers.browser import Browser
from gateway.config import load_config
from gateway.errors import TargetUnavailable
from gateway.fleet.registry import open_registry

pytestmark = pytest.mark.anyio

ANSWERS: dict[str, dict[str, Any]] = {
    "Browser.getVersion": {"product": "Fake/1.0", "protocolVersion": "1.3"},
    "Target.getTargets": {"targetInfos": []},
}


class FakeBrowser:
    """Answers every command with an error while ``failing``, else as Chrome would."""

    def __init__(self) -> None:
        self.failing = True
        self.connections: list[float] = []

    async def handler(self, ws: ServerConnection) -> None:
        self.connections.append(time.monotonic())
        async for frame in ws:
            msg = json.loads(frame)
            if self.failing:
                reply = {"id": msg["id"], "error": {"code": -32601, "message": "not here"}}
            else:
                reply = {"id": msg["id"], "result": ANSWERS.get(msg["method"], {})}
            await ws.send(json.dumps(reply))


@asynccontextmanager
async def supervised(tmp_path: Path, fake: FakeBrowser,
                     reconnect: str) -> AsyncIterator[Browser]:
    async with serve(fake.handler, "127.0.0.1", 0) as server:
        port = server.sockets[0].getsockname()[1]
        path = tmp_path / "targets.toml"
        path.write_text(f'[targets.p]\ncdp = "ws://127.0.0.1:{port}/pool?token=x"\n'
                        f"[targets.p.reconnect]\n{reconnect}\n")
        async with open_registry(load_config({}, str(path))) as registry:
            yield registry.browsers["p"]


async def _until(browser: Browser, state: str, within_s: float) -> list[str]:
    seen: list[str] = []
    with anyio.move_on_after(within_s):
        while browser.state != state:
            seen.append(browser.state)
            await anyio.sleep(0.01)
    return seen


async def test_a_target_whose_set_up_failed_is_retried_and_comes_back(tmp_path: Path) -> None:
    fake = FakeBrowser()
    async with supervised(tmp_path, fake, "initial_delay_s = 0.1\nmax_delay_s = 0.2") as browser:
        await _until(browser, "down", 5)
        assert "did not answer set-up commands" in (browser.error or ""), browser.error
        fake.failing = False
        await _until(browser, "up", 5)
        assert browser.state == "up", (browser.state, browser.error, len(fake.connections))
        assert browser.product == "Fake/1.0"


async def test_a_set_up_failure_backs_off_and_the_target_stays_down(tmp_path: Path) -> None:
    fake = FakeBrowser()
    async with supervised(tmp_path, fake, "initial_delay_s = 0.2\nmax_delay_s = 0.4") as browser:
        await _until(browser, "down", 5)
        first = len(fake.connections)
        seen = await _until(browser, "never", 1.5)
        retries = len(fake.connections) - first
        # 0.2 + 0.4 + 0.4 + 0.4 s of backoff: 3-4 retries in 1.5 s, not a reconnect loop.
        assert 1 <= retries <= 5, f"{retries} retries in 1.5 s"
        assert set(seen) == {"down"}, sorted(set(seen))


async def test_a_call_that_wakes_a_set_up_retry_gets_its_answer(tmp_path: Path) -> None:
    """Backing off a long time: the call's wake-up must start the retry at once."""
    fake = FakeBrowser()
    async with supervised(tmp_path, fake, "initial_delay_s = 30\nmax_delay_s = 30\n"
                          "call_wait_s = 5") as browser:
        await _until(browser, "down", 5)
        fake.failing = False
        started = time.monotonic()
        await browser.connection()
        assert time.monotonic() - started < 3
        assert browser.state == "up"


async def test_a_call_cut_short_while_its_retry_is_under_way_says_so(tmp_path: Path) -> None:
    """The first look at /json/version fails at once; the next ones hang (a host that
    stopped answering). A call wakes a retry, and its call_wait_s ends first."""
    seen = 0

    async def handle(stream: anyio.abc.SocketStream) -> None:
        nonlocal seen
        seen += 1
        if seen == 1:
            await stream.aclose()
            return
        await anyio.sleep(30)

    async with await anyio.create_tcp_listener(local_host="127.0.0.1") as listener, \
            anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, handle)
        port = listener.extra(anyio.abc.SocketAttribute.local_port)
        path = tmp_path / "targets.toml"
        path.write_text(f'[targets.p]\ncdp = "127.0.0.1:{port}"\n[targets.p.reconnect]\n'
                        "initial_delay_s = 30\nmax_delay_s = 30\nconnect_timeout_s = 20\n"
                        "call_wait_s = 0.5\n")
        async with open_registry(load_config({}, str(path))) as registry:
            browser = registry.browsers["p"]
            await _until(browser, "down", 5)
            with pytest.raises(TargetUnavailable) as caught:
                await browser.connection()
            assert seen == 2, seen  # the call's own attempt is the one under way
            assert "still reconnecting after 0.5 s" in str(caught.value), caught.value
        tg.cancel_scope.cancel()
