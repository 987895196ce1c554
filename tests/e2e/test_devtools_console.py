"""``console_messages`` on real pages served inside the remote hosts.

The devtools page (tests/e2e/page_server.py) logs at every level from ``/console.js``
(known lines), throws an uncaught exception two frames deep in ``/thrower.js``, leaves
a promise rejection unhandled, and makes requests that make the browser itself log
(a 404, a refused connection, a CORS block). Every one of them must show with its
level, text, source, location and — for exceptions — the stack.

Field names beyond the issue's table (``id``, ``level``, ``text``, ``source``,
``url:line``, ``time``, stack) are the implementation's choice, so locations and
stacks are looked for as values, and the message list is found as the one list of
messages in the result.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
import pytest
from mcp import Client

from tests.e2e.helpers import ERROR_BOUND, call_err, call_ok, eventually, present
from tests.e2e.page_server import CONSOLE_LINES, THROWER_LINE
from tests.e2e.pages import (
    DevtoolsEnv,
    PageSite,
    devtools_gateway,
    dump,
    keys_in,
    open_page,
    settle,
    strings_in,
)
from tests.topology import Topology

pytestmark = pytest.mark.anyio

LEVELS = {"log": "info", "info": "info", "warn": "warning", "error": "error", "debug": "debug"}
SETTLE_TIMEOUT = 20.0


@pytest.fixture(scope="module")
async def env(
    topology: Topology, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[DevtoolsEnv]:
    async with devtools_gateway(topology, tmp_path_factory.mktemp("devtools-console")) as e:
        yield e


@pytest.fixture(scope="module")
async def page(env: DevtoolsEnv) -> AsyncIterator[int]:
    """One tab on h1 showing the devtools page, its scripted requests done."""
    tab = await open_page(env.client, env.site("h1"), "/devtools.html", "h1")
    await settle(env.client, tab)
    await _wait_for_messages(env.client, tab, lambda ms: _find(ms, "CORS policy") is not None
                             and _find(ms, "ERR_CONNECTION_REFUSED") is not None)
    yield tab
    await call_ok(env.client, "close_tab", {"tab": tab})


# --------------------------------------------------------------------------- helpers


def messages_of(result: dict[str, Any]) -> list[dict[str, Any]]:
    """The message list of a console_messages result."""
    messages = result.get("messages")
    assert isinstance(messages, list), f"no `messages` list in {dump(result)[:800]}"
    return messages


async def console(client: Client, tab: int, **args: Any) -> list[dict[str, Any]]:
    return messages_of(await call_ok(client, "console_messages", {"tab": tab, **args}))


def _find(messages: list[dict[str, Any]], needle: str) -> dict[str, Any] | None:
    hits = [m for m in messages if needle in str(m.get("text", ""))]
    return hits[0] if hits else None


def find(messages: list[dict[str, Any]], needle: str) -> dict[str, Any]:
    found = _find(messages, needle)
    assert found is not None, f"no message with {needle!r} in {[m.get('text') for m in messages]}"
    return found


async def _wait_for_messages(
    client: Client, tab: int, ready: Callable[[list[dict[str, Any]]], bool], **args: Any
) -> list[dict[str, Any]]:
    async def probe() -> list[dict[str, Any]] | None:
        messages = await console(client, tab, **args)
        return messages if ready(messages) else None

    return await eventually(probe, until=present,
                            timeout=SETTLE_TIMEOUT, what=f"console messages on tab {tab}")


def location_text(message: dict[str, Any]) -> str:
    """Every way a message can carry ``url:line``: a combined string, or url + line."""
    parts = strings_in(message)
    fields = dict(keys_in(message))
    for url_key in ("url", "source_url", "script_url"):
        for line_key in ("line", "line_number", "lineNumber"):
            if url_key in fields and line_key in fields:
                parts.append(f"{fields[url_key]}:{fields[line_key]}")
    return "\n".join(parts)


def assert_at(message: dict[str, Any], script: str, line: int) -> None:
    """The message points at ``script`` line ``line`` (1-based, as DevTools shows it)."""
    where = location_text(message)
    assert f"{script}:{line}" in where, (
        f"expected location {script}:{line} (1-based) in {dump(message)[:800]}")


# --------------------------------------------------------------------- what is shown


async def test_every_console_level_shows_with_its_fields(env: DevtoolsEnv, page: int) -> None:
    messages = await console(env.client, page)

    sources = set()
    for call, level in LEVELS.items():
        message = find(messages, f"csgw-{call}-level")
        assert message["level"] == level, (call, message)
        assert_at(message, "console.js", CONSOLE_LINES[call])
        assert message.get("time") is not None, message
        assert isinstance(message.get("source"), str) and message["source"], message
        sources.add(message["source"])
    assert len(sources) == 1, f"console.* calls come from one source, got {sources}"
    assert find(messages, "csgw-log-level")["text"].startswith("csgw-log-level 1"), (
        "console.log arguments are joined into the text")

    ids = [m["id"] for m in messages]
    assert len(set(map(str, ids))) == len(ids), f"message ids repeat: {ids}"


async def test_uncaught_exception_has_location_and_stack(env: DevtoolsEnv, page: int) -> None:
    message = find(await console(env.client, page), "csgw-uncaught-exception")

    assert message["level"] == "error"
    assert_at(message, "thrower.js", THROWER_LINE)
    text = dump(message)
    for frame in ("csgwInner", "csgwOuter"):
        assert frame in text, f"stack frame {frame} missing from {text[:800]}"
    stacks = [v for k, v in keys_in(message) if "stack" in k.lower()]
    assert stacks and any("csgwOuter" in dump(s) for s in stacks), (
        f"exceptions carry their stack in a stack field: {text[:800]}")


async def test_unhandled_rejection_shows_as_error(env: DevtoolsEnv, page: int) -> None:
    message = find(await console(env.client, page), "csgw-unhandled-rejection")
    assert message["level"] == "error"
    assert "devtools.html" in location_text(message)


async def test_browser_log_entries_show(env: DevtoolsEnv, page: int) -> None:
    """Failed resource loads and the CORS block are logged by the browser, not the page."""
    messages = await console(env.client, page)
    console_source = find(messages, "csgw-error-level")["source"]

    not_found = [m for m in messages if "404" in m["text"] and "missing.json" in dump(m)]
    assert not_found, f"no 404 entry for /missing.json in {[m['text'] for m in messages]}"
    assert not_found[0]["level"] == "error"
    assert not_found[0]["source"] != console_source, (
        "a failed resource load is the browser's entry, not a console.* call")

    refused = find(messages, "ERR_CONNECTION_REFUSED")
    assert refused["level"] == "error"
    assert f":{env.site('h1').ports['refused']}/refused" in dump(refused)

    cors = find(messages, "CORS policy")
    assert cors["level"] == "error"
    assert f"127.0.0.1:{env.site('h1').ports['b']}/api/data.json" in cors["text"]


# --------------------------------------------------------------------------- filters


async def test_level_filter_as_a_string(env: DevtoolsEnv, page: int) -> None:
    errors = await console(env.client, page, level="error")
    assert errors and {m["level"] for m in errors} == {"error"}
    for needle in ("csgw-error-level", "csgw-uncaught-exception", "csgw-unhandled-rejection"):
        find(errors, needle)
    assert _find(errors, "csgw-warn-level") is None

    debug = await console(env.client, page, level="debug")
    assert {m["level"] for m in debug} == {"debug"}
    find(debug, "csgw-debug-level")


async def test_level_filter_as_a_list(env: DevtoolsEnv, page: int) -> None:
    everything = await console(env.client, page)
    chosen = await console(env.client, page, level=["warning", "error"])

    assert {m["level"] for m in chosen} == {"warning", "error"}
    assert [m["id"] for m in chosen] == [
        m["id"] for m in everything if m["level"] in ("warning", "error")]
    find(chosen, "csgw-warn-level")
    assert _find(chosen, "csgw-info-level") is None


async def test_since_returns_only_later_messages(env: DevtoolsEnv, page: int) -> None:
    everything = await console(env.client, page)
    warn = find(everything, "csgw-warn-level")
    later = [m["id"] for m in everything[everything.index(warn) + 1:]]

    since = await console(env.client, page, since=warn["id"])

    assert [m["id"] for m in since] == later
    assert _find(since, "csgw-warn-level") is None
    find(since, "csgw-error-level")


async def test_limit_caps_the_answer(env: DevtoolsEnv, page: int) -> None:
    everything = await console(env.client, page)
    assert len(everything) > 3
    ids = [m["id"] for m in everything]

    three = [m["id"] for m in await console(env.client, page, limit=3)]

    assert len(three) == 3
    start = ids.index(three[0])
    assert ids[start:start + 3] == three, "limit returns a contiguous run of messages"


async def test_an_unknown_level_is_refused(env: DevtoolsEnv, page: int) -> None:
    error = await call_err(env.client, "console_messages", {"tab": page, "level": "loud"},
                           timeout=ERROR_BOUND)
    assert "level" in error.lower()


# ---------------------------------------------------------------- collection coverage


async def test_messages_logged_while_loading_are_there(env: DevtoolsEnv) -> None:
    """navigate (waits for load), then list: what the page logged while loading is kept."""
    site = env.site("h2")
    tab = await open_page(env.client, site, "/many.html?n=5", "h2")
    try:
        messages = await console(env.client, tab)
        assert [m["text"] for m in messages] == [f"csgw-many {i}" for i in range(5)]
        assert {m["level"] for m in messages} == {"info"}
    finally:
        await call_ok(env.client, "close_tab", {"tab": tab})


async def test_a_tab_opened_with_a_url_is_watched_from_the_start(env: DevtoolsEnv) -> None:
    site = env.site("h1")
    url = site.url(f"/popup.html?run={uuid.uuid4().hex}")
    opened = await call_ok(env.client, "new_tab", {"target": "h1", "url": url})
    tab = opened["tab"]
    try:
        messages = await _wait_for_messages(
            env.client, tab, lambda ms: _find(ms, "csgw-popup-loaded") is not None)
        assert find(messages, "csgw-popup-loaded")["level"] == "warning"
    finally:
        await call_ok(env.client, "close_tab", {"tab": tab})


async def test_a_popup_is_watched_before_anyone_calls_it(env: DevtoolsEnv) -> None:
    """A tab the page opens itself: its load-time messages are there on the first call."""
    site = env.site("h1")
    path = f"/popup.html?run={uuid.uuid4().hex}"
    opener = await open_page(env.client, site, "/many.html?n=1", "h1")
    popup = None
    try:
        await call_ok(env.client, "evaluate", {
            "tab": opener, "expression": f"window.open('{path}', '_blank') !== null"})

        async def popup_tab() -> int | None:
            tabs = (await call_ok(env.client, "list_tabs", {"target": "h1"}))["tabs"]
            hits = [t["tab"] for t in tabs if t["url"] == site.url(path)]
            return hits[0] if hits else None

        popup = await eventually(popup_tab, until=present,
                                 timeout=SETTLE_TIMEOUT, what="the popup tab")
        messages = await _wait_for_messages(
            env.client, popup, lambda ms: _find(ms, "csgw-popup-loaded") is not None)
        assert find(messages, "csgw-popup-loaded")["level"] == "warning"
        assert _find(messages, "csgw-many 0") is None, "the opener's messages stay the opener's"
    finally:
        for tab in (popup, opener):
            if tab is not None:
                await call_ok(env.client, "close_tab", {"tab": tab})


async def test_messages_are_marked_with_their_navigation(env: DevtoolsEnv) -> None:
    site = env.site("h1")
    tab = await open_page(env.client, site, "/many.html?n=1", "h1")
    try:
        await open_page(env.client, site, "/popup.html", "h1", tab=tab)
        messages = await console(env.client, tab)
        first, second = find(messages, "csgw-many 0"), find(messages, "csgw-popup-loaded")
        marks = [{k: v for k, v in m.items() if "nav" in k.lower()} for m in (first, second)]
        assert all(marks), f"messages carry a navigation field: {dump(messages)[:800]}"
        assert marks[0] != marks[1], f"two navigations, two marks: {marks}"
    finally:
        await call_ok(env.client, "close_tab", {"tab": tab})


# ---------------------------------------------------------------------- two targets


async def test_two_targets_at_once_keep_their_own_messages(env: DevtoolsEnv) -> None:
    results: dict[str, tuple[PageSite, list[dict[str, Any]]]] = {}

    async def run(target: str) -> None:
        site = env.site(target)
        tab = await open_page(env.client, site, "/devtools.html", target)
        try:
            await settle(env.client, tab)
            messages = await _wait_for_messages(
                env.client, tab, lambda ms: _find(ms, "CORS policy") is not None)
            results[target] = (site, messages)
        finally:
            await call_ok(env.client, "close_tab", {"tab": tab})

    async with anyio.create_task_group() as tg:
        for target in ("h1", "h2"):
            tg.start_soon(run, target)

    for target, (site, messages) in results.items():
        other = env.site("h2" if target == "h1" else "h1")
        text = dump(messages)
        find(messages, "csgw-uncaught-exception")
        assert f"127.0.0.1:{site.ports['a']}/" in text
        if other.ports["a"] not in site.ports.values():
            assert f"127.0.0.1:{other.ports['a']}/" not in text, (
                f"{target} shows the other host's messages")
