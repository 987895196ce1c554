"""Loading a URL in a tab and waiting for it: shared by navigate and browse."""

from __future__ import annotations

from typing import Any

from gateway.browsers.session import TabSession
from gateway.errors import CdpTimeout, NavigationError
from gateway.page.js import script
from gateway.page.waits import finished

__all__ = ["LOAD_EVENTS", "navigate_tab", "page_state"]

_PAGE_STATE_JS = script("page_state.js")

LOAD_EVENTS = {"load": "Page.loadEventFired", "domcontentloaded": "Page.domContentEventFired"}


async def navigate_tab(session: TabSession, url: str, wait: str) -> None:
    """Page.navigate, then wait (within the call's budget) for the chosen load event.
    Hold ``tab.lock``.

    Only the load of the document this navigation commits counts: a page still
    loading from before (e.g. right after new_tab) fires its own load event, which
    must not end the wait early.
    """
    tab, timeout_s = session.tab, session.budget
    mine: dict[str, str] = {}
    loaded = (session.expect(LOAD_EVENTS[wait],
                         where=lambda _: bool(mine) and tab.loader_id == mine["loader_id"])
              if wait in LOAD_EVENTS else None)
    try:
        result = await session.call("Page.navigate", {"url": url}, timeout_s=timeout_s)
        mine["loader_id"] = result.get("loaderId", "")
        if result.get("errorText"):
            raise NavigationError(f"navigation to {url[:200]} failed: {result['errorText']}")
        already = loaded is not None and tab.loaded.get(LOAD_EVENTS[wait]) == mine["loader_id"]
        if loaded is not None and result.get("loaderId") and not already:
            # (no loaderId: a same-document navigation; "already": a fast page, e.g. a
            # data: URL, loaded before Page.navigate even answered)
            if not await finished((loaded,), timeout_s, f"'{wait}' of the page"):
                raise CdpTimeout("navigate", timeout_s,
                                 f"the page did not fire '{wait}' (it may still be loading); "
                                 "call list_tabs or evaluate to look, or use wait='none'")
            if loaded.dropped:  # the tab detached
                raise NavigationError(f"tab {tab.id} went away while loading {url[:200]}")
    finally:
        if loaded is not None:
            loaded.drop()


async def page_state(session: TabSession) -> tuple[str, str]:
    """The tab's URL and title as the page says them now (kept on the tab)."""
    tab = session.tab
    result = await session.call("Runtime.evaluate", {
        "expression": _PAGE_STATE_JS, "returnByValue": True})
    value: Any = result.get("result", {}).get("value") or [tab.url, tab.title]
    tab.shows(str(value[0]), str(value[1]))
    return tab.url, tab.title
