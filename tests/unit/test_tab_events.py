"""The real glue: gateway.tab.Tab.on_event feeding ConsoleLog/NetworkLog, on captured events.

Tab decides what a main-frame navigation is (the console and network epochs), so
the navigation-pruning behaviour a user sees depends on it as much as on the logs.
"""

from __future__ import annotations

from gateway.tabs.tab import Tab
from tests.unit.cdp_events import load, manifest


def replayed_tab(page: str) -> Tab:
    tab = Tab(1, "t", manifest()["pages"][page])
    for method, params in load(page):
        tab.on_event(method, params)
    return tab


def test_tab_routes_console_and_network_events() -> None:
    tab = replayed_tab("network")
    assert tab.console.navigation == tab.network.navigation == 1
    assert len(tab.network.query(limit=10_000)) == 18  # 10 requests + 4 redirects x 2 hops
    assert any("blocked by CORS policy" in e.text for e in tab.console.query(limit=10_000))


def test_redirected_navigation_counts_once() -> None:
    """BUG (gateway/tabs/tab.py): a main-frame redirect sends a second
    ``Network.requestWillBeSent`` (type Document, requestId == loaderId, with
    ``redirectResponse``) and Tab counts it as another navigation. Five page loads,
    one through a 302, give ``navigation == 6``; the 302 hop of the third load is
    pruned while that page's console messages are kept. A login flow with three
    redirects would use up all KEEP_NAVIGATIONS epochs and erase the page before it."""
    tab = replayed_tab("navigations")
    assert tab.console.navigation == 5
    assert tab.network.navigation == 5
    origin = manifest()["origin_a"]
    assert [e.url for e in tab.network.query(limit=10_000)][:2] == [
        f"{origin}/nav-redirect?n=3", f"{origin}/nav?n=3"]
    assert [e.text for e in tab.console.query(limit=10_000)] == [
        "nav 3 loaded", "nav 4 loaded", "nav 5 loaded"]
