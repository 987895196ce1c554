"""A targets file with two browsers on two hosts: ``a`` on h1 and ``b`` on h2.

Every tool runs on both targets at the same time; tab ids are one process-wide
sequence, so a tab id alone says which browser it means, and naming the wrong target
for a tab is refused instead of acting on another page.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest
from mcp import Client

from tests.e2e.helpers import (
    ERROR_BOUND,
    call_err,
    call_ok,
    data_url,
    open_gateway,
    pages_agree,
    remote_pages,
    wait_for_targets,
    write_targets,
)
from tests.topology import Topology

pytestmark = pytest.mark.anyio

HOSTS = {"a": "h1", "b": "h2"}


@pytest.fixture(scope="module")
async def gw(
    topology: Topology, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[Client]:
    path = write_targets(
        tmp_path_factory.mktemp("pair") / "targets.toml",
        {name: {"ssh": host} for name, host in HOSTS.items()},
    )
    async with open_gateway(topology.client_env(), ["--config", str(path)]) as client:
        await wait_for_targets(client, {"a": "up", "b": "up"})
        yield client


async def _every_tool(gw: Client, name: str, marker: str) -> dict[str, Any]:
    """Each tool once on target ``name``; returns every result by tool."""
    out: dict[str, Any] = {}
    out["ping"] = await call_ok(gw, "ping", {"target": name})
    out["new_tab"] = await call_ok(
        gw, "new_tab", {"target": name, "url": data_url(f"{marker}-fresh")}
    )
    tab = out["new_tab"]["tab"]
    out["navigate"] = await call_ok(
        gw, "navigate", {"tab": tab, "url": data_url(marker, f"<p>{marker}</p>")}
    )
    out["navigate_new"] = await call_ok(
        gw, "navigate", {"target": name, "url": data_url(f"{marker}-second")}
    )
    out["evaluate"] = await call_ok(
        gw, "evaluate", {"tab": tab, "expression": "document.querySelector('p').textContent"}
    )
    out["cdp_browser"] = await call_ok(
        gw, "cdp_command", {"target": name, "method": "Target.getTargets"}
    )
    out["cdp_tab"] = await call_ok(
        gw, "cdp_command",
        {"tab": tab, "method": "Runtime.evaluate",
         "params": {"expression": "document.title", "returnByValue": True}},
    )
    out["list_tabs"] = await call_ok(gw, "list_tabs", {"target": name})
    out["close_tab"] = await call_ok(gw, "close_tab", {"tab": out["navigate_new"]["tab"]})
    out["list_targets"] = await call_ok(gw, "list_targets")
    return out


async def test_every_tool_on_both_targets_at_once(gw: Client, topology: Topology) -> None:
    run = uuid.uuid4().hex[:8]
    markers = {name: f"{name}-{run}" for name in HOSTS}
    results: dict[str, dict[str, Any]] = {}

    async def exercise(name: str) -> None:
        results[name] = await _every_tool(gw, name, markers[name])

    async with anyio.create_task_group() as tg:
        for name in HOSTS:
            tg.start_soon(exercise, name)

    for name, out in results.items():
        marker = markers[name]
        tab = out["new_tab"]["tab"]
        assert out["ping"]["connected"] is True and out["ping"]["target"] == name
        for tool in ("new_tab", "navigate", "navigate_new", "evaluate", "cdp_browser", "cdp_tab"):
            assert out[tool]["target"] == name, (tool, out[tool])
        assert out["navigate"]["tab"] == tab
        assert out["navigate"]["title"] == marker
        assert out["navigate_new"]["tab"] != tab
        assert out["navigate_new"]["title"] == f"{marker}-second"
        assert out["evaluate"]["value"] == marker
        assert out["cdp_tab"]["tab"] == tab
        assert out["cdp_tab"]["result"]["result"]["value"] == marker
        urls = [i["url"] for i in out["cdp_browser"]["result"]["targetInfos"]
                if i["type"] == "page"]
        assert data_url(marker, f"<p>{marker}</p>") in urls
        listed = out["list_tabs"]["tabs"]
        assert {t["target"] for t in listed} == {name}
        assert tab in [t["tab"] for t in listed]
        assert out["close_tab"] == {"tab": out["navigate_new"]["tab"], "closed": True}
        assert {t["name"]: t["state"] for t in out["list_targets"]["targets"]} == {
            "a": "up", "b": "up"}

    # Tab ids are unique across the two targets.
    ids = {name: {out["new_tab"]["tab"], out["navigate_new"]["tab"]}
           for name, out in results.items()}
    assert not ids["a"] & ids["b"]

    # And each page went to its own browser, not the other one.
    for name, host in HOSTS.items():
        other = "b" if name == "a" else "a"
        urls = [p["url"] for p in remote_pages(topology.host(host))]
        assert data_url(markers[name], f"<p>{markers[name]}</p>") in urls
        assert data_url(markers[other], f"<p>{markers[other]}</p>") not in urls
        await call_ok(gw, "close_tab", {"tab": results[name]["new_tab"]["tab"]})


async def test_many_concurrent_calls_across_targets(gw: Client) -> None:
    tabs = {name: (await call_ok(gw, "new_tab", {"target": name}))["tab"] for name in HOSTS}
    values: dict[tuple[str, int], Any] = {}

    async def evaluate(name: str, i: int) -> None:
        result = await call_ok(
            gw, "evaluate", {"tab": tabs[name], "expression": f"'{name}' + {i}"}
        )
        values[(name, i)] = (result["target"], result["value"])

    async with anyio.create_task_group() as tg:
        for i in range(20):
            for name in HOSTS:
                tg.start_soon(evaluate, name, i)

    assert values == {(name, i): (name, f"{name}{i}") for name in HOSTS for i in range(20)}
    for tab in tabs.values():
        await call_ok(gw, "close_tab", {"tab": tab})


async def test_tab_ids_are_unique_across_targets(gw: Client, topology: Topology) -> None:
    opened = [
        (await call_ok(gw, "new_tab", {"target": name}))["tab"] for name in ("a", "b", "a", "b")
    ]
    try:
        assert opened == sorted(opened) and len(set(opened)) == 4
        listing = await call_ok(gw, "list_tabs")
        assert "unavailable" not in listing  # left out while every target answers
        ids = [t["tab"] for t in listing["tabs"]]
        assert len(ids) == len(set(ids))
        by_target = {name: [t for t in listing["tabs"] if t["target"] == name] for name in HOSTS}
        assert sorted(t["tab"] for t in listing["tabs"]) == sorted(
            t["tab"] for tabs in by_target.values() for t in tabs
        )
        for name, host in HOSTS.items():
            await pages_agree(gw, name, topology.host(host))
    finally:
        for tab in opened:
            await call_ok(gw, "close_tab", {"tab": tab})


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("new_tab", {}),
        ("ping", {}),
        ("navigate", {"url": data_url("ambiguous")}),
        ("cdp_command", {"method": "Browser.getVersion"}),
    ],
)
async def test_target_is_required_when_ambiguous(
    gw: Client, tool: str, args: dict[str, Any]
) -> None:
    error = await call_err(gw, tool, args, timeout=ERROR_BOUND)
    assert "several targets are configured (a, b); pass target=<name>" in error


async def test_list_tabs_without_target_lists_both(gw: Client) -> None:
    listing = await call_ok(gw, "list_tabs")
    assert {t["target"] for t in listing["tabs"]} == {"a", "b"}


async def test_tab_implies_its_target(gw: Client, topology: Topology) -> None:
    tab = (await call_ok(gw, "new_tab", {"target": "b"}))["tab"]
    url = data_url("implied-b")

    nav = await call_ok(gw, "navigate", {"tab": tab, "url": url})
    evaluated = await call_ok(gw, "evaluate", {"tab": tab, "expression": "document.title"})
    raw = await call_ok(gw, "cdp_command", {"tab": tab, "method": "Page.getNavigationHistory"})

    assert (nav["target"], nav["tab"]) == ("b", tab)
    assert (evaluated["target"], evaluated["value"]) == ("b", "implied-b")
    assert (raw["target"], raw["tab"]) == ("b", tab)
    assert raw["result"]["entries"][-1]["url"] == url
    assert url in [p["url"] for p in remote_pages(topology.host("h2"))]
    assert url not in [p["url"] for p in remote_pages(topology.host("h1"))]

    assert await call_ok(gw, "close_tab", {"tab": tab}) == {"tab": tab, "closed": True}
    assert await _gone(topology, "h2", url)  # close_tab answers once Chrome destroyed it


async def _gone(topology: Topology, host: str, url: str) -> bool:
    return url not in [p["url"] for p in remote_pages(topology.host(host))]


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("navigate", {"url": data_url("moved")}),
        ("cdp_command", {"method": "Runtime.evaluate",
                         "params": {"expression": "document.title = 'touched'"}}),
    ],
)
async def test_tab_of_one_target_refused_on_the_other(
    gw: Client, tool: str, args: dict[str, Any]
) -> None:
    url = data_url("owned-by-a")
    tab = (await call_ok(gw, "navigate", {"target": "a", "url": url}))["tab"]
    try:
        error = await call_err(gw, tool, {**args, "tab": tab, "target": "b"}, timeout=ERROR_BOUND)
        assert f"tab {tab} belongs to target 'a', not 'b'; omit target or pass target='a'" in error
        # Nothing happened to the tab: still open, same page, same title.
        state = await call_ok(
            gw, "evaluate", {"tab": tab, "expression": "[location.href, document.title]"}
        )
        assert state["value"] == [url, "owned-by-a"]
    finally:
        await call_ok(gw, "close_tab", {"tab": tab})


async def test_unknown_target_with_a_tab_names_the_targets(gw: Client) -> None:
    tab = (await call_ok(gw, "new_tab", {"target": "a"}))["tab"]
    try:
        error = await call_err(
            gw, "navigate", {"tab": tab, "target": "c", "url": data_url("x")},
            timeout=ERROR_BOUND)
        assert "unknown target 'c'; configured targets: a, b" in error
    finally:
        await call_ok(gw, "close_tab", {"tab": tab})


@pytest.mark.parametrize("tool", ["evaluate", "close_tab"])
async def test_a_tool_whose_tab_is_required_takes_no_target(gw: Client, tool: str) -> None:
    """A tab id names its target already (ids are unique across targets): a tool that
    needs a tab does not take ``target`` too, and a call that passes one hears so
    before anything happens to the tab."""
    url = data_url("owned-by-a")
    tab = (await call_ok(gw, "navigate", {"target": "a", "url": url}))["tab"]
    try:
        error = await call_err(gw, tool, {"tab": tab, "target": "a", "expression": "1"}
                               if tool == "evaluate" else {"tab": tab, "target": "a"},
                               timeout=ERROR_BOUND)
        assert error.startswith(f"unknown argument for {tool}: 'target' (a tab id names its "
                                "target: leave target out)"), error
        assert (await call_ok(gw, "evaluate", {"tab": tab, "expression": "location.href"})
                )["value"] == url
    finally:
        await call_ok(gw, "close_tab", {"tab": tab})

