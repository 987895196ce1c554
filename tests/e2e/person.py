"""A person at the gateway's machine: a real Chromium (headless, on this machine's
loopback), driven over its own DevTools websocket, that opens live-view URLs.

Only what the live-view tests need: open a page, evaluate in it, click and type as
real input. The browser is started as a child of the test and stopped by PID.
"""

from __future__ import annotations

import itertools
import json
import subprocess
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
from websockets.asyncio.client import ClientConnection, connect

from tests.topology import CHROMIUM

__all__ = ["Person", "PersonPage", "person_browser"]


class PersonPage:
    """One tab of the person's browser, on its own CDP session."""

    def __init__(self, person: Person, session: str) -> None:
        self._person = person
        self._session = session

    async def eval(self, expression: str) -> Any:
        reply = await self._person.send("Runtime.evaluate", {
            "expression": expression, "awaitPromise": True, "returnByValue": True},
            self._session)
        if "exceptionDetails" in reply:
            raise AssertionError(f"{expression!r} threw: {reply['exceptionDetails']}")
        return reply["result"].get("value")

    async def click(self, x: float, y: float) -> None:
        for kind in ("mousePressed", "mouseReleased"):
            await self._person.send("Input.dispatchMouseEvent", {
                "type": kind, "x": x, "y": y, "button": "left", "clickCount": 1},
                self._session)

    async def key(self, key: str, code: str, key_code: int) -> None:
        await self._person.send("Input.dispatchKeyEvent", {
            "type": "keyDown", "key": key, "code": code, "text": key,
            "windowsVirtualKeyCode": key_code}, self._session)
        await self._person.send("Input.dispatchKeyEvent", {
            "type": "keyUp", "key": key, "code": code, "windowsVirtualKeyCode": key_code},
            self._session)


class Person:
    def __init__(self, ws: ClientConnection) -> None:
        self._ws = ws
        self._ids = itertools.count(1)
        self._replies: dict[int, Any] = {}
        self._arrived = anyio.Event()

    async def run(self) -> None:
        async for raw in self._ws:
            message = json.loads(raw)
            if "id" in message:
                self._replies[message["id"]] = message
                self._arrived.set()

    async def send(self, method: str, params: dict[str, Any] | None = None,
                   session: str | None = None) -> Any:
        call = next(self._ids)
        message: dict[str, Any] = {"id": call, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        await self._ws.send(json.dumps(message))
        with anyio.fail_after(20):
            while call not in self._replies:
                await self._arrived.wait()
                self._arrived = anyio.Event()
        reply = self._replies.pop(call)
        if "error" in reply:
            raise AssertionError(f"{method}: {reply['error']}")
        return reply["result"]

    async def open(self, url: str) -> PersonPage:
        """A new tab (in its own browser context: its own cookies) at ``url``, loaded."""
        context = (await self.send("Target.createBrowserContext"))["browserContextId"]
        target = (await self.send("Target.createTarget", {
            "url": "about:blank", "browserContextId": context}))["targetId"]
        session = (await self.send("Target.attachToTarget", {
            "targetId": target, "flatten": True}))["sessionId"]
        page = PersonPage(self, session)
        await self.send("Page.enable", None, session)
        await self.send("Page.navigate", {"url": url}, session)
        return page


@asynccontextmanager
async def person_browser() -> AsyncIterator[Person]:
    profile = Path(tempfile.mkdtemp(prefix="csgw-person-"))
    process = subprocess.Popen(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--remote-debugging-port=0", "--window-size=1200,900",
         f"--user-data-dir={profile}", "about:blank"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, close_fds=True)
    try:
        active = profile / "DevToolsActivePort"
        deadline = time.monotonic() + 20
        while not active.exists() or len(active.read_text().splitlines()) < 2:
            assert time.monotonic() < deadline, "the person's Chromium did not start"
            await anyio.sleep(0.05)
        port, path = active.read_text().splitlines()[:2]
        async with connect(f"ws://127.0.0.1:{port}{path}", max_size=None) as ws, \
                anyio.create_task_group() as tg:
            person = Person(ws)
            tg.start_soon(person.run)
            yield person
            tg.cancel_scope.cancel()
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        subprocess.run(["rm", "-rf", str(profile)], check=False)
