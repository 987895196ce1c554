"""A browser context's sign-in state over CDP: its cookies and per-origin localStorage.

Cookies are the context's own, all of them, through the browser-level ``Storage``
domain with the context's ``browserContextId`` (the default context has one too).

localStorage has no browser-level API: Chrome 156 answers ``DOMStorage.*`` only for
an origin some frame of the page is showing ("Frame not found for the given storage
id" otherwise — tried). So:

* saved and cleared is the localStorage of the origins the context's tabs show (each
  tab's page origin): a context's storage of an origin no tab is on is not reachable
  without loading that origin, and loading a page to read it is not a save's business;
* loaded, an origin at a time, through a scratch tab of the context whose requests
  never leave the browser: a route of its own (``gateway.tabs.routes``) answers
  every one with an empty page, so the tab
  is *at* the origin (its storage is the origin's) without a byte sent to the site —
  Playwright's way too. The scratch tab is closed afterwards, and the context stays
  (a fresh named context made for the load keeps the state for its next tab).

No value is returned to the caller's result or logged: the functions hand back the
state itself (for the file) and the tool reports names and counts.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import anyio

from gateway import progress
from gateway.browsers.session import BrowserSession, TabSession
from gateway.errors import (
    CaptureFailed,
    CdpError,
    CdpTimeout,
    GatewayError,
    InvalidArgument,
    NavigationError,
)
from gateway.page.navigation import navigate_tab
from gateway.tabs.routes import Route, pattern_matcher

from .file import Cookie, OriginStorage, StorageItem, StorageState

if TYPE_CHECKING:
    from gateway.browsers.browser import Browser
    from gateway.tabs.tab import Tab

__all__ = ["clear_state", "context_id", "load_state", "read_state"]

CLOSE_S = 5.0
_SET_ITEMS_JS = ("(items => {{ localStorage.clear(); for (const [k, v] of items) "
                 "localStorage.setItem(k, v); return location.origin; }})({items})")


async def context_id(on: BrowserSession, context: str | None, *, make: bool) -> str:
    """The ``browserContextId`` meant: the session's tab's (as Chrome says, so a tab in a
    context the gateway did not make counts as its own), the named one (made now if new
    and ``make``: a load fills a fresh context), or the browser's default context."""
    browser = on.browser
    browser.pages.scope.check_own_context(
        browser.name, on.tab.context if isinstance(on, TabSession) else context,
        "storage_state")
    if isinstance(on, TabSession):
        info = await browser.browser_call("Target.getTargetInfo",
                                          {"targetId": on.tab.target_id})
        return str(info["targetInfo"]["browserContextId"])
    if context is not None:
        if make:  # through id_for even when known: a state loaded makes it more than routes'
            return await browser.pages.contexts.id_for(context, browser.browser_call)
        known = browser.pages.contexts.known(context)
        if known is not None:
            return known
        raise InvalidArgument(f"target {browser.name!r} has no context {context!r} (none "
                              "was made, or its last tab was closed); open a tab with "
                              "that context, or load a state into it")
    found = await browser.browser_call("Target.getBrowserContexts")
    return str(found["defaultBrowserContextId"])


def _origin(url: str) -> str | None:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    return f"{parts.scheme}://{parts.netloc.rpartition('@')[2]}"


async def _pages_in(browser: Browser, context: str, budget: float) -> dict[str, Tab]:
    """One tab of the context per origin its tabs show (http and https only)."""
    infos = (await browser.browser_call("Target.getTargets", timeout_s=budget))["targetInfos"]
    shown: dict[str, Tab] = {}
    for info in infos:
        tab = browser.tabs.get(info["targetId"])
        origin = _origin(info.get("url", ""))
        if (tab is not None and origin is not None and info.get("type") == "page"
                and info.get("browserContextId") == context):
            shown.setdefault(origin, tab)
    return shown


def _storage_id(origin: str) -> dict[str, Any]:
    return {"storageId": {"securityOrigin": origin, "isLocalStorage": True}}


async def read_state(browser: Browser, context: str, budget: float
                     ) -> tuple[StorageState, list[str]]:
    """The context's cookies and the localStorage of the origins its tabs show; and the
    origins that could not be read (a tab that does not answer: a dialog, a hung page)."""
    cookies = (await browser.browser_call("Storage.getCookies", {"browserContextId": context},
                                          timeout_s=budget))["cookies"]
    origins, unread = [], []
    for origin, tab in sorted((await _pages_in(browser, context, budget)).items()):
        try:
            entries = (await browser.tab_call(tab, "DOMStorage.getDOMStorageItems",
                                              _storage_id(origin), timeout_s=budget))["entries"]
        except GatewayError:
            unread.append(origin)
            continue
        if entries:
            origins.append(OriginStorage(origin=origin, localStorage=[
                StorageItem(name=k, value=v) for k, v in entries]))
    return StorageState(cookies=[Cookie.from_cdp(c) for c in cookies], origins=origins), unread


async def load_state(browser: Browser, context: str, state: StorageState,
                     budget: float) -> list[str]:
    """Put ``state`` into the context: its cookies added (one of the same name, domain
    and path replaced), and each of its origins' localStorage replaced by the file's.
    The names of the cookies Chrome did not keep (invalid, expired, or SameSite=None
    without Secure, which Chrome drops without a word)."""
    refused = await _set_cookies(browser, context, state.cookies, budget) if state.cookies \
        else []
    if not state.origins:
        return refused

    async def set_all(tab: Tab) -> None:
        scratch = TabSession(browser, budget, tab)
        for done, origin in enumerate(state.origins):
            await progress.report(done, len(state.origins), f"localStorage of {origin.origin}")
            await _set_items(scratch, origin)

    await _in_scratch_tab(browser, context, set_all)
    return refused


async def _set_cookies(browser: Browser, context: str, cookies: list[Cookie],
                       budget: float) -> list[str]:
    """Set ``cookies`` in the context; the names of those it did not keep. One invalid
    cookie fails Chrome's whole batch ("Invalid cookie fields", naming none): then each
    is set alone, so the others still load and the result can say which one it was."""
    params = [c.to_cdp() for c in cookies]
    try:
        await browser.browser_call("Storage.setCookies", {
            "browserContextId": context, "cookies": params}, timeout_s=budget)
    except CdpError:
        for param in params:
            with contextlib.suppress(CdpError):  # it shows as not kept below
                await browser.browser_call("Storage.setCookies", {
                    "browserContextId": context, "cookies": [param]}, timeout_s=budget)
    now = await browser.browser_call("Storage.getCookies", {"browserContextId": context},
                                     timeout_s=budget)
    kept = {(c["name"], c["domain"].lstrip("."), c["path"]) for c in now["cookies"]}
    return [c.name for c in cookies if (c.name, c.domain.lstrip("."), c.path) not in kept]


async def _set_items(session: TabSession, origin: OriginStorage) -> None:
    """Load the (empty, answered by ``Fetch``) page of the origin in the scratch tab and,
    once it has loaded, write its items there in one script that says where it ran.
    Written before the load, the script could run in the document still there (Chrome
    answers ``Page.navigate`` before the new one commits): the previous origin's
    storage would be cleared and given this origin's items."""
    budget = session.budget
    try:
        await navigate_tab(session, origin.origin + "/", "load")
    except NavigationError as exc:
        raise CaptureFailed(f"could not open a page of {origin.origin} to load its "
                            f"localStorage: {exc}") from None
    except CdpTimeout:
        raise CaptureFailed(f"the scratch page of {origin.origin} did not load within "
                            f"{budget:g} s; its localStorage was not loaded — retry, or "
                            "pass a larger timeout_s") from None
    items = json.dumps([[i.name, i.value] for i in origin.local_storage])
    ran = await session.call("Runtime.evaluate", {
        "expression": _SET_ITEMS_JS.format(items=items), "returnByValue": True},
        timeout_s=budget)
    if ran.get("result", {}).get("value") != origin.origin:
        raise CaptureFailed(f"the scratch page never reached {origin.origin}; its "
                            "localStorage was not loaded — retry")


async def _in_scratch_tab(browser: Browser, context: str,
                          work: Callable[[Tab], Awaitable[None]]) -> None:
    """``work(tab)`` in a blank tab of the context whose every request a route of its own
    answers with an empty page (deciding over any route of the context); the tab closed
    afterwards and gone from the browser when this returns (bounded, even when
    cancelled), the context kept."""
    tab = await browser.new_tab("about:blank", context_id=context)
    try:
        if tab.session_id is None:
            raise CaptureFailed("the scratch tab for loading localStorage did not attach; "
                                "retry")
        tab.routes.add(Route("**", "fulfill", pattern_matcher("**"),
                             headers={"Content-Type": "text/html"}))
        await browser.pages.refresh_routes([tab], CLOSE_S)
        await work(tab)
    finally:
        # (a GatewayError: gone already, with its connection or by itself)
        with anyio.move_on_after(CLOSE_S, shield=True), contextlib.suppress(GatewayError):
            await browser.pages.close(tab, "was storage_state's scratch tab, closed",
                                      browser.browser_call, CLOSE_S)


async def clear_state(browser: Browser, context: str, budget: float) -> tuple[int, list[str]]:
    """Delete the context's cookies and the localStorage of the origins its tabs show:
    (cookies deleted, origins cleared)."""
    cookies = (await browser.browser_call("Storage.getCookies", {"browserContextId": context},
                                          timeout_s=budget))["cookies"]
    await browser.browser_call("Storage.clearCookies", {"browserContextId": context},
                               timeout_s=budget)
    cleared = []
    for origin, tab in sorted((await _pages_in(browser, context, budget)).items()):
        await browser.tab_call(tab, "DOMStorage.clear", _storage_id(origin), timeout_s=budget)
        cleared.append(origin)
    return len(cookies), cleared
