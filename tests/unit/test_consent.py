"""``Browser.run`` against a person's own Chrome, played on loopback: it serves no /json
(404) and holds each websocket handshake until "the person" answers — Allow completes it,
Cancel answers 403, as Chromium 156 does (tests/e2e/test_own_browser.py drives the real
dialog). While the handshake waits the target says so; a refusal is final until a call
asks again: no retry of its own, each of which would be a new dialog for the person."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from http import HTTPStatus
from pathlib import Path

import anyio
import pytest
from websockets.asyncio.server import ServerConnection, serve
from websockets.http11 import Request, Response

from gateway.browsers.browser import Browser
from gateway.config import load_config
from gateway.errors import TargetUnavailable
from gateway.fleet.registry import open_registry
from gateway.tools.targets import _info

pytestmark = pytest.mark.anyio


class PersonsChrome:
    """Answers /json with 404; holds each handshake until ``answer`` (True: Allow)."""

    def __init__(self) -> None:
        self.handshakes = 0
        self.waiting = anyio.Event()
        self._answer: tuple[anyio.Event, list[bool]] = (anyio.Event(), [])

    def answer(self, allow: bool) -> None:
        event, said = self._answer
        said.append(allow)
        self._answer = (anyio.Event(), [])
        event.set()

    async def process_request(self, connection: ServerConnection,
                              request: Request) -> Response | None:
        if request.path.startswith("/json"):
            return connection.respond(HTTPStatus.NOT_FOUND, "")
        self.handshakes += 1
        event, said = self._answer
        self.waiting.set()
        await event.wait()
        self.waiting = anyio.Event()
        return None if said[0] else connection.respond(HTTPStatus.FORBIDDEN, "")

    async def handler(self, ws: ServerConnection) -> None:
        async for frame in ws:
            msg = json.loads(frame)
            result = {"Browser.getVersion": {"product": "Chrome/156.0.8078.114",
                                             "userAgent": "Mozilla/5.0 Chrome/156"},
                      "Target.getTargets": {"targetInfos": []}}.get(msg["method"], {})
            await ws.send(json.dumps({"id": msg["id"], "result": result}))


@asynccontextmanager
async def attached(tmp_path: Path, chrome: PersonsChrome) -> AsyncIterator[Browser]:
    async with serve(chrome.handler, "127.0.0.1", 0,
                     process_request=chrome.process_request) as server:
        port = server.sockets[0].getsockname()[1]
        path = tmp_path / "targets.toml"
        path.write_text(f'[targets.own]\ncdp = "ws://127.0.0.1:{port}/devtools/browser/b1"\n'
                        "[targets.own.reconnect]\ninitial_delay_s = 0.05\nmax_delay_s = 0.1\n"
                        "call_wait_s = 0.5\n")
        async with open_registry(load_config({}, str(path))) as registry:
            yield registry.browsers["own"]


async def _until(condition: object, within_s: float = 5) -> None:
    with anyio.fail_after(within_s):
        while not condition():  # type: ignore[operator]
            await anyio.sleep(0.01)


async def test_the_target_says_it_waits_for_the_person_then_is_theirs_to_allow(
        tmp_path: Path) -> None:
    chrome = PersonsChrome()
    async with attached(tmp_path, chrome) as browser:
        with anyio.fail_after(5):
            await chrome.waiting.wait()
        await _until(lambda: browser.asking)
        info = _info(browser)
        assert info.state == "waiting for the person to allow"
        assert info.personal is True
        assert info.error is not None and info.error.startswith(
            "waiting for the person to allow: their Chrome on ")
        with pytest.raises(TargetUnavailable, match="call again once they have"):
            await browser.connection()
        chrome.answer(allow=True)
        await _until(lambda: browser.state == "up")
        info = _info(browser)
        assert (info.state, info.personal, info.tab_scope) == ("up", True, "agent")
        assert chrome.handshakes == 1


async def test_a_refusal_is_said_and_not_retried_until_a_call_asks_again(
        tmp_path: Path) -> None:
    chrome = PersonsChrome()
    async with attached(tmp_path, chrome) as browser:
        with anyio.fail_after(5):
            await chrome.waiting.wait()
        chrome.answer(allow=False)
        await _until(lambda: browser.state == "down")
        assert browser.error is not None
        assert browser.error.startswith("the person declined remote debugging")
        # Ten times the longest backoff: a supervisor that retried would have asked again.
        await anyio.sleep(1.0)
        assert (chrome.handshakes, browser.state) == (1, "down")
        with pytest.raises(TargetUnavailable, match="waiting for the person to allow"):
            await browser.connection()  # a call asks once more
        assert chrome.handshakes == 2
        chrome.answer(allow=True)
        await _until(lambda: browser.state == "up")
        assert chrome.handshakes == 2
