"""``tabs = "agent"``: on a person's browser the agent sees and touches only its own tabs.

A person's tabs are opened over raw CDP (``OtherClient``) before the gateway attaches and
while it is attached, each with a content marker in its title, URL and console. The
gateway serves h1's browser with ``tabs = "agent"`` and one tab handed to it by title.
Every result a tool gives is searched for the markers; the person's tabs go on running
as without the gateway (a page opened while it is attached is not paused); what reaches
past the agent's tabs (a browser-level ``cdp_command``, the profile's cookies, a
geolocation grant for every site) is refused, saying why and what to do instead.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.e2e.helpers import call_err, call_ok, data_url, eventually, present
from tests.e2e.other_client import OtherClient
from tests.e2e.pages import DevtoolsEnv, browse, devtools_gateway, js
from tests.topology import Topology

pytestmark = pytest.mark.anyio

MARK = "PERSONS-OWN-7f3a"
"""In every page of the person's: its title, its URL and what it logs."""
HANDED = "Handed-over-report"


def _person_page(name: str) -> str:
    return data_url(f"{MARK}-{name}", f"<script>console.log('{MARK}-{name}-log')</script>"
                                       f"<p>{MARK}-{name}-body</p>")


async def _opened(other: OtherClient, url: str) -> str:
    target = await anyio.to_thread.run_sync(other.open, url)
    assert await anyio.to_thread.run_sync(other.evaluate, target, "1 + 1") == [2]
    return target


@pytest.fixture
async def person(topology: Topology) -> AsyncIterator[tuple[OtherClient, list[str]]]:
    """The person's two tabs (mail, bank) and one they hand over, opened before the
    gateway; closed after the test."""
    other = OtherClient(topology.host("h1"))
    opened = [await _opened(other, _person_page(name)) for name in ("mail", "bank")]
    opened.append(await _opened(other, data_url(HANDED, "<p>handed-body</p>")))
    yield other, opened
    for target in opened:
        await anyio.to_thread.run_sync(other.close, target)


@pytest.fixture
async def env(topology: Topology, tmp_path: Path,
              person: tuple[OtherClient, list[str]]) -> AsyncIterator[DevtoolsEnv]:
    async with devtools_gateway(topology, tmp_path, hosts=("h1",), target_options={
            "tabs": "agent", "handed_tabs": [HANDED]}) as gateway:
        yield gateway


async def _listed(env: DevtoolsEnv) -> list[dict[str, Any]]:
    return list((await call_ok(env.client, "list_tabs", {"target": "h1"}))["tabs"])


def _marked(value: Any) -> bool:
    return MARK in json.dumps(value)


async def test_only_the_agents_own_and_handed_tabs_are_seen(
        env: DevtoolsEnv, person: tuple[OtherClient, list[str]]) -> None:
    other, _ = person
    target = next(t for t in (await call_ok(env.client, "list_targets"))["targets"]
                  if t["name"] == "h1")
    assert target["tab_scope"] == "agent"

    handed = await eventually(
        lambda: _handed_tab(env), until=present, timeout=10, what="the handed tab listed")
    listed = await _listed(env)
    assert [t["tab"] for t in listed] == [handed["tab"]], listed
    assert not _marked(listed) and not _marked(target)

    opened = await browse(env.client, env.site("h1").url("/"), target="h1")
    # The person opens a tab while the gateway is attached: it is not paused for a
    # debugger (its script runs at once) and never becomes a tab of the gateway's.
    later = await _opened(other, _person_page("later"))
    try:
        assert await anyio.to_thread.run_sync(
            other.evaluate, later, "document.title") == [f"{MARK}-later"]
        # A popup of the agent's tab is the agent's.
        await js(env.client, opened["tab"], "window.open('about:blank#popup'), 1")
        tabs = await eventually(lambda: _listed(env), until=lambda t: len(t) == 3,
                                timeout=10, what="the popup listed")
        assert not _marked(tabs), tabs
        assert {t["tab"] for t in tabs} >= {opened["tab"], handed["tab"]}
        for tab in tabs:
            for tool, args in (("console_messages", {}), ("network_requests", {}),
                               ("browse_view", {})):
                seen = await call_ok(env.client, tool, {"tab": tab["tab"], **args})
                assert not _marked(seen), (tool, seen)
        downloads = await call_ok(env.client, "downloads", {"target": "h1"})
        assert not _marked(downloads)
    finally:
        await anyio.to_thread.run_sync(other.close, later)


async def _handed_tab(env: DevtoolsEnv) -> dict[str, Any] | None:
    return next((t for t in await _listed(env) if t.get("title") == HANDED), None)


async def test_what_reaches_past_the_agents_tabs_is_refused(env: DevtoolsEnv) -> None:
    opened = await browse(env.client, env.site("h1").url("/"), target="h1")
    tab = opened["tab"]
    for args in ({"target": "h1", "method": "Target.getTargets"},
                 {"tab": tab, "method": "Target.getTargets"},
                 {"tab": tab, "method": "Network.getAllCookies"},
                 {"tab": tab, "method": "Network.getCookies",
                  "params": {"urls": ["https://bank.example/"]}},
                 {"tab": tab, "method": "Storage.getCookies"}):
        error = await call_err(env.client, "cdp_command", args)
        assert "only its own tabs" in error and "tab=<id>" in error, (args, error)
        assert not _marked(error)
    # A command on the agent's own page works.
    done = await call_ok(env.client, "cdp_command", {
        "tab": tab, "method": "Runtime.evaluate", "params": {"expression": "6 * 7",
                                                             "returnByValue": True}})
    assert done["result"]["result"]["value"] == 42

    for tool, args in (("storage_state", {"action": "clear", "target": "h1"}),
                       ("storage_state", {"action": "clear", "tab": tab}),
                       ("emulate", {"tab": tab, "geolocation": {
                           "latitude": 1.0, "longitude": 2.0}})):
        error = await call_err(env.client, tool, args)
        assert "person's own profile" in error and "isolated context" in error, error
    # In a context of its own the agent's state is its own to clear.
    own = await call_ok(env.client, "new_tab", {"target": "h1", "context": "agent-own"})
    cleared = await call_ok(env.client, "storage_state", {"action": "clear",
                                                          "tab": own["tab"]})
    assert cleared["cookies"] == 0
