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

A context's routes (``network_route`` with ``context``) may come before its first tab,
as Playwright's ``context.route`` before any page: the context is made for them then.
One made for routes alone and never used otherwise (no tab opened in it, no state loaded
into it) is disposed when its last route is removed while it has no tab (``unrouted``);
at gateway exit, a crash or a reconnect Chrome disposes of it as of every other
(``disposeOnDetach``), its routes going with it (``forget``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import anyio

from gateway.tabs.routes import Routes

__all__ = ["BrowserContexts"]

Call = Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]]
Made = Callable[[Call, str], Awaitable[None]]


class BrowserContexts:
    """The named contexts the gateway made on one browser connection."""

    def __init__(self) -> None:
        self._ids: dict[str, str] = {}  # name → browserContextId
        self._lock = anyio.Lock()        # one createBrowserContext per new name
        self._routes: dict[str, Routes] = {}  # name → the routes of all its tabs
        self._for_routes: set[str] = set()  # made by routes_for, used for nothing else yet
        self.made: Made | None = None    # told of each context made (``Downloads``)

    def routes(self, name: str | None) -> Routes:
        """The routes every tab of context ``name`` has (``network_route``), to read; they
        go with the context. An empty table for the default context, or one with none yet
        (one to add to comes from ``routes_for``)."""
        if name is None or name not in self._ids:
            return Routes()
        return self._routes.setdefault(name, Routes())

    def tables(self) -> list[Routes]:
        """The route tables of every context (their bodies count to the gateway's bound)."""
        return list(self._routes.values())

    async def routes_for(self, name: str, call: Call) -> Routes:
        """The routes of context ``name`` to add to, the context made now if new. The
        table is the context's own, looked up under the lock that makes it: a reconnect's
        ``forget`` between making the context and finding its table cannot hand back a
        table nobody keeps (a route reported added, then lost)."""
        async with self._lock:
            if name not in self._ids:
                await self._make(name, call)
                self._for_routes.add(name)
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
                await self._make(name, call)
            self._for_routes.discard(name)  # a tab, a state: wanted for more than routes
            return self._ids[name]

    async def _make(self, name: str, call: Call) -> None:
        created = await call("Target.createBrowserContext", {"disposeOnDetach": True})
        self._ids[name] = created["browserContextId"]
        if self.made is not None:
            await self.made(call, self._ids[name])

    async def dispose(self, name: str, call: Call) -> None:
        """Dispose of the context called ``name`` (one of ours; its last tab is gone)."""
        async with self._lock:
            await self._dispose(name, call)

    async def unrouted(self, name: str, call: Call, has_tabs: bool) -> bool:
        """Routes of context ``name`` were removed: dispose of it if it was made for routes
        alone, has none left and no tab (``has_tabs``). Whether it was."""
        async with self._lock:
            if name not in self._for_routes or self._routes.get(name) or has_tabs:
                return False
            await self._dispose(name, call)
            return True

    async def _dispose(self, name: str, call: Call) -> None:
        context_id = self._ids.pop(name, None)
        self._routes.pop(name, None)
        self._for_routes.discard(name)
        if context_id is not None:
            await call("Target.disposeBrowserContext", {"browserContextId": context_id})

    def forget(self) -> None:
        """The connection ended: Chrome disposed of every context it made (disposeOnDetach),
        and their routes went with them."""
        self._ids.clear()
        self._routes.clear()
        self._for_routes.clear()
