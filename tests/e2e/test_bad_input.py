"""What pages and browsers do wrong: hung pages, dialogs, JavaScript errors, CDP errors,
tabs closed behind the gateway's back, unreachable hosts.

Each case must come back as a tool error with a precise text, within a bounded time,
and leave the server answering the next call (``_still_serving``). Malformed and
hostile arguments — every tool, table-driven — are in ``test_hostile_input.py``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
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
    present,
    wait_for_targets,
    write_targets,
)
from tests.topology import Topology

pytestmark = pytest.mark.anyio

PAGE = data_url("bad-input", "<p id=p>steady</p>")


@pytest.fixture(scope="module")
async def gw(topology: Topology) -> AsyncIterator[Client]:
    async with open_gateway(topology.client_env() | {"SSH_PROXY_TO": "h1"}) as client:
        await wait_for_targets(client, {"default": "up"})
        yield client


@pytest.fixture(scope="module")
async def page(gw: Client) -> AsyncIterator[int]:
    """One tab with a known page; tests that must not change it check it is still there."""
    nav = await call_ok(gw, "navigate", {"url": PAGE})
    yield nav["tab"]
    await call_ok(gw, "close_tab", {"tab": nav["tab"]})


async def _still_serving(gw: Client, page: int | None = None) -> None:
    ping = await call_ok(gw, "ping", timeout=ERROR_BOUND)
    assert ping["connected"] is True, ping
    if page is not None:
        state = await call_ok(gw, "evaluate", {
            "tab": page, "expression": "[location.href, document.getElementById('p').textContent]",
        }, timeout=ERROR_BOUND)
        assert state["value"] == [PAGE, "steady"]


async def _fresh_tab(gw: Client) -> int:
    return int((await call_ok(gw, "navigate", {"url": data_url("scratch")}))["tab"])


# ------------------------------------------------------------------- cdp_command


@pytest.mark.parametrize(
    ("method", "params", "expected"),
    [
        ("Page.navigate", {}, "Page.navigate failed: Invalid parameters (CDP error -32602)"),
        ("Runtime.evaluate", {"expression": 5},
         "Runtime.evaluate failed: Invalid parameters (CDP error -32602)"),
        ("Page.noSuchMethod", {},
         "Page.noSuchMethod failed: 'Page.noSuchMethod' wasn't found (CDP error -32601)"),
    ],
)
async def test_chrome_cdp_error_is_passed_on(
    gw: Client, page: int, method: str, params: dict[str, Any], expected: str
) -> None:
    error = await call_err(
        gw, "cdp_command", {"method": method, "tab": page, "params": params},
        timeout=ERROR_BOUND,
    )
    assert expected in error
    await _still_serving(gw, page)


async def test_browser_level_cdp_error(gw: Client) -> None:
    error = await call_err(
        gw, "cdp_command", {"method": "Target.closeTarget", "params": {"targetId": "nope"}},
        timeout=ERROR_BOUND,
    )
    assert "Target.closeTarget failed:" in error and "CDP error" in error
    await _still_serving(gw)


# ------------------------------------------------------------------------ evaluate


@pytest.mark.parametrize(
    "expression",
    ["await new Promise(() => {})", "new Promise(() => {})"],
    ids=["awaited", "returned"],
)
async def test_never_settling_promise_times_out(gw: Client, expression: str) -> None:
    tab = await _fresh_tab(gw)
    try:
        error = await call_err(
            gw, "evaluate", {"tab": tab, "expression": expression, "timeout_s": 1},
            timeout=ERROR_BOUND,
        )
        assert "got no answer within 1 s" in error
        assert "promise" in error and "raise timeout_s" in error
        # The tab still answers afterwards.
        again = await call_ok(gw, "evaluate", {"tab": tab, "expression": "1 + 1"})
        assert again["value"] == 2
    finally:
        await call_ok(gw, "close_tab", {"tab": tab})
    await _still_serving(gw)


async def test_busy_page_times_out_and_can_still_be_closed(gw: Client) -> None:
    tab = await _fresh_tab(gw)
    error = await call_err(
        gw, "evaluate", {"tab": tab, "expression": "while (true) {}", "timeout_s": 1},
        timeout=ERROR_BOUND,
    )
    assert "got no answer within 1 s" in error
    assert "a long loop" in error
    # The page is hung: closing it goes through the browser and works anyway.
    closed = await call_ok(gw, "close_tab", {"tab": tab}, timeout=ERROR_BOUND)
    assert closed == {"tab": tab, "closed": True}
    await _still_serving(gw)


async def test_open_dialog_times_out_and_tab_can_be_closed(gw: Client) -> None:
    tab = await _fresh_tab(gw)
    error = await call_err(
        gw, "evaluate", {"tab": tab, "expression": "alert('stuck'); 1", "timeout_s": 2},
        timeout=ERROR_BOUND,
    )
    assert "dialog" in error  # a timeout naming it, or the dialog itself
    closed = await call_ok(gw, "close_tab", {"tab": tab}, timeout=ERROR_BOUND)
    assert closed == {"tab": tab, "closed": True}
    await _still_serving(gw)


async def test_js_exception_gives_message_and_stack(gw: Client, page: int) -> None:
    error = await call_err(gw, "evaluate", {
        "tab": page,
        "expression": "function thrower() { throw new Error('boom-42'); }\nthrower()",
    }, timeout=ERROR_BOUND)
    assert "JavaScript error: Error: boom-42" in error
    assert "at thrower (" in error  # the stack
    await _still_serving(gw, page)


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("throw 'plain-string'", "JavaScript error: plain-string"),
        ("1 +", "JavaScript error: SyntaxError: Unexpected end of input"),
        ("undefinedFunction()", "JavaScript error: ReferenceError: undefinedFunction is not"),
        ("await Promise.reject(new Error('rej-7'))", "JavaScript error: Error: rej-7"),
    ],
)
async def test_js_errors(gw: Client, page: int, expression: str, expected: str) -> None:
    error = await call_err(
        gw, "evaluate", {"tab": page, "expression": expression}, timeout=ERROR_BOUND
    )
    assert expected in error
    await _still_serving(gw, page)


async def test_rejected_returned_promise_is_an_error(gw: Client, page: int) -> None:
    """The docstring: "A thrown error or rejected promise is returned as a tool error"."""
    error = await call_err(gw, "evaluate", {
        "tab": page, "expression": "Promise.reject(new Error('rejected-9'))",
    }, timeout=ERROR_BOUND)
    assert "rejected-9" in error
    await _still_serving(gw, page)


# --------------------------------------------------------------------- closed tabs


async def test_evaluate_on_a_tab_closed_with_close_tab(gw: Client) -> None:
    tab = await _fresh_tab(gw)
    await call_ok(gw, "close_tab", {"tab": tab})

    error = await call_err(gw, "evaluate", {"tab": tab, "expression": "1"}, timeout=ERROR_BOUND)
    # "was closed by close_tab", or just "was closed" when Chrome's event came first
    assert f"tab {tab} was closed" in error and "call list_tabs" in error
    again = await call_err(gw, "close_tab", {"tab": tab}, timeout=ERROR_BOUND)
    assert f"tab {tab} was closed" in again
    await _still_serving(gw)


async def test_evaluate_on_a_tab_closed_behind_the_gateways_back(gw: Client) -> None:
    tab = await _fresh_tab(gw)
    info = await call_ok(gw, "cdp_command", {"tab": tab, "method": "Target.getTargetInfo"})
    target_id = info["result"]["targetInfo"]["targetId"]
    await call_ok(gw, "cdp_command", {"method": "Target.closeTarget",
                                      "params": {"targetId": target_id}})

    async def closed_error() -> str | None:
        result = await gw.call_tool("evaluate", {"tab": tab, "expression": "1"})
        text = "\n".join(getattr(c, "text", "") for c in result.content)
        return text if result.is_error and f"tab {tab} was closed" in text else None

    error = await eventually(closed_error, until=present,
                             timeout=10, what=f"tab {tab} to be reported closed")
    assert "call list_tabs for the current tab ids" in error
    listing = await call_ok(gw, "list_tabs")
    assert tab not in [t["tab"] for t in listing["tabs"]]
    await _still_serving(gw)


async def test_a_page_that_closes_itself(gw: Client) -> None:
    # A tab with one history entry: scripts may close only such windows.
    tab = (await call_ok(gw, "new_tab"))["tab"]
    await call_ok(gw, "evaluate", {"tab": tab, "expression": "window.close(); 'closing'"})

    async def gone() -> bool:
        result = await gw.call_tool("evaluate", {"tab": tab, "expression": "1"})
        text = "\n".join(getattr(c, "text", "") for c in result.content)
        return result.is_error and f"tab {tab} was closed" in text

    await eventually(gone, timeout=10, what=f"tab {tab} to be reported closed")
    await _still_serving(gw)


# ------------------------------------------------------------------------------ URLs


async def test_failed_navigation_says_why(gw: Client) -> None:
    tab = await _fresh_tab(gw)
    try:
        # Port 2 on the remote host's own loopback: nothing listens there.
        error = await call_err(
            gw, "navigate", {"tab": tab, "url": "http://127.0.0.1:2/"}, timeout=ERROR_BOUND
        )
        assert "navigation to http://127.0.0.1:2/ failed: net::ERR_CONNECTION_REFUSED" in error
    finally:
        await call_ok(gw, "close_tab", {"tab": tab})
    await _still_serving(gw)


async def test_odd_but_valid_arguments_do_not_break_anything(gw: Client, page: int) -> None:
    nested: dict[str, Any] = {}
    inner = nested
    for _ in range(60):
        inner["a"] = {}
        inner = inner["a"]
    result = await call_ok(gw, "cdp_command", {
        "tab": page, "method": "Runtime.evaluate",
        "params": {"expression": "'ünïcødé ✓ ' + '\\u0000'.length", "returnByValue": True,
                   "ignored": nested},
    })
    assert result["result"]["result"]["value"] == "ünïcødé ✓ 1"
    big = await call_ok(gw, "evaluate", {
        "tab": page, "expression": "'" + "a" * 500_000 + "'.length"})
    assert big["value"] == 500_000
    await _still_serving(gw, page)


# ----------------------------------------------------------------- unreachable host


async def test_unreachable_host_is_down_and_others_work(
    topology: Topology, tmp_path: Path
) -> None:
    home = topology.make_client_home(tmp_path / "home")
    with (home / ".ssh" / "config").open("a") as config:
        # An alias on our own loopback where nothing listens: connect is refused at once.
        config.write(
            "\nHost dead\n"
            "    HostName 127.0.0.1\n"
            "    Port 1\n"
            "    User csgw\n"
            f"    IdentityFile {home}/.ssh/id_ed25519\n"
            f"    UserKnownHostsFile {home}/.ssh/known_hosts\n"
        )
    path = write_targets(tmp_path / "targets.toml",
                         {"live": {"ssh": "h1"}, "dead": {"ssh": "dead"}})
    async with open_gateway(topology.client_env(home), ["--config", str(path)]) as gw:
        targets = await wait_for_targets(gw, {"live": "up", "dead": "down"})
        assert "SSH connect to dead failed" in targets["dead"]["error"]
        assert "failed: the connection was refused: nothing listens there" in (
            targets["dead"]["error"])

        with anyio.fail_after(ERROR_BOUND):
            error = await call_err(gw, "new_tab", {"target": "dead"})
            ping = await call_ok(gw, "ping", {"target": "dead"})
        assert "target 'dead' unreachable (SSH connect to dead failed" in error
        assert ping["connected"] is False and "SSH connect to dead failed" in ping["error"]

        nav = await call_ok(gw, "navigate", {"target": "live", "url": data_url("alive")})
        assert nav["title"] == "alive"
        listing = await call_ok(gw, "list_tabs")
        assert [u["target"] for u in listing["unavailable"]] == ["dead"]
        assert nav["tab"] in [t["tab"] for t in listing["tabs"]]
        await call_ok(gw, "close_tab", {"tab": nav["tab"]})
