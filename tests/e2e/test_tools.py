"""The tools in detail, on one SSH target (``SSH_PROXY_TO=h2``).

``cdp_command`` at browser level and on a tab, results that are too big for a model's
context (cut and marked) or that the caller asked to get whole, promises, load waits,
and how calls on tabs overlap: different tabs run side by side, one tab's calls
queue behind each other.
"""

from __future__ import annotations

import json
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
    eventually,
    open_gateway,
    remote_pages,
    wait_for_targets,
)
from tests.topology import Topology

pytestmark = pytest.mark.anyio

FIVE_MB = 5 * 1024 * 1024
DEFAULT_MAX_CHARS = 100_000


@pytest.fixture(scope="module")
async def gw(topology: Topology) -> AsyncIterator[Client]:
    async with open_gateway(topology.client_env() | {"SSH_PROXY_TO": "h2"}) as client:
        await wait_for_targets(client, {"default": "up"})
        yield client


@pytest.fixture
async def tab(gw: Client) -> AsyncIterator[int]:
    nav = await call_ok(gw, "navigate", {"url": data_url("tools", "<p id=p>tools</p>")})
    yield nav["tab"]
    await call_ok(gw, "close_tab", {"tab": nav["tab"]})


# ------------------------------------------------------------------- cdp_command


async def test_cdp_browser_get_version(gw: Client, topology: Topology) -> None:
    result = await call_ok(gw, "cdp_command", {"method": "Browser.getVersion"})

    assert (result["target"], result["tab"], result["method"]) == (
        "default", None, "Browser.getVersion")
    assert "truncated" not in result
    version = result["result"]
    assert version["protocolVersion"] == "1.3"
    remote = topology.host("h2").devtools_version()
    assert version["product"] == "Chrome/" + remote["Browser"].split("/", 1)[1]
    assert version["userAgent"] == remote["User-Agent"]


async def test_cdp_browser_get_targets(gw: Client, tab: int, topology: Topology) -> None:
    result = await call_ok(gw, "cdp_command", {"method": "Target.getTargets"})

    infos = result["result"]["targetInfos"]
    pages = [i for i in infos if i["type"] == "page"]
    assert data_url("tools", "<p id=p>tools</p>") in [p["url"] for p in pages]
    # The same browser h2 runs: its own /json/list knows the page's targetId.
    mine = next(p for p in pages if p["url"] == data_url("tools", "<p id=p>tools</p>"))
    assert mine["targetId"] in [p["id"] for p in remote_pages(topology.host("h2"))]


async def test_cdp_tab_runtime_evaluate(gw: Client, tab: int) -> None:
    result = await call_ok(gw, "cdp_command", {
        "tab": tab, "method": "Runtime.evaluate",
        "params": {"expression": "document.getElementById('p').textContent + 6 * 7",
                   "returnByValue": True},
    })
    assert (result["target"], result["tab"], result["method"]) == (
        "default", tab, "Runtime.evaluate")
    assert result["result"]["result"] == {"type": "string", "value": "tools42"}


async def test_cdp_tab_navigation_history(gw: Client, tab: int) -> None:
    second = data_url("tools-second")
    await call_ok(gw, "navigate", {"tab": tab, "url": second})

    result = await call_ok(gw, "cdp_command", {"tab": tab, "method": "Page.getNavigationHistory"})

    history = result["result"]
    urls = [entry["url"] for entry in history["entries"]]
    assert urls[-2:] == [data_url("tools", "<p id=p>tools</p>"), second]
    assert history["currentIndex"] == len(urls) - 1


@pytest.mark.parametrize(
    ("method", "params"),
    [
        ("Page.navigate", {"url": "about:blank"}),
        ("Runtime.evaluate", {"expression": "1"}),
        ("DOM.getDocument", {}),
    ],
)
async def test_page_domain_without_tab_says_to_pass_a_tab(
    gw: Client, method: str, params: dict[str, Any]
) -> None:
    error = await call_err(
        gw, "cdp_command", {"method": method, "params": params}, timeout=ERROR_BOUND
    )
    assert f"{method} failed:" in error
    assert "page domains (Page, Runtime, DOM, …) need tab=<id>" in error
    assert "(CDP error -32601)" in error


async def test_cdp_result_secrets_are_redacted(gw: Client, tab: int) -> None:
    secret = f"SECRET-COOKIE-{uuid.uuid4().hex}"
    await call_ok(gw, "cdp_command", {
        "tab": tab, "method": "Network.setCookie",
        "params": {"name": "sid", "value": secret, "url": "https://csgw.invalid/"},
    })

    result = await call_ok(gw, "cdp_command", {
        "tab": tab, "method": "Network.getCookies", "params": {"urls": ["https://csgw.invalid/"]},
    })

    cookies = result["result"]["cookies"]
    assert [(c["name"], c["domain"]) for c in cookies] == [("sid", "csgw.invalid")]
    assert cookies[0]["value"] == "[redacted]"
    assert secret not in json.dumps(result)
    await call_ok(gw, "cdp_command", {
        "tab": tab, "method": "Network.deleteCookies",
        "params": {"name": "sid", "url": "https://csgw.invalid/"},
    })


# ------------------------------------------------------------------ big results


async def test_five_megabytes_come_back_whole_when_asked(gw: Client, tab: int) -> None:
    result = await call_ok(gw, "evaluate", {
        "tab": tab, "expression": '"x".repeat(5 * 1024 * 1024)', "max_chars": 6_000_000,
    })
    assert result["type"] == "string"
    assert len(result["value"]) == FIVE_MB
    assert result["value"] == "x" * FIVE_MB
    assert "truncated" not in result and "omitted_chars" not in result


async def test_five_megabytes_are_cut_by_default(gw: Client, tab: int) -> None:
    expression = '"x".repeat(5 * 1024 * 1024)'
    result = await call_ok(gw, "evaluate", {"tab": tab, "expression": expression})
    assert result["value"] == "x" * DEFAULT_MAX_CHARS
    assert result["truncated"] is True
    assert result["omitted_chars"] == FIVE_MB - DEFAULT_MAX_CHARS


async def test_a_big_object_is_cut_as_json_text(gw: Client, tab: int) -> None:
    expression = "Array.from({length: 3000}, (_, i) => ({i, pad: 'y'.repeat(50)}))"
    whole = await call_ok(gw, "evaluate", {"tab": tab, "expression": expression,
                                           "max_chars": 1_000_000})
    cut = await call_ok(gw, "evaluate", {"tab": tab, "expression": expression, "max_chars": 1000})

    assert len(whole["value"]) == 3000 and whole["value"][2999] == {"i": 2999, "pad": "y" * 50}
    text = json.dumps(whole["value"], ensure_ascii=False)
    assert cut["truncated"] is True
    assert cut["value"] == text[:1000]
    assert cut["omitted_chars"] == len(text) - 1000


async def test_cdp_command_result_is_cut_too(gw: Client, tab: int) -> None:
    result = await call_ok(gw, "cdp_command", {
        "tab": tab, "method": "Runtime.evaluate",
        "params": {"expression": '"z".repeat(300000)', "returnByValue": True},
    })
    assert result["truncated"] is True
    assert isinstance(result["result"], str) and len(result["result"]) == DEFAULT_MAX_CHARS
    assert result["result"].startswith('{"result": {"type": "string", "value": "zzz')
    assert result["omitted_chars"] > 300_000 - DEFAULT_MAX_CHARS


async def test_lone_surrogates_come_back_as_replacement_characters(gw: Client, tab: int) -> None:
    """A JavaScript string may hold half a UTF-16 pair; the UTF-8 MCP channel cannot.
    Neither the value nor the console line may break the tool (or later calls)."""
    result = await call_ok(gw, "evaluate", {
        "tab": tab, "expression": "console.log('half \\ud800 logged'); 'half \\udc00 returned'"})
    assert result["value"] == "half \ufffd returned"
    console = await call_ok(gw, "console_messages", {"tab": tab})
    assert [m["text"] for m in console["messages"]][-1] == "half \ufffd logged"
    assert (await call_ok(gw, "evaluate", {"tab": tab, "expression": "1+1"}))["value"] == 2


# --------------------------------------------------------------------- promises


async def test_evaluate_waits_for_a_returned_promise(gw: Client, tab: int) -> None:
    result = await call_ok(gw, "evaluate", {
        "tab": tab, "expression": "new Promise(resolve => setTimeout(() => resolve(42), 50))",
    })
    assert (result["type"], result["value"]) == ("number", 42)


async def test_evaluate_top_level_await(gw: Client, tab: int) -> None:
    result = await call_ok(gw, "evaluate", {
        "tab": tab,
        "expression": "const v = await new Promise(r => setTimeout(() => r('done'), 50)); v",
    })
    assert result["value"] == "done"


async def test_evaluate_without_awaiting_returns_the_promise(gw: Client, tab: int) -> None:
    result = await call_ok(gw, "evaluate", {
        "tab": tab, "expression": "new Promise(() => {})", "await_promise": False,
        "timeout_s": 5,
    })
    assert result["type"] == "object/promise"


# --------------------------------------------------------------------- navigate


@pytest.mark.parametrize("wait", ["load", "domcontentloaded", "none"])
async def test_navigate_wait_modes(gw: Client, tab: int, wait: str) -> None:
    url = data_url(f"wait-{wait}", "<p>w</p>")
    nav = await call_ok(gw, "navigate", {"tab": tab, "url": url, "wait": wait})
    assert nav["tab"] == tab
    if wait != "none":
        assert (nav["url"], nav["title"]) == (url, f"wait-{wait}")
    else:  # not waiting: the tab may still show the old page, but it ends up on the new one
        state = await call_ok(gw, "evaluate", {"tab": tab, "expression": (
            "await new Promise(r => document.readyState === 'complete' ? r() : "
            "addEventListener('load', r)); location.href")})
        assert state["value"] == url


async def test_navigate_right_after_new_tab_waits_for_its_own_load(gw: Client) -> None:
    """The load event of the page new_tab started must not end navigate's wait early."""
    seen = []
    for i in range(10):
        first = data_url(f"first-{i}", "<p>1</p>")
        second = data_url(f"second-{i}", "<p>2</p>")
        tab = (await call_ok(gw, "new_tab", {"url": first}))["tab"]
        nav = await call_ok(gw, "navigate", {"tab": tab, "url": second})
        seen.append((nav["url"], nav["title"]))
        await call_ok(gw, "close_tab", {"tab": tab})
    expected = [(data_url(f"second-{i}", "<p>2</p>"), f"second-{i}") for i in range(10)]
    assert seen == expected


async def test_new_tab_opens_the_url(gw: Client, topology: Topology) -> None:
    url = data_url("tools-new-tab")
    opened = await call_ok(gw, "new_tab", {"url": url})
    try:
        assert opened["url"] == url and opened["target"] == "default"

        async def shown_remotely() -> bool:  # the tab exists at once; its URL once it commits
            return url in [p["url"] for p in remote_pages(topology.host("h2"))]

        await eventually(shown_remotely, timeout=10, what="the new tab's URL")
    finally:
        await call_ok(gw, "close_tab", {"tab": opened["tab"]})


async def test_a_call_on_a_tab_closed_mid_call_fails_saying_so(
    gw: Client, topology: Topology
) -> None:
    """close_tab while an evaluate waits on the tab: the evaluate waited out its whole
    timeout, then blamed the promise ('got no answer within 60 s'), since close_tab
    retired the tab before Chrome's detach event could fail what was in flight."""
    tab = (await call_ok(gw, "navigate", {"url": data_url("mid-call", "<p>m</p>")}))["tab"]
    marker = f"waiting-{uuid.uuid4().hex[:8]}"
    errors: list[str] = []

    async def waiting() -> None:
        errors.append(await call_err(gw, "evaluate", {"tab": tab, "timeout_s": 60, "expression": (
            f"document.title = '{marker}'; await new Promise(() => {{}})")}))

    with anyio.fail_after(ERROR_BOUND + 15):
        async with anyio.create_task_group() as tg:
            tg.start_soon(waiting)
            await _running(topology, marker)
            assert (await call_ok(gw, "close_tab", {"tab": tab}))["closed"] is True
    [error] = errors
    assert f"tab {tab} was closed by close_tab" in error, error


async def _running(topology: Topology, marker: str) -> None:
    """Wait until an evaluate that first sets the page's title to ``marker`` is running:
    Chrome's own page list (not the gateway, whose tab lock the call holds) shows it."""
    async def shown() -> bool:
        return marker in [p["title"] for p in remote_pages(topology.host("h2"))]
    await eventually(shown, timeout=15, what=f"the evaluate that sets {marker!r} to run")


# ------------------------------------------------------------------ concurrency


async def test_calls_on_different_tabs_do_not_wait_for_each_other(
        gw: Client, topology: Topology) -> None:
    slow = (await call_ok(gw, "new_tab"))["tab"]
    fast = (await call_ok(gw, "new_tab"))["tab"]
    marker = f"slow-{uuid.uuid4().hex[:8]}"
    finished: list[str] = []

    async def run(name: str, tab: int, expression: str) -> None:
        result = await call_ok(gw, "evaluate", {"tab": tab, "expression": expression})
        finished.append(f"{name}={result['value']}")

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(run, "slow", slow, f"document.title = '{marker}'; "
                          "await new Promise(r => setTimeout(r, 5000)); 'slept'")
            await _running(topology, marker)  # the fast call starts while slow runs
            tg.start_soon(run, "fast", fast, "'quick'")
        assert finished == ["fast=quick", "slow=slept"]
    finally:
        for t in (slow, fast):
            await call_ok(gw, "close_tab", {"tab": t})


async def test_calls_on_one_tab_run_one_after_the_other(
        gw: Client, tab: int, topology: Topology) -> None:
    await call_ok(gw, "evaluate", {"tab": tab, "expression": "window.step = 'before'"})
    marker = f"first-{uuid.uuid4().hex[:8]}"
    seen: dict[str, Any] = {}

    async def first() -> None:
        result = await call_ok(gw, "evaluate", {"tab": tab, "expression": (
            f"document.title = '{marker}'; await new Promise(r => setTimeout(r, 2000)); "
            "window.step = 'after'; 'first'")})
        seen["first"] = result["value"]

    async def second() -> None:
        await _running(topology, marker)  # sent while the first call is running
        result = await call_ok(gw, "evaluate", {"tab": tab, "expression": "window.step"})
        seen["second"] = result["value"]

    async with anyio.create_task_group() as tg:
        tg.start_soon(first)
        tg.start_soon(second)

    # Serialised by the tab's lock: the second call saw the first one's effect.
    assert seen == {"first": "first", "second": "after"}
