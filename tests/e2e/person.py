"""A person at the gateway's machine: a real Chromium (headless, on this machine's
loopback), driven over its own DevTools websocket, that opens live-view URLs.

Only what the live-view tests need: open a page, evaluate in it, click and type as
real input. The browser is started as a child of the test and stopped by PID
(``local_chromium``, which the bad-frames test's proxy talks to as well).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import signal
import subprocess
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
from websockets.asyncio.client import ClientConnection, connect

from tests.topology import CHROME_FLAGS, CHROMIUM

__all__ = ["Person", "PersonPage", "local_chromium", "person_browser"]


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


@contextlib.contextmanager
def local_chromium(home: Path) -> Iterator[str]:
    """A headless Chromium on this machine's loopback, flags as the topology's; yields its
    DevTools websocket URL. Stopped by its pid (and its process group) afterwards."""
    profile = home / "profile"
    profile.mkdir(parents=True)
    with (home / "chromium.log").open("wb") as log:
        browser = subprocess.Popen(
            [CHROMIUM, *CHROME_FLAGS, "--remote-debugging-port=0",
             f"--user-data-dir={profile}", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            close_fds=True, start_new_session=True,
            env={"HOME": str(home), "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"})
    try:
        active_port = profile / "DevToolsActivePort"
        deadline = time.monotonic() + 30
        while not (active_port.exists() and "\n" in active_port.read_text()):
            assert browser.poll() is None, f"Chromium exited; see {home / 'chromium.log'}"
            assert time.monotonic() < deadline, "Chromium wrote no DevToolsActivePort in 30 s"
            time.sleep(0.05)
        port, path = active_port.read_text().split("\n")[:2]
        yield f"ws://127.0.0.1:{int(port)}{path.strip()}"
    finally:
        browser.terminate()
        try:
            browser.wait(10)
        except subprocess.TimeoutExpired:
            browser.kill()
            browser.wait(5)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(browser.pid, signal.SIGKILL)  # helpers left behind, if any


@asynccontextmanager
async def person_browser(home: Path) -> AsyncIterator[Person]:
    """The person's Chromium (``local_chromium`` in ``home``), connected."""
    with local_chromium(home) as url:
        async with connect(url, max_size=None) as ws, anyio.create_task_group() as tg:
            person = Person(ws)
            tg.start_soon(person.run)
            yield person
            tg.cancel_scope.cancel()
