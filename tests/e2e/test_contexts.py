"""Isolated browser contexts: ``new_tab``/``navigate`` with ``context="NAME"``.

Two contexts on h1's browser: a cookie and localStorage set in one are absent in the
other and in the default context; a name is reused while it has tabs, disposed with its
last tab, and gone with the gateway — and a context the gateway did not make is left.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from mcp import Client

from tests.e2e.helpers import call_err, call_ok, open_gateway
from tests.e2e.pages import PageSite, serve_pages
from tests.topology import Topology

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def site(topology: Topology) -> Iterator[PageSite]:
    with serve_pages(topology.host("h1")) as running:
        yield running


async def _eval(client: Client, tab: int, expression: str) -> Any:
    return (await call_ok(client, "evaluate", {"tab": tab, "expression": expression}))["value"]


async def _contexts(client: Client) -> set[str]:
    result = await call_ok(client, "cdp_command", {"method": "Target.getBrowserContexts"})
    return set(result["result"]["browserContextIds"])


async def test_contexts_keep_cookies_and_storage_apart(topology: Topology,
                                                       site: PageSite) -> None:
    env = topology.client_env() | {"SSH_PROXY_TO": "h1"}
    url = site.url("/")
    async with open_gateway(env) as client:
        before = await _contexts(client)
        alice = (await call_ok(client, "new_tab", {"url": url, "context": "alice"}))["tab"]
        bob = (await call_ok(client, "navigate", {"url": url, "context": "bob"}))["tab"]
        plain = (await call_ok(client, "navigate", {"url": url}))["tab"]
        await call_ok(client, "navigate", {"tab": alice, "url": url})  # loaded, for cookies
        await _eval(client, alice, "document.cookie = 'who=alice; path=/'; "
                                   "localStorage.setItem('who', 'alice'); 1")

        assert await _eval(client, alice, "document.cookie") == "who=alice"
        for other in (bob, plain):
            assert await _eval(client, other, "document.cookie") == ""
            assert await _eval(client, other, "localStorage.getItem('who')") is None
        again = (await call_ok(client, "navigate", {"url": url, "context": "alice"}))["tab"]
        assert await _eval(client, again, "document.cookie") == "who=alice"  # same context

        listing = {t["tab"]: t.get("context") for t in (await call_ok(client, "list_tabs"))["tabs"]}
        assert (listing[alice], listing[again], listing[bob], listing[plain]) == (
            "alice", "alice", "bob", None)
        made = await _contexts(client) - before
        assert len(made) == 2

        refused = await call_err(client, "navigate", {"tab": plain, "url": url,
                                                      "context": "bob"})
        assert "context applies to a new tab" in refused

        for tab in (alice, again):  # alice's last tab closed: her context goes
            await call_ok(client, "close_tab", {"tab": tab})
        assert len(await _contexts(client) - before) == 1
        fresh = (await call_ok(client, "navigate", {"url": url, "context": "alice"}))["tab"]
        assert await _eval(client, fresh, "document.cookie") == ""
        await call_ok(client, "close_tab", {"tab": plain})

        # A context made by someone else (here through cdp_command) is never disposed.
        foreign = (await call_ok(client, "cdp_command", {
            "method": "Target.createBrowserContext",
            "params": {"disposeOnDetach": False}}))["result"]["browserContextId"]
        await call_ok(client, "cdp_command", {"method": "Target.createTarget", "params": {
            "url": "about:blank", "browserContextId": foreign}})
        [theirs] = [t for t in (await call_ok(client, "list_tabs"))["tabs"]
                    if t["tab"] not in (bob, fresh) and t["url"] == "about:blank"
                    and t.get("context") is None][-1:]
        await call_ok(client, "close_tab", {"tab": theirs["tab"]})
        assert foreign in await _contexts(client)
        await call_ok(client, "cdp_command", {"method": "Target.disposeBrowserContext",
                                              "params": {"browserContextId": foreign}})
    async with open_gateway(env) as client:  # the gateway went: so did its contexts
        assert await _contexts(client) == before
