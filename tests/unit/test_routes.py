"""gateway.tabs.routes: patterns, the bounded table, and the command that answers a
paused request; which route takes a request (``interception.take``); how the network log
marks a request a route took (either order of ``Fetch.requestPaused`` and
``Network.requestWillBeSent``); and a context's route table (``contexts``)."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from gateway.browsers.contexts import BrowserContexts
from gateway.browsers.interception import intercepting, take
from gateway.tabs.network_log import NetworkLog
from gateway.tabs.routes import (
    MAX_GATEWAY_BODY_BYTES,
    MAX_ROUTES,
    MAX_TABLE_BODY_BYTES,
    Route,
    RouteLimit,
    Routes,
    answer,
    pattern_matcher,
)
from gateway.tabs.tab import Tab


@pytest.mark.parametrize(("pattern", "url", "hit"), [
    ("**/api/*", "http://127.0.0.1:8000/api/data.json", True),
    ("**/api/*", "http://127.0.0.1:8000/api/data.json?i=3", True),
    ("**/api/*", "http://127.0.0.1:8000/api/v2/data.json", False),
    ("**/api/**", "http://127.0.0.1:8000/api/v2/data.json", True),
    ("http://h/*.png", "http://h/a.png", True),
    ("http://h/*.png", "http://h/x/a.png", False),
    ("**/*.{png,jpg}", "http://h/x/a.jpg", True),
    ("**/*.{png,jpg}", "http://h/x/a.gif", False),
    ("**/a?b", "http://h/a?b", True),          # ? is itself: URLs are full of them
    ("**/a?b", "http://h/axb", False),
    ("**/a\\*b", "http://h/a*b", True),
    ("**/a\\*b", "http://h/axxb", False),
    ("**/page.html", "http://h/page.html#x", False),  # a glob is the whole URL
    ("/data\\.json/", "http://h/api/data.json?x", True),  # a regex is searched
    ("/^https:/", "http://h/", False),
])
def test_patterns_match_as_playwright_globs_or_regexes(pattern: str, url: str,
                                                       hit: bool) -> None:
    assert pattern_matcher(pattern)(url) is hit


@pytest.mark.parametrize(("pattern", "reason"), [
    ("", "empty"), ("  ", "empty"), ("**/{a,{b}}", "nest"), ("**/{a", "never closed"),
    ("**/a}", "closes no"), ("/(unclosed/", "missing \\)"), ("/(a)\\1/", "invalid"),
])
def test_bad_patterns_are_refused_with_the_reason(pattern: str, reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        pattern_matcher(pattern)


def _route(pattern: str = "**", **kwargs: object) -> Route:
    return Route(pattern, kwargs.pop("action", "block"), pattern_matcher(pattern),  # type: ignore[arg-type]
                 **kwargs)  # type: ignore[arg-type]


def test_the_newest_route_decides_and_times_expires_it() -> None:
    table = Routes()
    old, new = _route("**/a/*"), _route("**/a/x", times=2)
    table.add(old)
    table.add(new)
    assert old.id != new.id
    assert table.match("http://h/a/x") is new and new.times == 1
    assert table.match("http://h/a/x") is new and new.times == 0
    assert table.routes == [old]  # its last match took it away
    assert table.match("http://h/a/x") is old and (old.hits, new.hits) == (1, 2)
    assert table.match("http://h/b") is None


def test_a_table_is_bounded_and_says_by_what() -> None:
    table = Routes()
    for _ in range(MAX_ROUTES):
        table.add(_route())
    with pytest.raises(RouteLimit, match=f"MAX_ROUTES = {MAX_ROUTES}"):
        table.add(_route())
    bodies = Routes()
    bodies.add(_route(body=b"x" * (MAX_TABLE_BODY_BYTES - 10)))
    with pytest.raises(RouteLimit, match="MAX_TABLE_BODY_BYTES"):
        bodies.add(_route(body=b"x" * 11))


def test_remove_by_id_by_pattern_or_all() -> None:
    table = Routes()
    a, b, c = _route("**/a"), _route("**/b"), _route("**/b")
    for route in (a, b, c):
        table.add(route)
    assert table.remove(route_id=a.id) == 1 and table.routes == [b, c]
    assert table.remove(route_id=a.id) == 0
    assert table.remove(pattern="**/b") == 2 and not table
    table.add(a)
    table.add(b)
    assert table.remove() == 2 and not table


def test_answers_for_each_action() -> None:
    paused = {"requestId": "interception-1", "request": {
        "url": "http://h/api", "headers": {"Accept": "*/*", "X-Old": "1"}}}
    assert answer(None, paused) == ("Fetch.continueRequest", {"requestId": "interception-1"})
    assert answer(_route(action="block"), paused) == (
        "Fetch.failRequest", {"requestId": "interception-1", "errorReason": "BlockedByClient"})
    method, params = answer(_route(action="fulfill", status=201, body=b"{}",
                                   headers={"Content-Type": "application/json"}), paused)
    assert method == "Fetch.fulfillRequest"
    assert params == {"requestId": "interception-1", "responseCode": 201, "body":
                      base64.b64encode(b"{}").decode(), "responseHeaders": [
                          {"name": "Content-Type", "value": "application/json"}]}
    method, params = answer(_route(action="continue", headers={"x-old": "2", "X-New": "3"},
                                   url="http://h/other"), paused)
    assert method == "Fetch.continueRequest" and params["url"] == "http://h/other"
    assert params["headers"] == [{"name": "Accept", "value": "*/*"},
                                 {"name": "x-old", "value": "2"}, {"name": "X-New", "value": "3"}]
    assert "headers" not in answer(_route(action="continue"), paused)[1]


def _sent(request_id: str, url: str = "http://h/x") -> dict[str, object]:
    return {"requestId": request_id, "loaderId": "L", "timestamp": 1.0, "type": "Fetch",
            "request": {"url": url, "method": "GET", "headers": {}}}


def test_the_network_log_marks_routed_requests_in_either_order() -> None:
    log = NetworkLog()
    log.on_event("Network.requestWillBeSent", _sent("1"))
    log.mark_routed("1", "fulfilled")              # paused after it was announced
    log.mark_routed("2", "blocked")                # paused before
    log.on_event("Network.requestWillBeSent", _sent("2"))
    log.on_event("Network.requestWillBeSent", _sent("3"))  # no route took it
    marks = {e.request_id: e.routed for e in log.query()}
    assert marks == {"1": "fulfilled", "2": "blocked", "3": None}


@pytest.mark.anyio
async def test_a_context_table_makes_contexts_with_no_one_told() -> None:
    """A ``BrowserContexts`` nobody hooked (no ``Downloads``) makes a context and keeps its
    routes until it is disposed."""
    sent: list[str] = []

    async def call(method: str, _params: dict[str, Any]) -> dict[str, Any]:
        sent.append(method)
        return {"browserContextId": "C1"}

    contexts = BrowserContexts()
    assert await contexts.id_for("shop", call) == "C1"
    assert contexts.routes("shop") is contexts.routes("shop")
    await contexts.dispose("shop", call)
    assert sent == ["Target.createBrowserContext", "Target.disposeBrowserContext"]
    assert contexts.known("shop") is None


def test_a_fulfilled_body_is_encoded_once_and_kept() -> None:
    route = _route(action="fulfill", body=b"x" * 1000)
    paused = {"requestId": "interception-1"}
    first, second = answer(route, paused)[1]["body"], answer(route, paused)[1]["body"]
    assert first == base64.b64encode(b"x" * 1000).decode()
    assert second is first  # the same text, not encoded again for the second request


def test_the_gateway_wide_body_bound_is_named() -> None:
    table = Routes()
    table.add(_route(body=b"x" * 10), gateway_held=MAX_GATEWAY_BODY_BYTES - 10)
    with pytest.raises(RouteLimit, match=r"all routes the gateway holds.*"
                                         r"MAX_GATEWAY_BODY_BYTES"):
        table.add(_route(body=b"x"), gateway_held=MAX_GATEWAY_BODY_BYTES)
    assert table.body_bytes == 10


async def _made(contexts: BrowserContexts, name: str, sent: list[str] | None = None) -> Routes:
    """The route table of context ``name``, the context made by a fake browser."""
    async def call(method: str, _params: dict[str, Any]) -> dict[str, Any]:
        if sent is not None:
            sent.append(method)
        return {"browserContextId": f"C-{name}"}

    return await contexts.routes_for(name, call)


@pytest.mark.anyio
async def test_take_prefers_the_tabs_routes_then_the_newest_and_expires_by_times() -> None:
    contexts = BrowserContexts()
    shop = await _made(contexts, "shop")
    tab = Tab(1, "t", "T1", context="shop")
    other = Tab(2, "t", "T2")
    assert not intercepting(tab, contexts)  # no route yet
    in_context = _route("**", action="continue")
    shop.add(in_context)
    assert intercepting(tab, contexts) and not intercepting(other, contexts)
    older, newer = _route("**/api/*", action="fulfill"), _route("**/api/x", times=1)
    tab.routes.add(older)
    tab.routes.add(newer)

    first = take(tab, contexts, {"requestId": "r1", "request": {"url": "http://h/api/x"}})
    assert first.route is newer and first.method == "Fetch.failRequest" and first.expired
    assert tab.routes.routes == [older]  # its one match took it away
    second = take(tab, contexts, {"requestId": "r2", "request": {"url": "http://h/api/x"}})
    assert second.route is older and second.method == "Fetch.fulfillRequest"
    assert not second.expired  # no times: it stays
    third = take(tab, contexts, {"requestId": "r3", "request": {"url": "http://h/page"}})
    assert third.route is in_context and not third.expired  # the context's, after the tab's
    outside = take(other, contexts, {"requestId": "r4", "request": {"url": "http://h/api/x"}})
    assert outside.route is None and outside.method == "Fetch.continueRequest"
    assert (older.hits, newer.hits, in_context.hits) == (1, 1, 1)


@pytest.mark.anyio
async def test_a_context_made_for_routes_goes_with_its_last_route_unless_used() -> None:
    contexts, sent = BrowserContexts(), []  # type: BrowserContexts, list[str]

    async def call(method: str, _params: dict[str, Any]) -> dict[str, Any]:
        sent.append(method)
        return {"browserContextId": "C1"}

    table = await contexts.routes_for("mocks", call)
    assert table is contexts.routes("mocks") and table in contexts.tables()  # the kept one
    table.add(_route())
    assert not await contexts.unrouted("mocks", call, has_tabs=False)  # a route is left
    table.remove()
    assert not await contexts.unrouted("mocks", call, has_tabs=True)   # a tab is in it
    assert await contexts.unrouted("mocks", call, has_tabs=False)
    assert contexts.known("mocks") is None
    assert sent == ["Target.createBrowserContext", "Target.disposeBrowserContext"]

    await contexts.routes_for("used", call)
    await contexts.id_for("used", call)  # a tab opened in it, or a state loaded into it
    assert not await contexts.unrouted("used", call, has_tabs=False)
    assert contexts.known("used") == "C1"
    contexts.forget()  # the connection ended: Chrome disposed of it, its routes with it
    assert not contexts.routes("used") and contexts.tables() == []
