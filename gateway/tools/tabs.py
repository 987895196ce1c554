"""Tabs: list, open, navigate, close."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel

from gateway.concurrency import gather
from gateway.config.urls import check_url
from gateway.errors import InvalidArgument, TargetUnavailable
from gateway.output.absent import absent
from gateway.page.emulation import emulating
from gateway.page.history import HistoryStep, step_history
from gateway.page.navigation import navigate_tab, page_state

from .args import ContextArg, OptionalTab, TabArg, TargetArg, TimeoutArg, UrlArg
from .definition import Gateway, TabCall, tab_tool, tool

if TYPE_CHECKING:
    from gateway.browsers.browser import Browser
    from gateway.tabs.tab import Tab

__all__ = ["TOOLS"]

WaitArg = Literal["load", "domcontentloaded", "none"]


class TabInfo(BaseModel):
    tab: int
    target: str
    title: str
    url: str
    context: str | None = absent()
    emulates: dict[str, Any] | None = absent()


class TargetProblem(BaseModel):
    target: str
    error: str


class TabList(BaseModel):
    tabs: list[TabInfo]
    unavailable: list[TargetProblem] | None = absent()  # targets that did not answer


class NewTabResult(BaseModel):
    tab: int
    target: str
    url: str
    context: str | None = absent()


class NavigateResult(BaseModel):
    tab: int
    target: str
    url: str
    title: str


class CloseResult(BaseModel):
    tab: int
    closed: bool


def _info(tab: Tab) -> TabInfo:
    return TabInfo(tab=tab.id, target=tab.target, title=tab.title, url=tab.url,
                   context=tab.context, emulates=emulating(tab) or None)


def _url_or_history(arguments: dict[str, Any]) -> None:
    """navigate takes exactly one of ``url`` and ``history``; a history step needs a tab."""
    url, history = arguments.get("url"), arguments.get("history")
    if (url is None) == (history is None):
        raise InvalidArgument("navigate takes exactly one of url (a page to load) and "
                              "history ('back', 'forward' or 'reload' of a tab)")
    if history is not None and arguments.get("tab") is None:
        raise InvalidArgument(f"history={history!r} needs the tab to step: pass tab "
                              "(list_tabs shows the ids)")
    if arguments.get("ignore_cache") and history != "reload":
        raise InvalidArgument("ignore_cache applies to history='reload' only")


@tool("List tabs", read_only=True)
async def list_tabs(gateway: Gateway, target: TargetArg = None) -> TabList:
    """List open tabs (id, title, url)."""
    if target is not None:
        browser = gateway.registry.browser(target)
        await browser.connection()
        return TabList(tabs=[_info(tab) for tab in sorted(browser.tabs.values(),
                                                          key=lambda tab: tab.id)])

    async def problem(browser: Browser) -> TargetProblem | None:
        try:
            await browser.connection()  # waits (bounded, concurrently) for reconnecting ones
        except TargetUnavailable as exc:
            return TargetProblem(target=browser.name, error=str(exc))
        return None

    # Only targets that are not up need a (concurrent, bounded) wait: the common
    # case — all up — stays a read from memory, with no task per target.
    if any(g.state == "connecting" for g in gateway.registry.groups.values()):
        await gateway.registry.settled()  # a host scan's first look: its browsers appear
    waiting = [browser for browser in gateway.registry.browsers.values() if browser.state != "up"]
    problems = [p for p in await gather(*map(problem, waiting)) if p is not None]
    failed = {p.target for p in problems}
    tabs = [_info(tab) for browser in gateway.registry.browsers.values()
            if browser.name not in failed for tab in browser.tabs.values()]
    return TabList(tabs=sorted(tabs, key=lambda i: i.tab), unavailable=problems or None)

@tool("Open a tab", open_world=True)
async def new_tab(gateway: Gateway, url: UrlArg = "about:blank", context: ContextArg = None,
                  target: TargetArg = None) -> NewTabResult:
    """Open a tab and return its id without waiting for the load (navigate waits)."""
    browser = gateway.registry.browser(target)
    url = check_url(url, browser.config.allow_schemes)
    tab = await browser.new_tab(url, context)
    return NewTabResult(tab=tab.id, target=browser.name, url=url, context=context)

@tab_tool("Navigate a tab", open_world=True, tab="for_url", check=_url_or_history)
async def navigate(
    on: TabCall,
    url: UrlArg | None = None,
    history: HistoryStep | None = None,
    ignore_cache: bool = False,
    tab: OptionalTab = None,
    context: ContextArg = None,
    target: TargetArg = None,
    wait: WaitArg = "load",
    timeout_s: TimeoutArg = None,
) -> NavigateResult:
    """Load a URL in a tab (a new one when `tab` is omitted), or step its `history`
    (`ignore_cache`: hard reload); wait, and return the final URL and title.
    """
    if history is not None:
        await step_history(on, history, wait, ignore_cache)
    else:
        assert url is not None  # _url_or_history
        await navigate_tab(on, url, wait)
    final_url, title = await page_state(on)
    return NavigateResult(tab=on.tab.id, target=on.browser.name, url=final_url, title=title)

@tab_tool("Close a tab", destructive=True, idempotent=True, lock=False)
async def close_tab(on: TabCall, tab: TabArg) -> CloseResult:
    """Close a tab (even hung)."""
    if on.browser.tabs.get(on.tab.target_id) is not on.tab:
        raise InvalidArgument(f"tab {tab} is already closed")
    await on.browser.close_tab(on.tab)
    return CloseResult(tab=tab, closed=True)


TOOLS = (list_tabs, new_tab, navigate, close_tab)
