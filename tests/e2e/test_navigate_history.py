"""``navigate`` with ``history``: back, forward and reload of a real tab on an SSH target.

Three cacheable pages (``/history.html?n=1..3`` of the page server inside host ``h1``)
are walked in one tab. Where the walk arrived is read from the page itself
(``evaluate``), not only from navigate's answer; whether a step restored the page
from the back/forward cache (no load event at all) is read from its ``pageshow``
events. The request headers of a reload come from the tab's network log.

Timeouts here only bound how long a test may wait; nothing asserts how fast anything was.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.helpers import call_err, call_ok
from tests.e2e.pages import DevtoolsEnv, js, page_fixtures

pytestmark = pytest.mark.anyio

env, tabs = page_fixtures("history")

def page(env: DevtoolsEnv, n: int) -> str:
    return env.site("h1").url(f"/history.html?n={n}")

async def walk(env: DevtoolsEnv, tabs: list[int], *pages: int) -> int:
    """A new tab that loaded ``pages`` one after the other."""
    first = await call_ok(env.client, "navigate", {"url": page(env, pages[0]), "target": "h1"})
    tab = int(first["tab"])
    tabs.append(tab)
    for n in pages[1:]:
        await call_ok(env.client, "navigate", {"url": page(env, n), "tab": tab})
    return tab

async def step(env: DevtoolsEnv, tab: int, history: str, **extra: Any) -> dict[str, Any]:
    return await call_ok(env.client, "navigate", {"tab": tab, "history": history, **extra})

async def arrived_at(env: DevtoolsEnv, tab: int, result: dict[str, Any], n: int) -> None:
    """navigate's answer and the page itself agree that the tab shows page ``n``."""
    assert (result["tab"], result["target"]) == (tab, "h1")
    assert (result["url"], result["title"]) == (page(env, n), f"csgw-history-{n}")
    assert await js(env.client, tab, "[location.href, document.title]") == [
        page(env, n), f"csgw-history-{n}"]

async def test_back_and_forward_over_three_pages_and_at_both_ends(
    env: DevtoolsEnv, tabs: list[int]
) -> None:
    tab = await walk(env, tabs, 1, 2, 3)

    await arrived_at(env, tab, await step(env, tab, "back"), 2)
    await arrived_at(env, tab, await step(env, tab, "back"), 1)
    # The first entry of a tab the gateway opened is its about:blank start page.
    await arrived_at(env, tab, await step(env, tab, "forward"), 2)
    await arrived_at(env, tab, await step(env, tab, "forward"), 3)

    error = await call_err(env.client, "navigate", {"tab": tab, "history": "forward"})
    assert "already at the last page" in error and "navigate to a URL" in error
    await arrived_at(env, tab, await step(env, tab, "reload"), 3)  # the error changed nothing

async def test_back_at_the_first_page_says_so(env: DevtoolsEnv, tabs: list[int]) -> None:
    tab = await walk(env, tabs, 1)
    history = await call_ok(env.client, "cdp_command", {
        "tab": tab, "method": "Page.getNavigationHistory"})
    entries = history["result"]["entries"]
    for _ in range(len(entries) - 1):  # back to the very first entry (about:blank)
        await step(env, tab, "back")

    error = await call_err(env.client, "navigate", {"tab": tab, "history": "back"})
    assert "already at the first page" in error and "navigate to a URL instead" in error

async def test_back_to_a_page_from_the_back_forward_cache_settles(
    env: DevtoolsEnv, tabs: list[int]
) -> None:
    """A restored page fires no load event: the step must settle on its frameNavigated
    (within the call's bound, not by running into navigate's timeout)."""
    tab = await walk(env, tabs, 1, 2)

    result = await step(env, tab, "back", timeout_s=20)

    await arrived_at(env, tab, result, 1)
    # [false, true]: first shown when loaded, then again restored from the cache — the
    # case with no load event was really the one exercised.
    assert await js(env.client, tab, "window.csgwShows") == [False, True]

async def test_back_over_a_same_document_entry_settles(
    env: DevtoolsEnv, tabs: list[int]
) -> None:
    """An entry made by pushState is the same document: no load event either, the step
    settles on Page.navigatedWithinDocument."""
    tab = await walk(env, tabs, 1)
    await js(env.client, tab, "window.csgwMark = 'same document'; "
                              "history.pushState({}, '', '?n=1&pushed=1')")

    result = await step(env, tab, "back", timeout_s=20)

    await arrived_at(env, tab, result, 1)
    assert await js(env.client, tab, "window.csgwMark") == "same document"
    assert await js(env.client, tab, "window.csgwShows") == [False]  # never shown again


async def test_reload_loads_the_page_again(env: DevtoolsEnv, tabs: list[int]) -> None:
    tab = await walk(env, tabs, 1)
    await js(env.client, tab, "window.csgwMark = 'before reload'")

    result = await step(env, tab, "reload", wait="domcontentloaded")

    await arrived_at(env, tab, result, 1)
    assert await js(env.client, tab, "typeof window.csgwMark") == "undefined"
    assert await js(env.client, tab,
                    "performance.getEntriesByType('navigation')[0].type") == "reload"

async def document_request_headers(env: DevtoolsEnv, tab: int) -> dict[str, str]:
    """The request headers of the tab's newest document request (lower-case names)."""
    listed = await call_ok(env.client, "network_requests", {
        "tab": tab, "resource_types": ["Document"]})
    newest = max(r["id"] for r in listed["requests"])
    detail = await call_ok(env.client, "network_request", {"tab": tab, "id": newest})
    return {k.lower(): str(v) for k, v in detail["request_headers"].items()}

async def test_reload_with_ignore_cache_is_a_hard_reload(
    env: DevtoolsEnv, tabs: list[int]
) -> None:
    tab = await walk(env, tabs, 1)

    await step(env, tab, "reload")
    soft = await document_request_headers(env, tab)
    await arrived_at(env, tab, await step(env, tab, "reload", ignore_cache=True), 1)
    hard = await document_request_headers(env, tab)

    # Chrome revalidates on a plain reload and bypasses its cache on a hard one.
    assert soft.get("cache-control") == "max-age=0", soft
    assert hard.get("cache-control") == "no-cache" and hard.get("pragma") == "no-cache", hard

@pytest.mark.parametrize(("args", "says"), [
    ({"history": "back"}, "needs the tab"),
    ({"url": "about:blank", "history": "back", "tab": 1}, "exactly one of url"),
    ({}, "exactly one of url"),
    ({"history": "back", "ignore_cache": True, "tab": 1}, "ignore_cache applies to"),
    ({"history": "sideways", "tab": 1}, "history"),
])
async def test_bad_history_arguments_are_refused_clearly(
    env: DevtoolsEnv, args: dict[str, Any], says: str
) -> None:
    async def tab_ids() -> set[int]:
        return {t["tab"] for t in (await call_ok(env.client, "list_tabs", {}))["tabs"]}

    before = await tab_ids()

    error = await call_err(env.client, "navigate", args)

    assert says in error, error
    # No tab opened for it (an earlier test's tab may still be on its way out).
    assert await tab_ids() <= before
