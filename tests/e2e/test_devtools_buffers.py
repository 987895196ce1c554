"""Per-tab ring buffers: the oldest entries go first, and the answer says how many went.

The gateway here is configured with small buffers (``console_buffer`` /
``network_buffer`` in the target's table) so a page overflows them quickly:
``/many.html?n=N`` logs N lines, ``/fetches.html?n=N`` makes N requests one after the
other (every page names an inline favicon, so the browser adds no request of its own).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import AsyncIterator
from typing import Any

import pytest

from gateway.tabs.console_flood import FLOOD_RATE
from tests.e2e.helpers import call_ok, eventually, present
from tests.e2e.load_mix import flood_js
from tests.e2e.pages import DevtoolsEnv, devtools_gateway, dump, open_page, settle
from tests.topology import Topology

pytestmark = pytest.mark.anyio

CONSOLE_BUFFER = 50
NETWORK_BUFFER = 20
ISO_UTC = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


@pytest.fixture(scope="module")
async def env(
    topology: Topology, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[DevtoolsEnv]:
    async with devtools_gateway(
        topology, tmp_path_factory.mktemp("devtools-buffers"), hosts=("h1",),
        target_options={"console_buffer": CONSOLE_BUFFER, "network_buffer": NETWORK_BUFFER},
    ) as e:
        yield e


def dropped(result: dict[str, Any]) -> int:
    """The dropped count a listing reports (the top-level field naming it; none means 0)."""
    counts = [v for k, v in result.items() if "dropped" in k.lower() and isinstance(v, int)
              and not isinstance(v, bool)]
    assert len(counts) <= 1, f"one dropped count expected in {dump(result)[:600]}"
    return counts[0] if counts else 0


async def test_console_drops_the_oldest_and_says_how_many(env: DevtoolsEnv) -> None:
    n = 3 * CONSOLE_BUFFER + 7
    tab = await open_page(env.client, env.site("h1"), f"/many.html?n={n}", "h1")
    try:
        async def full() -> dict[str, Any] | None:
            result = await call_ok(env.client, "console_messages",
                                   {"tab": tab, "limit": CONSOLE_BUFFER})
            last = result["messages"][-1]["text"] if result["messages"] else ""
            return result if last == f"csgw-many {n - 1}" else None

        result = await eventually(full, until=present, timeout=20, what="the last message")

        texts = [m["text"] for m in result["messages"]]
        assert texts == [f"csgw-many {i}" for i in range(n - CONSOLE_BUFFER, n)]
        assert dropped(result) == n - CONSOLE_BUFFER
    finally:
        await call_ok(env.client, "close_tab", {"tab": tab})


async def test_network_drops_the_oldest_and_says_how_many(env: DevtoolsEnv) -> None:
    n = 2 * NETWORK_BUFFER + 5
    site = env.site("h1")
    tab = await open_page(env.client, site, f"/fetches.html?n={n}", "h1")
    try:
        assert await settle(env.client, tab) == n
        last_url = site.url(f"/api/data.json?i={n - 1}")

        async def full() -> dict[str, Any] | None:
            result = await call_ok(env.client, "network_requests",
                                   {"tab": tab, "limit": NETWORK_BUFFER})
            done = [r for r in result["requests"] if r["url"] == last_url and r["status"]]
            return result if done else None

        result = await eventually(full, until=present, timeout=20, what="the last request")

        urls = [r["url"] for r in result["requests"]]
        assert urls == [site.url(f"/api/data.json?i={i}") for i in range(n - NETWORK_BUFFER, n)]
        assert site.url(f"/fetches.html?n={n}") not in urls, "the document went first"
        assert dropped(result) == n + 1 - NETWORK_BUFFER  # n fetches + the document
    finally:
        await call_ok(env.client, "close_tab", {"tab": tab})


async def test_nothing_dropped_is_reported_as_zero(env: DevtoolsEnv) -> None:
    tab = await open_page(env.client, env.site("h1"), "/many.html?n=3", "h1")
    try:
        result = await call_ok(env.client, "console_messages", {"tab": tab})
        assert [m["text"] for m in result["messages"]] == [f"csgw-many {i}" for i in range(3)]
        assert dropped(result) == 0
        requests = await call_ok(env.client, "network_requests", {"tab": tab})
        assert dropped(requests) == 0
    finally:
        await call_ok(env.client, "close_tab", {"tab": tab})


async def test_a_flooded_console_is_sampled_counts_what_it_saw_drop_and_keeps_the_newest(
    env: DevtoolsEnv,
) -> None:
    """10,000 messages a second for two seconds, far beyond the ring and beyond what the
    gateway reads one by one (``FLOOD_RATE``): the tab's console is sampled at the source
    (``gateway.tabs.console_flood``). The newest messages are there whole and in
    order, none counted twice; every message seen and pushed out is counted, and the note
    says that count is a lower bound; the tab still answers."""
    tab = await open_page(env.client, env.site("h1"), "/many.html?n=0", "h1")
    try:
        logged = await _flood_until_done(env, tab, 2.0)
        assert logged > 2 * FLOOD_RATE, f"the page logged only {logged} messages"
        result = await _newest_seen(env, tab, logged)
        messages, last_id = result["messages"], result["last_id"]
        numbers = [int(m["text"].removeprefix("flood ")) for m in messages]
        assert len(messages) == CONSOLE_BUFFER and numbers == sorted(set(numbers)), numbers
        assert [m["id"] for m in messages] == list(range(last_id - CONSOLE_BUFFER + 1,
                                                         last_id + 1))
        assert last_id <= logged, "a message was counted twice"
        assert dropped(result) == last_id - CONSOLE_BUFFER
        assert result["note"].startswith(f"at least {last_id - CONSOLE_BUFFER} older "
                                         "messages were dropped"), result["note"]
        assert "did not see every message" in result["note"]
        assert {(m["level"], m["source"]) for m in messages} == {("info", "console")}
        assert all(ISO_UTC.match(m["time"]) for m in messages), messages[-1]
        by_level = await call_ok(env.client, "console_messages",
                                 {"tab": tab, "level": "info", "since": last_id - 3})
        assert [m["text"] for m in by_level["messages"]] == [
            f"flood {n}" for n in numbers[-3:]]
        assert (await call_ok(env.client, "evaluate",
                              {"tab": tab, "expression": "6 * 7"}))["value"] == 42
    finally:
        await call_ok(env.client, "close_tab", {"tab": tab})


async def test_during_a_flood_the_busy_tab_and_its_neighbour_answer_and_drops_count(
    env: DevtoolsEnv,
) -> None:
    """While one tab floods its console: another tab of the same browser and the busy tab
    itself answer their calls, the busy tab's console counts what it dropped (at least),
    and its own events still come — a dialog opens and is answered, a navigation lands."""
    site = env.site("h1")
    busy = await open_page(env.client, site, "/many.html?n=0", "h1")
    quiet = await open_page(env.client, site, "/many.html?n=0", "h1")
    try:
        started = await call_ok(env.client, "evaluate",
                                {"tab": busy, "expression": flood_js(4.0, 10_000)})
        assert started["value"] == "started"
        for n in itertools.count():  # until the busy console says it samples, or the end
            neighbour = await call_ok(env.client, "evaluate",
                                      {"tab": quiet, "expression": f"{n} * 2"})
            assert neighbour["value"] == n * 2
            done = (await call_ok(env.client, "evaluate",
                                  {"tab": busy, "expression": "window.floodDone"}))["value"]
            console = await call_ok(env.client, "console_messages", {"tab": busy, "limit": 1})
            if done or "did not see every message" in console.get("note", ""):
                break
        assert not done, "the flood ended before the busy tab's console was sampled"
        assert dropped(console) > 0 and console["note"].startswith("at least"), console

        await call_ok(env.client, "evaluate", {
            "tab": busy, "expression": "setTimeout(() => alert('csgw-flood-alert')); 1"})

        async def answered() -> bool:
            reply = await env.client.call_tool("handle_dialog", {"tab": busy, "accept": True})
            return not reply.is_error

        await eventually(answered, timeout=30, what="the busy tab's alert to be answered")
        navigated = await open_page(env.client, site, "/many.html?n=3", "h1", tab=busy)
        assert navigated == busy

        async def new_page_logged() -> bool:
            listing = await call_ok(env.client, "console_messages", {"tab": busy})
            return [m["text"] for m in listing["messages"][-3:]] == [
                f"csgw-many {i}" for i in range(3)]

        await eventually(new_page_logged, timeout=30, what="the new page's messages")
        assert (await call_ok(env.client, "evaluate",
                              {"tab": busy, "expression": "6 * 7"}))["value"] == 42
    finally:
        for tab in (busy, quiet):
            await call_ok(env.client, "close_tab", {"tab": tab})


async def _flood_until_done(env: DevtoolsEnv, tab: int, seconds: float) -> int:
    """Flood ``tab``'s console at 10,000 messages a second for ``seconds``; how many it
    logged."""
    started = await call_ok(env.client, "evaluate",
                            {"tab": tab, "expression": flood_js(seconds, 10_000)})
    assert started["value"] == "started"

    async def flood_over() -> int | None:
        state = await call_ok(env.client, "evaluate", {
            "tab": tab, "expression": "[window.floodDone, window.floodLogged]"})
        done, logged = state["value"]
        return int(logged) if done else None

    return int(await eventually(flood_over, until=present, timeout=60,
                                what="the page's flood to end"))


async def _newest_seen(env: DevtoolsEnv, tab: int, logged: int) -> dict[str, Any]:
    """The console listing once the flood's last message is in it."""

    async def newest() -> dict[str, Any] | None:
        result = await call_ok(env.client, "console_messages",
                               {"tab": tab, "limit": CONSOLE_BUFFER})
        texts = [m["text"] for m in result["messages"]]
        return result if texts[-1:] == [f"flood {logged}"] else None

    return dict(await eventually(newest, until=present, timeout=60,
                                 what=f"the flood's last message (flood {logged})"))
