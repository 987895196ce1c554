"""What one call works on: a browser, or a tab of it, and the seconds it may spend.

The tools hand this to the page layer instead of a ``(browser, tab)`` pair: the page's
behaviour asks its session to ``call`` a command on the tab, ``expect`` an event,
``subscribe`` to a stream of them and ``release`` a remote object, and never needs to
know which browser method does that or which CDP session id the tab has now.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gateway.browsers.browser import Browser
    from gateway.tabs.tab import Arrival, Listener, Tab

__all__ = ["BrowserSession", "TabSession"]


@dataclass(frozen=True)
class BrowserSession:
    """A call on a browser (no tab): the browser, and the call's time budget."""

    browser: Browser
    budget: float

    async def browser_call(self, method: str, params: dict[str, Any] | None = None, *,
                           timeout_s: float | None = None) -> dict[str, Any]:
        """A browser-level command (``Target.*``, ``Browser.*``, ``Storage.*``)."""
        return await self.browser.browser_call(method, params, timeout_s=timeout_s)


@dataclass(frozen=True)
class TabSession(BrowserSession):
    """A call on one tab; a tool that takes the tab lock holds ``tab.lock`` meanwhile."""

    tab: Tab

    async def call(self, method: str, params: dict[str, Any] | None = None, *,
                   timeout_s: float | None = None, timeout_hint: str = "",
                   session: str | None = None) -> dict[str, Any]:
        """A command on the tab's session (or ``session``, one of its frames'); fails
        fast while a JavaScript dialog is open (``Browser.tab_call``)."""
        return await self.browser.tab_call(self.tab, method, params, timeout_s=timeout_s,
                                           timeout_hint=timeout_hint, session=session)

    def expect(self, *methods: str,
               where: Callable[[dict[str, Any]], bool] | None = None) -> Arrival:
        """The next of the tab's ``methods`` events (``Tab.expect``): register first."""
        return self.tab.expect(*methods, where=where)

    def subscribe(self, key: str, listener: Listener) -> Callable[[], None]:
        """Every event of the tab's method (or ``"Domain."``) ``key`` to ``listener``
        (``Tab.subscribe``); returns its remover."""
        return self.tab.subscribe(key, listener)

    async def release(self, object_id: str, session: str | None = None) -> None:
        """Release a remote object, best effort (``Browser.release_object``)."""
        await self.browser.release_object(object_id, session or self.tab.session_id)
