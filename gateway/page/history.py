"""Going back, forward or reloading a tab, and waiting for the page it arrives at.

A URL navigation knows the document it waits for (Page.navigate answers with its
loaderId). A history step does not: Page.navigateToHistoryEntry and Page.reload
answer before anything commits. So the wait is for the first sign that the step
arrived, whichever it is:

- a new document's load event (``tab.loader_id`` moved on from the one before);
- a page restored from the back/forward cache: Chrome fires ``Page.frameNavigated``
  with ``type: "BackForwardCacheRestore"`` and *no* load event, so waiting for
  one would always run into the timeout;
- a same-document entry (``pushState``, a fragment): ``Page.navigatedWithinDocument``
  on the main frame, and no load either.
"""

from __future__ import annotations

from typing import Any, Literal

from gateway.browsers.session import TabSession
from gateway.errors import CdpTimeout, NavigationError
from gateway.page.navigation import LOAD_EVENTS
from gateway.page.waits import finished
from gateway.tabs.tab import Tab

__all__ = ["HistoryStep", "history_entry", "step_history"]

HistoryStep = Literal["back", "forward", "reload"]

_ENDS = {
    "back": "already at the first page of this tab's history (nothing to go back to); "
            "navigate to a URL instead",
    "forward": "already at the last page of this tab's history (nothing to go forward "
               "to); use history='back' or navigate to a URL instead",
}


def history_entry(history: dict[str, Any], step: Literal["back", "forward"]) -> int:
    """The entry id one ``step`` away in a Page.getNavigationHistory answer;
    ``NavigationError`` (saying what to do instead) at either end."""
    entries = history.get("entries") or []
    index = int(history.get("currentIndex", 0)) + (-1 if step == "back" else 1)
    if not 0 <= index < len(entries):
        raise NavigationError(_ENDS[step])
    return int(entries[index]["id"])


async def step_history(session: TabSession, step: HistoryStep, wait: str,
                       ignore_cache: bool = False) -> None:
    """Go ``step`` in the tab's history (or reload it) and wait (``wait``: a key of
    ``LOAD_EVENTS``, or ``"none"``; within the call's budget) for the page it arrives
    at. Hold ``tab.lock``."""
    tab, timeout_s = session.tab, session.budget
    params: dict[str, Any]
    if step == "reload":
        method, params = "Page.reload", {"ignoreCache": ignore_cache}
    else:
        history = await session.call("Page.getNavigationHistory", timeout_s=timeout_s)
        method, params = "Page.navigateToHistoryEntry", {"entryId": history_entry(history, step)}
    if wait not in LOAD_EVENTS:
        await session.call(method, params, timeout_s=timeout_s)
        return
    before = tab.loader_id
    arrivals = (
        session.expect(LOAD_EVENTS[wait], where=lambda _: tab.loader_id != before),
        session.expect("Page.frameNavigated", where=lambda p: _main(p.get("frame", {}), tab)
                   and p.get("type") == "BackForwardCacheRestore"),
        session.expect("Page.navigatedWithinDocument",
                   where=lambda p: p.get("frameId") == tab.target_id),
    )
    try:
        await session.call(method, params, timeout_s=timeout_s)
        if not await finished(arrivals, timeout_s, f"'{wait}' of the page"):
            raise CdpTimeout("navigate", timeout_s,
                             f"the page did not fire '{wait}' after history={step!r} (it may "
                             "still be loading); call list_tabs or evaluate to look, or use "
                             "wait='none'")
        if not any(a.arrived for a in arrivals):  # the tab detached
            raise NavigationError(f"tab {tab.id} went away during history={step!r}")
    finally:
        for arrival in arrivals:
            arrival.drop()


def _main(frame: dict[str, Any], tab: Tab) -> bool:
    return not frame.get("parentId") and frame.get("id") == tab.target_id
