"""JavaScript dialogs: an open one blocks the tab's tools, ``handle_dialog`` clears it.

``/dialogs.html`` opens an alert / confirm / prompt 100 ms after ``openAlert(text)``
etc. is called, and keeps what each dialog returned in ``window.csgwResults``, so
after ``handle_dialog`` the test reads back what the page got (true / false / the
typed prompt text). ``/beforeunload.html`` asks before leaving once the page has had
a user gesture (``evaluate`` runs with one).

A call that would hang behind the dialog must fail within ERROR_BOUND with a message
naming the dialog and ``handle_dialog`` — never wait for the command timeout. Every
tool that takes a tab is tried with a dialog open: those that need the page to run
answer with the dialog's text; those that read the gateway's own records (console,
network lists and request details) or ask the browser process (close_tab,
handle_dialog) still work.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from tests.e2e.helpers import ERROR_BOUND, call_err, call_ok, eventually, present, remote_pages
from tests.e2e.pages import (
    DevtoolsEnv,
    PageSite,
    blocked_error,
    devtools_gateway,
    dump,
    open_page,
    strings_in,
)
from tests.topology import Topology

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
async def env(
    topology: Topology, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[DevtoolsEnv]:
    async with devtools_gateway(topology, tmp_path_factory.mktemp("devtools-dialogs")) as e:
        yield e


@pytest.fixture(params=["h1", "h2"])
def target(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
async def tab(env: DevtoolsEnv, target: str) -> AsyncIterator[int]:
    tab = await open_page(env.client, env.site(target), "/dialogs.html", target)
    yield tab
    await call_ok(env.client, "close_tab", {"tab": tab}, timeout=ERROR_BOUND)


async def _open(env: DevtoolsEnv, tab: int, call: str) -> None:
    scheduled = await call_ok(env.client, "evaluate", {"tab": tab, "expression": call})
    assert scheduled["value"] == "scheduled"


async def _results(env: DevtoolsEnv, tab: int) -> list[Any]:
    return list((await call_ok(env.client, "evaluate", {
        "tab": tab, "expression": "window.csgwResults"}, timeout=ERROR_BOUND))["value"])


def _assert_names_dialog(error: str, kind: str) -> None:
    assert kind in error.lower(), f"the error names the {kind} dialog: {error}"
    assert "handle_dialog" in error, f"the error says how to get out: {error}"


async def test_alert_blocks_evaluate_until_handled(env: DevtoolsEnv, tab: int) -> None:
    text = f"csgw-alert-{uuid.uuid4().hex[:8]}"
    await _open(env, tab, f"openAlert('{text}')")

    error = await blocked_error(env.client, tab)
    _assert_names_dialog(error, "alert")

    handled = await call_ok(env.client, "handle_dialog", {"tab": tab, "accept": True},
                            timeout=ERROR_BOUND)
    assert text in strings_in(handled), f"handle_dialog says what the dialog said: {handled}"
    assert "alert" in dump(handled).lower()

    assert await _results(env, tab) == [None]  # alert() returns undefined


@pytest.mark.parametrize(("accept", "returned"), [(True, True), (False, False)])
async def test_confirm_accept_and_dismiss(
    env: DevtoolsEnv, tab: int, accept: bool, returned: bool
) -> None:
    text = f"csgw-confirm-{uuid.uuid4().hex[:8]}?"
    await _open(env, tab, f"openConfirm('{text}')")
    _assert_names_dialog(await blocked_error(env.client, tab), "confirm")

    handled = await call_ok(env.client, "handle_dialog", {"tab": tab, "accept": accept},
                            timeout=ERROR_BOUND)
    assert text in strings_in(handled)

    assert await _results(env, tab) == [returned]


async def test_prompt_text_reaches_the_page(env: DevtoolsEnv, tab: int) -> None:
    question = f"csgw-prompt-{uuid.uuid4().hex[:8]}"
    answer = "typed by the agent ✓"
    await _open(env, tab, f"openPrompt('{question}', 'default answer')")
    _assert_names_dialog(await blocked_error(env.client, tab), "prompt")

    handled = await call_ok(env.client, "handle_dialog",
                            {"tab": tab, "accept": True, "prompt_text": answer},
                            timeout=ERROR_BOUND)
    assert question in strings_in(handled)

    assert await _results(env, tab) == [answer]


async def test_dismissed_prompt_returns_null(env: DevtoolsEnv, tab: int) -> None:
    await _open(env, tab, "openPrompt('csgw-prompt-dismiss', 'x')")
    _assert_names_dialog(await blocked_error(env.client, tab), "prompt")
    await call_ok(env.client, "handle_dialog", {"tab": tab, "accept": False},
                  timeout=ERROR_BOUND)
    assert await _results(env, tab) == [None]


async def test_a_dialog_blocks_other_tools_too(env: DevtoolsEnv, tab: int,
                                               target: str) -> None:
    """navigate would hang behind the dialog just the same; it fails fast instead."""
    await _open(env, tab, "openAlert('csgw-blocks-navigate')")
    await blocked_error(env.client, tab)

    error = await call_err(env.client, "navigate", {
        "tab": tab, "url": env.site(target).url("/tall.html")}, timeout=ERROR_BOUND)
    _assert_names_dialog(error, "alert")

    await call_ok(env.client, "handle_dialog", {"tab": tab, "accept": True},
                  timeout=ERROR_BOUND)
    assert await _results(env, tab) == [None]


async def test_handle_dialog_without_a_dialog_is_refused(env: DevtoolsEnv, tab: int) -> None:
    error = await call_err(env.client, "handle_dialog", {"tab": tab, "accept": True},
                           timeout=ERROR_BOUND)
    assert "dialog" in error.lower()
    assert await _results(env, tab) == []


async def test_one_tab_blocked_leaves_the_others_working(env: DevtoolsEnv, tab: int,
                                                         target: str) -> None:
    other = await open_page(env.client, env.site(target), "/many.html?n=1", target)
    try:
        await _open(env, tab, "openAlert('csgw-only-this-tab')")
        await blocked_error(env.client, tab)
        result = await call_ok(env.client, "evaluate", {"tab": other, "expression": "6 * 7"},
                               timeout=ERROR_BOUND)
        assert result["value"] == 42
        await call_ok(env.client, "handle_dialog", {"tab": tab, "accept": True},
                      timeout=ERROR_BOUND)
    finally:
        await call_ok(env.client, "close_tab", {"tab": other})


# ------------------------------------------------------------ every tab tool, dialog open

ToolArgs = Callable[[int, PageSite], dict[str, Any]]

# Tools that need the page to run: each must answer with the dialog, at once.
BLOCKED: dict[str, tuple[str, ToolArgs]] = {
    "evaluate": ("evaluate", lambda tab, site: {"tab": tab, "expression": "1"}),
    "cdp_command": ("cdp_command", lambda tab, site: {
        "tab": tab, "method": "Runtime.evaluate", "params": {"expression": "1"}}),
    "navigate": ("navigate", lambda tab, site: {"tab": tab, "url": site.url("/tall.html")}),
    "browse": ("browse", lambda tab, site: {"tab": tab, "url": site.url("/tall.html")}),
    "browse_view": ("browse_view", lambda tab, site: {"tab": tab}),
    "browse_act": ("browse_act", lambda tab, site: {
        "tab": tab, "actions": [{"do": "scroll", "to": "bottom"}]}),
    "screenshot": ("screenshot", lambda tab, site: {"tab": tab}),
    "screenshot_full_page": ("screenshot", lambda tab, site: {"tab": tab, "full_page": True}),
}


@pytest.mark.parametrize("case", sorted(BLOCKED))
async def test_every_page_tool_answers_with_the_dialog(env: DevtoolsEnv, tab: int, target: str,
                                                       case: str) -> None:
    tool, args = BLOCKED[case]
    text = f"csgw-{case}-{uuid.uuid4().hex[:8]}"
    await _open(env, tab, f"openAlert('{text}')")
    await blocked_error(env.client, tab)

    error = await call_err(env.client, tool, args(tab, env.site(target)), timeout=ERROR_BOUND)
    _assert_names_dialog(error, "alert")
    assert text in error, f"{tool} says what the dialog says: {error}"
    assert "ExceptionGroup" not in error and "internal" not in error, error

    await call_ok(env.client, "handle_dialog", {"tab": tab, "accept": True},
                  timeout=ERROR_BOUND)
    assert await _results(env, tab) == [None]
    view = await call_ok(env.client, "browse_view", {"tab": tab}, timeout=ERROR_BOUND)
    assert "dialogs" in view["view"], f"the tab works again after the dialog: {view}"


async def test_records_work_during_a_dialog(env: DevtoolsEnv, tab: int) -> None:
    """console_messages, network_requests and network_request (without bodies) read
    what the gateway recorded: none needs the page, so none is blocked."""
    await _open(env, tab, "console.log('csgw-before-the-dialog'), openAlert('csgw-records')")
    await blocked_error(env.client, tab)

    console = await call_ok(env.client, "console_messages", {"tab": tab}, timeout=ERROR_BOUND)
    assert "csgw-before-the-dialog" in strings_in(console["messages"])

    listed = await call_ok(env.client, "network_requests", {"tab": tab, "filter": "dialogs.html"},
                           timeout=ERROR_BOUND)
    assert len(listed["requests"]) == 1, listed
    detail = await call_ok(env.client, "network_request", {
        "tab": tab, "id": listed["requests"][0]["id"]}, timeout=ERROR_BOUND)
    assert detail["url"].endswith("/dialogs.html") and detail["status"] == 200, detail

    handled = await call_ok(env.client, "handle_dialog", {"tab": tab, "accept": True},
                            timeout=ERROR_BOUND)
    assert "csgw-records" in strings_in(handled)


async def test_a_body_during_a_dialog_answers_with_the_dialog(env: DevtoolsEnv, tab: int) -> None:
    listed = await call_ok(env.client, "network_requests", {"tab": tab, "filter": "dialogs.html"})
    await _open(env, tab, "openAlert('csgw-body')")
    await blocked_error(env.client, tab)
    try:
        error = await call_err(env.client, "network_request", {
            "tab": tab, "id": listed["requests"][0]["id"], "include_body": "response"},
            timeout=ERROR_BOUND)
        _assert_names_dialog(error, "alert")
        assert "csgw-body" in error
    finally:
        await call_ok(env.client, "handle_dialog", {"tab": tab, "accept": True},
                      timeout=ERROR_BOUND)


async def test_close_tab_closes_a_tab_with_a_dialog_open(env: DevtoolsEnv, topology: Topology,
                                                         target: str) -> None:
    """Closing goes through the browser, not the blocked page."""
    site = env.site(target)
    tab = await open_page(env.client, site, "/dialogs.html?closing", target)
    await _open(env, tab, "openAlert('csgw-close-me')")
    await blocked_error(env.client, tab)

    closed = await call_ok(env.client, "close_tab", {"tab": tab}, timeout=ERROR_BOUND)
    assert closed == {"tab": tab, "closed": True}

    # close_tab answers once Chrome destroyed the page: it is gone from the browser too
    assert all("closing" not in p["url"] for p in remote_pages(topology.host(target)))
    listed = await call_ok(env.client, "list_tabs", {"target": target})
    assert tab not in [t["tab"] for t in listed["tabs"]]


# ----------------------------------------------------------------------- beforeunload


async def _leave(env: DevtoolsEnv, site: PageSite, target: str) -> tuple[int, str]:
    """A tab on /beforeunload.html that has had a user gesture, and the navigate error."""
    tab = await open_page(env.client, site, "/beforeunload.html", target)
    await call_ok(env.client, "evaluate", {"tab": tab, "expression": "document.body.click(); 1"})
    error = await call_err(env.client, "navigate", {"tab": tab, "url": site.url("/tall.html")},
                           timeout=ERROR_BOUND)
    return tab, error


async def _href(env: DevtoolsEnv, tab: int) -> str:
    return str((await call_ok(env.client, "evaluate", {
        "tab": tab, "expression": "location.href"}, timeout=ERROR_BOUND))["value"])


async def test_beforeunload_accepted_leaves_the_page(env: DevtoolsEnv, target: str) -> None:
    site = env.site(target)
    tab, error = await _leave(env, site, target)
    try:
        _assert_names_dialog(error, "beforeunload")
        handled = await call_ok(env.client, "handle_dialog", {"tab": tab, "accept": True},
                                timeout=ERROR_BOUND)
        assert "beforeunload" in dump(handled).lower()

        async def left() -> str | None:
            href = await _href(env, tab)
            return href if href == site.url("/tall.html") else None

        await eventually(left, until=present, timeout=ERROR_BOUND, what="the page to leave")
    finally:
        await call_ok(env.client, "close_tab", {"tab": tab}, timeout=ERROR_BOUND)


async def test_beforeunload_dismissed_stays(env: DevtoolsEnv, target: str) -> None:
    site = env.site(target)
    tab, error = await _leave(env, site, target)
    try:
        _assert_names_dialog(error, "beforeunload")
        await call_ok(env.client, "handle_dialog", {"tab": tab, "accept": False},
                      timeout=ERROR_BOUND)
        assert await _href(env, tab) == site.url("/beforeunload.html")
        title = await call_ok(env.client, "evaluate", {"tab": tab, "expression": "document.title"})
        assert title["value"] == "csgw-beforeunload"
    finally:
        await call_ok(env.client, "close_tab", {"tab": tab}, timeout=ERROR_BOUND)
