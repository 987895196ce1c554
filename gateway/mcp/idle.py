"""Idle time of an HTTP server: how long since the last request ended, none in flight.

The background gateway of ``call`` should not live forever once the shell that
started it is done: ``Idle`` sits in the ASGI stack, counts requests in flight
and remembers when the last one ended; ``wait`` returns once nothing happened
for ``timeout`` seconds, and the server stops. A person watching a live view of its
tabs (``busy_while``) keeps it up too: the page is served beside it, not through it.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import anyio

from gateway.mcp.auth import App, Receive, Scope, Send

__all__ = ["Idle"]


class Idle:
    """ASGI wrapper that tracks activity; ``wait()`` returns after ``timeout`` idle seconds."""

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self._in_flight = 0
        self._last = time.monotonic()
        self._app: App | None = None
        self._busy: Callable[[], bool] = lambda: False

    def busy_while(self, check: Callable[[], bool]) -> None:
        """Count the server busy (never idle) while ``check()`` says so."""
        self._busy = check

    def wrap(self, app: App) -> App:
        self._app = app
        return self

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        assert self._app is not None
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        self._in_flight += 1
        try:
            await self._app(scope, receive, send)
        finally:
            self._in_flight -= 1
            self._last = time.monotonic()

    def idle_for(self) -> float:
        if self._in_flight:
            return 0.0
        if self._busy():
            self._last = time.monotonic()
            return 0.0
        return time.monotonic() - self._last

    async def wait(self) -> None:
        while (left := self.timeout - self.idle_for()) > 0:
            await anyio.sleep(min(left, 60.0) if not self._in_flight else 1.0)
