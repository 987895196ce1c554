"""Isolated browser contexts by name: agents sharing one browser, not its cookies.

``new_tab``/``navigate`` with ``context="NAME"`` open the tab in a browser
context (``Target.createBrowserContext``: its own cookies, storage and cache)
made on first use of that name on that browser and reused by name after. The
gateway disposes of a context when its last tab is closed with ``close_tab``;
contexts are created with ``disposeOnDetach``, so Chrome drops them itself when
the gateway's connection ends (exit, crash, reconnect), and a context the
gateway did not create is never touched: only ids made here are known here. Each
context made is set up (``made``: its downloads go where the default context's do)
before its first tab opens.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import anyio

from gateway.browsers.routes import Routes

__all__ = ["BrowserContexts"]

Call = Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]]
Made = Callable[[Call, str], Awaitable[None]]


class BrowserContexts:
    """The named contexts the gateway made on one browser connection."""

    def __init__(self) -> None:
        self._ids: dict[str, str] = {}  # name → browserContextId
        self._lock = anyio.Lock()        # one createBrowserContext per new name
        self._routes: dict[str, Routes] = {}  # name → the routes of all its tabs
        self.made: Made | None = None    # told of each context made (``Downloads``)

    def routes(self, name: str | None) -> Routes:
        """The routes every tab of context ``name`` has (``network_route``); they go with
        the context. An empty table for the default context, or one with none yet."""
        if name is None or name not in self._ids:
            return Routes()
        return self._routes.setdefault(name, Routes())

    def name_of(self, context_id: str | None) -> str | None:
        for name, known in self._ids.items():
            if known == context_id:
                return name
        return None

    def known(self, name: str) -> str | None:
        """The id of the context called ``name``, if the gateway made one (never made here)."""
        return self._ids.get(name)

    async def id_for(self, name: str, call: Call) -> str:
        """The context called ``name``, created now when there is none yet."""
        async with self._lock:
            if name not in self._ids:
                created = await call("Target.createBrowserContext", {"disposeOnDetach": True})
                self._ids[name] = created["browserContextId"]
                if self.made is not None:
                    await self.made(call, self._ids[name])
            return self._ids[name]

    async def dispose(self, name: str, call: Call) -> None:
        """Dispose of the context called ``name`` (one of ours; its last tab is gone)."""
        context_id = self._ids.pop(name, None)
        self._routes.pop(name, None)
        if context_id is not None:
            await call("Target.disposeBrowserContext", {"browserContextId": context_id})

    def forget(self) -> None:
        """The connection ended: Chrome disposed of every context it made (disposeOnDetach)."""
        self._ids.clear()
        self._routes.clear()
