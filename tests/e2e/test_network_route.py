"""``network_route`` on a real Chromium over SSH: a page's fetch fulfilled, blocked, and
continued with a header the server sees; a route that expires after ``times``; routes
listed and removed; a request a route took marked in ``network_requests``; routes kept
across a navigation (the document itself routed) and re-applied after the SSH
connection drops; a context's routes on a tab opened in it later, and not elsewhere; a
context made for routes alone disposed with its last one; refusals that name their
limit (a bad pattern, too many routes, a body too large or from outside the allowed
directories, the gateway-wide bound of bodies) or the action an argument is for.

The page server's ``/api/headers`` echoes the request headers and counts the requests
that reached it: a fulfilled or blocked request must not be counted.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.helpers import call_err, call_ok, eventually, present
from tests.e2e.pages import DevtoolsEnv, js, open_page, page_fixtures
from tests.topology import Topology

pytestmark = pytest.mark.anyio

env, tabs = page_fixtures("route")

_FETCH = ("fetch({path!r}).then(async r => ({{status: r.status, text: await r.text(), "
          "type: r.headers.get('content-type')}}), e => ({{error: String(e)}}))")


async def _fetch(env: DevtoolsEnv, tab: int, path: str) -> dict[str, Any]:
    got: dict[str, Any] = await js(env.client, tab, _FETCH.format(path=path))
    return got


async def _served(env: DevtoolsEnv, tab: int) -> dict[str, Any]:
    """What the real /api/headers said: the headers it got and its count so far."""
    got = await _fetch(env, tab, "/api/headers")
    assert got.get("status") == 200, got
    served: dict[str, Any] = json.loads(got["text"])
    return served


async def _route(env: DevtoolsEnv, **args: Any) -> dict[str, Any]:
    return await call_ok(env.client, "network_route", args)


async def test_fulfilled_blocked_continued_and_expiring(env: DevtoolsEnv,
                                                        tabs: list[int]) -> None:
    site = env.site("h1")
    tab = await open_page(env.client, site, "/", "h1")
    tabs.append(tab)
    before = (await _served(env, tab))["served"]

    mocked = await _route(env, tab=tab, action="fulfill", pattern="**/api/headers",
                          status=201, body='{"mock": true}', times=2,
                          headers={"Content-Type": "application/json"})
    assert mocked["tab"] == tab and mocked["added"] >= 1
    assert mocked["routes"] == [{"id": mocked["added"], "pattern": "**/api/headers",
                                 "action": "fulfill", "times_left": 2, "hits": 0}]
    for _ in range(2):
        assert await _fetch(env, tab, "/api/headers") == {
            "status": 201, "text": '{"mock": true}', "type": "application/json"}
    assert (await _route(env, tab=tab, action="list"))["routes"] == []  # expired
    assert (await _served(env, tab))["served"] == before + 1  # the mocks never reached it

    blocked = await _route(env, tab=tab, action="block", pattern="/data\\.json/")
    failed = await _fetch(env, tab, "/api/data.json")
    assert "Failed to fetch" in failed.get("error", ""), failed

    await _route(env, tab=tab, action="continue", pattern="**/api/headers",
                 headers={"X-Csgw-Route": "added-by-route"})
    seen = await _served(env, tab)
    assert seen["served"] == before + 2
    assert seen["headers"].get("X-Csgw-Route") == "added-by-route", seen

    listed = (await _route(env, tab=tab, action="list"))["routes"]
    assert [(r["action"], r["hits"]) for r in listed] == [("block", 1), ("continue", 1)]
    assert all("times_left" not in r for r in listed)

    requests = (await call_ok(env.client, "network_requests",
                              {"tab": tab, "filter": "/api/"}))["requests"]
    marks = [(r["url"].rsplit("/", 1)[1], r.get("routed")) for r in requests]
    assert marks == [("headers", None), ("headers", "fulfilled"), ("headers", "fulfilled"),
                     ("headers", None), ("data.json", "blocked"), ("headers", "continued")]

    # An answer Chrome refuses fails the request instead of leaving it hanging, and the
    # route says why; the others are still there and still answer.
    unsafe = await _route(env, tab=tab, action="continue", pattern="**/api/headers?unsafe",
                          headers={"Content-Length": "abc"})
    refused = await _fetch(env, tab, "/api/headers?unsafe")
    assert "Failed to fetch" in refused.get("error", ""), refused
    [noted] = [r for r in (await _route(env, tab=tab, action="list"))["routes"]
               if r["id"] == unsafe["added"]]
    assert "Unsafe header: Content-Length" in noted["error"] and noted["hits"] == 1
    assert (await _route(env, tab=tab, action="remove", id=unsafe["added"]))["removed"] == 1

    removed = await _route(env, tab=tab, action="remove", id=blocked["added"])
    assert removed["removed"] == 1 and [r["action"] for r in removed["routes"]] == ["continue"]
    assert (await _fetch(env, tab, "/api/data.json"))["status"] == 200
    assert (await _route(env, tab=tab, action="remove"))["removed"] == 1
    assert "X-Csgw-Route" not in (await _served(env, tab))["headers"]
    last = (await call_ok(env.client, "network_requests", {"tab": tab, "limit": 1}))["requests"]
    assert "routed" not in last[0]


async def test_routes_survive_navigation_and_reconnect(env: DevtoolsEnv, tabs: list[int],
                                                       fault_topology: Topology) -> None:
    site = env.site("h1")
    tab = await open_page(env.client, site, "/", "h1")
    tabs.append(tab)
    await _route(env, tab=tab, action="fulfill", pattern="**/mocked.html",
                 body="<title>from the route</title>", headers={"Content-Type": "text/html"})
    await _route(env, tab=tab, action="fulfill", pattern="**/api/headers", body="mocked")

    nav = await call_ok(env.client, "navigate", {"tab": tab, "url": site.url("/mocked.html"),
                                                 "wait": "load"})
    assert nav["title"] == "from the route"  # the document itself, after a navigation
    assert (await _fetch(env, tab, "/api/headers"))["text"] == "mocked"

    fault_topology.host("h1").kill_ssh_sessions()

    async def mocked_again() -> bool:
        result = await env.client.call_tool("evaluate", {
            "tab": tab, "expression": _FETCH.format(path="/api/headers"), "timeout_s": 5})
        if result.is_error or result.structured_content is None:
            return False  # still reconnecting
        return bool(result.structured_content["value"].get("text") == "mocked")

    await eventually(mocked_again, timeout=30, what="the route to answer again")
    listed = (await _route(env, tab=tab, action="list"))["routes"]
    assert sorted(r["hits"] for r in listed) == [1, 2]


async def test_a_cross_site_frames_requests_are_routed(env: DevtoolsEnv,
                                                        tabs: list[int]) -> None:
    """A cross-site iframe is a session of its own (``Fetch`` is per session): its own
    requests meet the tab's routes too — here its document, then an image in it."""
    site = env.site("h1")
    tab = await open_page(env.client, site, "/", "h1")
    tabs.append(tab)
    before = (await _served(env, tab))["served"]
    await _route(env, tab=tab, action="fulfill", pattern="**/browse/frame-cross.html",
                 body='<title>routed frame</title><img src="/api/headers?from=frame">',
                 headers={"Content-Type": "text/html"})
    await _route(env, tab=tab, action="block", pattern="**/api/headers?from=frame")
    await call_ok(env.client, "navigate", {"tab": tab, "url": site.url("/browse/frames.html"),
                                           "wait": "load"})

    async def marked() -> list[Any] | None:
        found = (await call_ok(env.client, "network_requests", {
            "tab": tab, "filter": "from=frame"}))["requests"]
        return [r.get("routed") for r in found] or None

    assert await eventually(marked, until=present,
                            timeout=10, what="the frame's image request") == [
        "blocked"]
    frame = [r for r in (await call_ok(env.client, "network_requests", {
        "tab": tab, "filter": "frame-cross"}))["requests"]]
    assert [(r["url"].startswith("http://localhost:"), r.get("routed")) for r in frame] == [
        (True, "fulfilled")]
    assert (await _served(env, tab))["served"] == before + 1


async def test_context_routes_reach_its_later_tabs_only(env: DevtoolsEnv,
                                                        tabs: list[int]) -> None:
    site = env.site("h1")
    made = await _route(env, context="routed", target="h1", action="fulfill",
                        pattern="**/api/headers", body="context-mock")
    assert made["context"] == "routed" and len(made["routes"]) == 1
    inside = await call_ok(env.client, "navigate", {"url": site.url("/"), "target": "h1",
                                                    "context": "routed", "wait": "load"})
    tabs.append(inside["tab"])
    outside = await open_page(env.client, site, "/", "h1")
    tabs.append(outside)
    assert (await _fetch(env, inside["tab"], "/api/headers"))["text"] == "context-mock"
    assert (await _fetch(env, outside, "/api/headers"))["status"] == 200
    assert (await _route(env, tab=outside, action="list"))["routes"] == []
    # the tab's own route decides over its context's
    await _route(env, tab=inside["tab"], action="fulfill", pattern="**/api/*", body="tab-mock")
    assert (await _fetch(env, inside["tab"], "/api/headers"))["text"] == "tab-mock"

    await call_ok(env.client, "close_tab", {"tab": inside["tab"]})  # the context goes too
    gone = await _route(env, context="routed", target="h1", action="list")
    assert gone["routes"] == []


async def test_refusals_name_the_limit(env: DevtoolsEnv, tabs: list[int],
                                       tmp_path: Path) -> None:
    site = env.site("h1")
    tab = await open_page(env.client, site, "/", "h1")
    tabs.append(tab)

    async def refused(**args: Any) -> str:
        return await call_err(env.client, "network_route", {"tab": tab, **args})

    assert "not a valid glob or /regex/" in await refused(action="block", pattern="**/{a")
    assert "missing )" in await refused(action="block", pattern="/(a/")
    assert "needs pattern" in await refused(action="block")
    assert "url is for action=continue" in await refused(action="block", pattern="**",
                                                         url="http://x/")
    assert "status is for action=fulfill" in await refused(action="block", pattern="**",
                                                           status=404)
    assert "id is for action=remove" in await refused(action="list", id=1)
    assert "is malformed" in await refused(action="continue", pattern="**", url="http://[x")
    assert "not valid HTTP" in await refused(action="fulfill", pattern="**",
                                             headers={"Bad Name": "x"})
    both = await call_err(env.client, "network_route",
                          {"tab": tab, "context": "x", "action": "list"})
    assert "pass tab or context" in both

    for i in range(32):
        await _route(env, tab=tab, action="block", pattern=f"**/never-{i}")
    full = await refused(action="block", pattern="**/one-more")
    assert f"tab {tab} takes no more routes" in full and "MAX_ROUTES = 32" in full
    assert (await _route(env, tab=tab, action="remove", pattern="**/never-3"))["removed"] == 1
    assert (await _route(env, tab=tab, action="remove"))["removed"] == 31

    outside = await refused(action="fulfill", pattern="**", body_path="/etc/hostname")
    assert "outside the allowed directories" in outside
    temp = Path(tempfile.gettempdir())
    big, small = temp / f"csgw-route-big-{tab}.bin", temp / f"csgw-route-{tab}.json"
    try:
        big.write_bytes(b"x" * (4 * 1024 * 1024 + 1))
        too_big = await refused(action="fulfill", pattern="**", body_path=str(big))
        assert "over the limit of 4,194,304 (MAX_BODY_BYTES)" in too_big
        small.write_text('{"from": "file"}')
        await _route(env, tab=tab, action="fulfill", pattern="**/api/headers",
                     body_path=str(small))
        assert await _fetch(env, tab, "/api/headers") == {
            "status": 200, "text": '{"from": "file"}', "type": "application/json"}
    finally:
        big.unlink(missing_ok=True)
        small.unlink(missing_ok=True)
    assert (await _route(env, tab=tab, action="list"))["routes"][0]["hits"] == 1


async def _contexts(env: DevtoolsEnv) -> set[str]:
    found = await call_ok(env.client, "cdp_command", {
        "target": "h1", "method": "Target.getBrowserContexts"})
    return set(found["result"]["browserContextIds"])


async def test_contexts_made_for_routes_and_the_gateway_wide_bound(env: DevtoolsEnv,
                                                                    tabs: list[int]) -> None:
    """Sixteen 4 MB bodies over four contexts (each full: 16 MB) are all the gateway
    holds; one byte more, in a fifth context, is refused naming the gateway's bound, and
    that context is not left behind. Contexts made for routes alone go with their last
    route; one a tab was opened in stays until the tab is closed."""
    before = await _contexts(env)
    body = Path(tempfile.gettempdir()) / "csgw-route-4mb.bin"
    try:
        body.write_bytes(b"x" * (4 * 1024 * 1024))
        for n in range(16):
            await _route(env, context=f"bulk-{n // 4}", target="h1", action="fulfill",
                         pattern=f"**/bulk-{n}", body_path=str(body))
    finally:
        body.unlink(missing_ok=True)
    assert len(await _contexts(env) - before) == 4
    over = await call_err(env.client, "network_route", {
        "context": "bulk-4", "target": "h1", "action": "fulfill", "pattern": "**", "body": "x"})
    assert "context 'bulk-4' takes no more routes" in over
    assert "over the limit of 67,108,864 (MAX_GATEWAY_BODY_BYTES)" in over
    assert len(await _contexts(env) - before) == 4  # the refused route's context went

    site = env.site("h1")
    inside = await call_ok(env.client, "navigate", {"url": site.url("/"), "target": "h1",
                                                    "context": "bulk-0", "wait": "load"})
    tabs.append(inside["tab"])
    for n in range(4):
        gone = await _route(env, context=f"bulk-{n}", target="h1", action="remove")
        assert gone["removed"] == 4 and gone["routes"] == []
    assert len(await _contexts(env) - before) == 1  # bulk-0 has a tab: it stays
    await call_ok(env.client, "close_tab", {"tab": inside["tab"]})
    assert await _contexts(env) == before
