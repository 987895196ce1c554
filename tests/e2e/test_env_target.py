"""One target from the environment alone: ``SSH_PROXY_TO=h1`` and nothing else.

This is how most users start: the gateway must name the target ``default``, reach
Chromium on h1 through SSH (it listens on h1's loopback only), find it through the
DevToolsActivePort file in h1's default profile, and serve every tab tool on it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from mcp import Client

from tests.e2e.helpers import (
    call_err,
    call_ok,
    data_url,
    eventually,
    open_gateway,
    pages_agree,
    remote_active_port,
    remote_pages,
    targets_by_name,
    wait_for_targets,
)
from tests.topology import Topology

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
async def gw(topology: Topology) -> AsyncIterator[Client]:
    async with open_gateway(topology.client_env() | {"SSH_PROXY_TO": "h1"}) as client:
        await wait_for_targets(client, {"default": "up"})
        yield client


async def test_list_targets_shows_default_up_over_ssh(gw: Client, topology: Topology) -> None:
    targets = await targets_by_name(gw)

    assert list(targets) == ["default"]
    default = targets["default"]
    assert default["transport"] == "ssh"
    assert default["host"] == "h1"
    assert default["state"] == "up"
    assert "error" not in default
    # The browser the gateway talks to is h1's own: same version, same DevTools endpoint.
    h1 = topology.host("h1")
    version = h1.devtools_version()["Browser"].split("/", 1)[1]
    assert default["browser"] == f"Chrome/{version}"
    port, path = remote_active_port(h1)
    assert default["cdp_endpoint"] == (
        f"127.0.0.1:{port}{path} (DevToolsActivePort in .config/chromium)"
    )
    assert default["tabs"] >= 1


async def test_list_tabs_matches_the_remote_browser(gw: Client, topology: Topology) -> None:
    url = data_url("env-list-tabs")
    opened = await call_ok(gw, "new_tab", {"url": url})

    # Every page h1's Chromium has is listed, and nothing else.
    tabs = await pages_agree(gw, "default", topology.host("h1"))
    assert opened["tab"] in [t["tab"] for t in tabs if t["url"] == url]
    ids = [t["tab"] for t in tabs]
    assert len(ids) == len(set(ids))
    assert {t["target"] for t in tabs} == {"default"}
    listing = await call_ok(gw, "list_tabs")
    assert "unavailable" not in listing
    await call_ok(gw, "close_tab", {"tab": opened["tab"]})


async def test_navigate_opens_a_tab_and_evaluate_reads_it(gw: Client, topology: Topology) -> None:
    url = data_url("Env-page", "<p id=p>hello-from-h1</p>")

    nav = await call_ok(gw, "navigate", {"url": url})

    assert nav["target"] == "default"
    assert nav["title"] == "Env-page"
    assert nav["url"] == url
    expression = "document.getElementById('p').textContent"
    text = await call_ok(gw, "evaluate", {"tab": nav["tab"], "expression": expression})
    assert text == {
        "tab": nav["tab"], "target": "default", "type": "string", "value": "hello-from-h1",
    }
    # The page really is in h1's browser.
    assert url in [p["url"] for p in remote_pages(topology.host("h1"))]

    # Navigating the same tab again keeps its id and updates what list_tabs shows.
    url2 = data_url("Env-page-2", "<p>second</p>")
    nav2 = await call_ok(gw, "navigate", {"url": url2, "tab": nav["tab"]})
    assert (nav2["tab"], nav2["title"], nav2["url"]) == (nav["tab"], "Env-page-2", url2)
    listing = await call_ok(gw, "list_tabs")
    entry = next(t for t in listing["tabs"] if t["tab"] == nav["tab"])
    assert (entry["title"], entry["url"]) == ("Env-page-2", url2)
    back = await call_ok(gw, "evaluate", {"tab": nav["tab"], "expression": "document.title"})
    assert back["value"] == "Env-page-2"
    await call_ok(gw, "close_tab", {"tab": nav["tab"]})


@pytest.fixture(scope="module")
async def values_tab(gw: Client) -> AsyncIterator[int]:
    nav = await call_ok(gw, "navigate", {"url": data_url("values", "<p id=p class=k>v</p>")})
    yield nav["tab"]
    await call_ok(gw, "close_tab", {"tab": nav["tab"]})


@pytest.mark.parametrize(
    ("expression", "kind", "value"),
    [
        ("6 * 7", "number", 42),
        ("'a' + 'b'", "string", "ab"),
        ("true", "boolean", True),
        ("null", "object/null", None),
        ("undefined", "undefined", None),
        ("[1, 'x', null, true]", "object/array", [1, "x", None, True]),
        ("({a: {b: [1, 2]}, c: 'd'})", "object", {"a": {"b": [1, 2]}, "c": "d"}),
        ("(() => { const o = {name: 'o'}; o.self = o; return o; })()", "object",
         {"name": "o", "self": "[Circular]"}),
        ("document.getElementById('p')", "object/node", "<p#p.k>"),
        ("2n ** 70n", "bigint", "1180591620717411303424n"),
        ("NaN", "number", "NaN"),
        ("-Infinity", "number", "-Infinity"),
        ("new Map([['k', 1]])", "object/map", {"k": 1}),
        ("new Date(0)", "object/date", "1970-01-01T00:00:00.000Z"),
        ("{ let x = 20; x + 1 }", "number", 21),
        ("await Promise.resolve('awaited')", "string", "awaited"),
    ],
)
async def test_evaluate_returns_json_values(
    gw: Client, values_tab: int, expression: str, kind: str, value: object
) -> None:
    result = await call_ok(gw, "evaluate", {"tab": values_tab, "expression": expression})
    assert (result["type"], result["value"]) == (kind, value)
    assert "truncated" not in result


async def test_ping_reports_the_browser(gw: Client) -> None:
    ping = await call_ok(gw, "ping")
    targets = await targets_by_name(gw)

    assert ping["target"] == "default"
    assert ping["connected"] is True
    assert "error" not in ping  # a field that does not apply is left out
    assert ping["browser"] == targets["default"]["browser"]
    assert ping["protocol"] == "1.3"
    assert ping["cdp_endpoint"] == targets["default"]["cdp_endpoint"]
    assert isinstance(ping["latency_ms"], float) and ping["latency_ms"] >= 0


async def test_the_only_target_needs_no_name(gw: Client) -> None:
    implicit = await call_ok(gw, "new_tab")
    explicit = await call_ok(gw, "new_tab", {"target": "default"})
    try:
        assert implicit["target"] == explicit["target"] == "default"
        assert implicit["url"] == "about:blank"
        assert explicit["tab"] > implicit["tab"]
        error = await call_err(gw, "new_tab", {"target": "h1"})
        assert "unknown target 'h1'; configured targets: default" in error
    finally:
        for tab in (implicit["tab"], explicit["tab"]):
            await call_ok(gw, "close_tab", {"tab": tab})


async def test_close_tab_closes_the_remote_page(gw: Client, topology: Topology) -> None:
    url = data_url("env-close-me")
    tab = (await call_ok(gw, "new_tab", {"url": url}))["tab"]
    h1 = topology.host("h1")
    await eventually(
        lambda: _has_page(h1, url), timeout=10, what="the new page on h1"
    )

    assert await call_ok(gw, "close_tab", {"tab": tab}) == {"tab": tab, "closed": True}

    assert not await _has_page(h1, url)  # close_tab answers once Chrome destroyed it
    listing = await call_ok(gw, "list_tabs")
    assert tab not in [t["tab"] for t in listing["tabs"]]
    error = await call_err(gw, "evaluate", {"tab": tab, "expression": "1"})
    # "was closed by close_tab", or just "was closed" when Chrome's event came first
    assert f"tab {tab} was closed" in error and "call list_tabs" in error


async def _has_page(host: Any, url: str) -> bool:
    return url in [p["url"] for p in remote_pages(host)]


