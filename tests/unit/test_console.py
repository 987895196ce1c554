"""gateway.tabs.console_log: real Chromium console events in, the entries an agent reads out.

The replays use fixtures/events/*.jsonl (captured by fixtures/capture_events.py
from headless Chromium); the page sources are in that script. Line and column
numbers below are 1-based positions in those page sources.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

import pytest

from gateway.tabs.console_log import (
    KEEP_NAVIGATIONS,
    LEVELS,
    MAX_TEXT,
    ConsoleEntry,
    ConsoleLog,
)
from tests.unit.cdp_events import load, manifest, replay

ORIGIN = manifest()["origin_a"]
CONSOLE_PAGE = f"{ORIGIN}/console.html"
ISO_UTC = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


def console_page_log() -> ConsoleLog:
    log = ConsoleLog()
    replay(load("console"), log)
    return log


def by_source(log: ConsoleLog, source: str) -> list[ConsoleEntry]:
    return [e for e in log.query(limit=10_000) if e.source == source]


# ------------------------------------------------------------------ real events


def test_console_calls_levels_texts_and_locations() -> None:
    got = [(e.level, e.text, e.url) for e in by_source(console_page_log(), "console")]
    assert got == [
        ("info", "plain log", f"{CONSOLE_PAGE}:5:9"),
        # %s %d %f %i substituted in order
        ("info", "cart has 3 items at 4.5 each, 13 in total", f"{CONSOLE_PAGE}:6:9"),
        # %c consumes its CSS argument and prints nothing
        ("info", "styled plain", f"{CONSOLE_PAGE}:7:9"),
        # %o of an object: its description (DevTools would expand the preview)
        ("info", "info with object Object", f"{CONSOLE_PAGE}:8:9"),
        ("warning", "warn Object Array(2)", f"{CONSOLE_PAGE}:9:9"),
        ("error", "error: bad thing", f"{CONSOLE_PAGE}:10:9"),
        ("debug", "debug detail", f"{CONSOLE_PAGE}:11:9"),
        ("info", "100% done now", f"{CONSOLE_PAGE}:12:9"),
        # a specifier without an argument stays as written
        ("info", "missing one and %s", f"{CONSOLE_PAGE}:13:9"),
        # non-string first argument: no formatting, values and unserializables joined
        ("info", "42 true null undefined 10n NaN -0 Infinity", f"{CONSOLE_PAGE}:14:9"),
        # V8 already applied %d's integer conversion to the argument (4.7 arrives as 4)
        ("info", "4 apples", f"{CONSOLE_PAGE}:15:9"),
        ("error", "assertion text x", f"{CONSOLE_PAGE}:16:9"),
        ("info", "trace here", f"{CONSOLE_PAGE}:17:29"),
        ("info", "clicks: 1", f"{CONSOLE_PAGE}:19:9"),
    ]


def test_console_stacks_only_for_error_assert_and_trace() -> None:
    entries = {e.text: e for e in by_source(console_page_log(), "console")}
    assert entries["error: bad thing"].stack == f"    at <anonymous> ({CONSOLE_PAGE}:10:9)"
    assert entries["assertion text x"].stack == f"    at <anonymous> ({CONSOLE_PAGE}:16:9)"
    assert entries["trace here"].stack == (f"    at traced ({CONSOLE_PAGE}:17:29)\n"
                                           f"    at <anonymous> ({CONSOLE_PAGE}:18:1)")
    with_stack = {text for text, e in entries.items() if e.stack is not None}
    assert with_stack == {"error: bad thing", "assertion text x", "trace here"}


def test_uncaught_exceptions_and_rejections_with_stacks() -> None:
    exceptions = by_source(console_page_log(), "exception")
    # the setTimeout throw and the rejection may land before or after the later
    # scripts' errors, depending on when the parser yields: compare by text
    assert sorted((e.level, e.text, e.url) for e in exceptions) == sorted([
        ("error", "Uncaught a bare string", f"{CONSOLE_PAGE}:30:1"),
        ("error", "Uncaught TypeError: Cannot read properties of null (reading 'prop')",
         f"{CONSOLE_PAGE}:33:6"),
        ("error", "Uncaught Error: uncaught boom", f"{CONSOLE_PAGE}:22:28"),
        ("error", "Uncaught (in promise) Error: rejected nope", f"{CONSOLE_PAGE}:27:16"),
    ])
    stacks = {e.text: e.stack for e in exceptions}
    # a thrown non-Error has no description: the stack comes from the call frames
    assert stacks["Uncaught a bare string"] == f"    at <anonymous> ({CONSOLE_PAGE}:30:1)"
    # an Error's own stack text (V8's description) is kept as it is
    assert stacks["Uncaught TypeError: Cannot read properties of null (reading 'prop')"] == (
        "TypeError: Cannot read properties of null (reading 'prop')\n"
        f"    at {CONSOLE_PAGE}:33:6")
    assert stacks["Uncaught Error: uncaught boom"] == (
        f"Error: uncaught boom\n    at thrower ({CONSOLE_PAGE}:22:28)\n"
        f"    at outer ({CONSOLE_PAGE}:23:20)")
    assert stacks["Uncaught (in promise) Error: rejected nope"] == (
        f"Error: rejected nope\n    at {CONSOLE_PAGE}:27:16")


def test_browser_log_entries_failed_loads() -> None:
    network = by_source(console_page_log(), "network")
    assert [(e.level, e.text, e.url) for e in network] == [
        ("error", "Failed to load resource: the server responded with a status of 404 "
                  "(Not Found)", f"{ORIGIN}/missing.png"),
        ("error", "Failed to load resource: the server responded with a status of 404 "
                  "(Not Found)", f"{ORIGIN}/favicon.ico"),
    ]
    assert all(e.stack is None for e in network)


def test_network_page_cors_and_websocket_messages() -> None:
    log = ConsoleLog()
    replay(load("network"), log)
    refused = manifest()["refused_port"]
    entries = log.query(limit=10_000)
    cors = [e for e in entries if "blocked by CORS policy" in e.text]
    assert len(cors) == 1 and cors[0].level == "error" and cors[0].source == "javascript"
    assert cors[0].text.startswith(f"Access to fetch at '{manifest()['origin_b']}/nocors' "
                                   f"from origin '{ORIGIN}'")
    socket = [e for e in entries if e.text.startswith("WebSocket connection")]
    assert [e.text for e in socket] == [
        f"WebSocket connection to 'ws://127.0.0.1:{refused}/' failed: "
        "Error in connection establishment: net::ERR_CONNECTION_REFUSED"]
    # Log.entryAdded carries a stack for it: the JS that opened the socket
    assert socket[0].stack is not None and "    at socketOutcome (" in socket[0].stack
    assert socket[0].url == f"{ORIGIN}/network.html:12"  # a log entry has a line, no column
    refused_loads = [e.url for e in entries
                     if e.text == "Failed to load resource: net::ERR_CONNECTION_REFUSED"]
    assert sorted(refused_loads) == [f"http://127.0.0.1:{refused}/refused",
                                     f"http://127.0.0.1:{refused}/refused.png"]


def test_times_are_the_event_timestamps_in_utc() -> None:
    log = ConsoleLog()
    events = load("console")
    replay(events, log)
    first_call = next(p for m, p in events if m == "Runtime.consoleAPICalled")
    expected = datetime.fromtimestamp(first_call["timestamp"] / 1000, UTC)
    entries = log.query(limit=10_000)
    (plain,) = [e for e in entries if e.text == "plain log"]
    assert plain.time == expected.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    assert all(ISO_UTC.match(e.time) for e in entries)
    # all within the few seconds the capture took
    times = [datetime.fromisoformat(e.time.replace("Z", "+00:00")) for e in entries]
    assert 0 <= (max(times) - min(times)).total_seconds() < 30


def test_level_filter_on_real_entries() -> None:
    log = console_page_log()
    assert {e.level for e in log.query(limit=10_000)} == set(LEVELS)
    assert [e.text for e in log.query({"warning"})] == ["warn Object Array(2)"]
    assert [e.text for e in log.query({"debug"})] == ["debug detail"]
    errors = log.query({"error"})
    assert len(errors) == 8  # console.error, assert, 4 exceptions, 2 failed loads
    assert {e.source for e in errors} == {"console", "exception", "network"}
    both = log.query({"warning", "debug"})
    assert [e.level for e in both] == ["warning", "debug"]
    assert log.query({"no-such-level"}) == []


def test_since_and_limit_on_real_entries() -> None:
    log = console_page_log()
    everything = log.query(limit=10_000)
    ids = [e.id for e in everything]
    assert ids == list(range(1, len(ids) + 1))
    assert log.last_id == ids[-1]
    assert log.query() == everything  # default limit 100 > what is there
    # since is exclusive; limit keeps the newest, returned oldest first
    assert [e.id for e in log.query(since=5)] == ids[5:]
    assert [e.id for e in log.query(limit=3)] == ids[-3:]
    assert [e.id for e in log.query(since=5, limit=2)] == ids[-2:]
    assert log.query(since=log.last_id) == []
    assert log.query(limit=0) == []
    # the filters combine: errors after id 10, newest two
    errors_after = [e.id for e in everything if e.id > 10 and e.level == "error"]
    assert [e.id for e in log.query({"error"}, since=10, limit=2)] == errors_after[-2:]


# ------------------------------------------------------------------ navigations


def test_real_navigations_keep_the_last_three_page_loads() -> None:
    log = ConsoleLog()
    replay(load("navigations"), log, frame_id=manifest()["pages"]["navigations"])
    assert log.navigation == 5
    kept = log.query(limit=10_000)
    assert [(e.text, e.navigation) for e in kept] == [
        ("nav 3 loaded", 3), ("nav 4 loaded", 4), ("nav 5 loaded", 5)]
    assert log.dropped == 0  # pruned by navigation is not "dropped"


def log_line(text: str, level: str = "log") -> tuple[str, dict[str, Any]]:
    return ("Runtime.consoleAPICalled",
            {"type": level, "args": [{"type": "string", "value": text}],
             "timestamp": 1_796_000_000_000.0, "executionContextId": 1})


def test_navigation_epochs_prune_oldest() -> None:
    log = ConsoleLog()
    log.on_event(*log_line("before any navigation"))
    for n in range(1, 6):
        log.navigated()
        log.on_event(*log_line(f"page {n}"))
        log.on_event(*log_line(f"page {n} again"))
        oldest = max(0, n - KEEP_NAVIGATIONS + 1)
        assert {e.navigation for e in log.query(limit=100)} == set(range(oldest, n + 1))
    assert KEEP_NAVIGATIONS == 3
    assert [e.text for e in log.query()] == ["page 3", "page 3 again", "page 4", "page 4 again",
                                             "page 5", "page 5 again"]
    # ids keep counting: pruning never reuses one
    assert [e.id for e in log.query()] == [6, 7, 8, 9, 10, 11]
    assert log.last_id == 11


def test_navigations_without_entries_empty_the_log() -> None:
    log = ConsoleLog()
    log.on_event(*log_line("old"))
    for _ in range(KEEP_NAVIGATIONS):
        log.navigated()
    assert log.query() == [] and log.last_id == 0
    log.on_event(*log_line("new"))
    assert [(e.id, e.navigation) for e in log.query()] == [(2, 3)]


# ------------------------------------------------------------------ ring buffer


def test_ring_buffer_drops_oldest_and_counts() -> None:
    log = ConsoleLog(capacity=3)
    for n in range(1, 8):
        log.on_event(*log_line(f"line {n}"))
    assert log.dropped == 4
    assert [(e.id, e.text) for e in log.query()] == [(5, "line 5"), (6, "line 6"),
                                                     (7, "line 7")]
    # a since pointing at a dropped id returns what is left after it
    assert [e.id for e in log.query(since=2)] == [5, 6, 7]
    assert [e.id for e in log.query(since=6)] == [7]


def test_ring_buffer_with_real_events() -> None:
    events = load("console")
    full = ConsoleLog()
    replay(events, full)
    total = len(full.query(limit=10_000))
    small = ConsoleLog(capacity=5)
    replay(events, small)
    assert small.dropped == total - 5
    assert small.query(limit=10_000) == full.query(limit=5)


# ------------------------------------------------------------------ formatting


def s(value: str) -> dict[str, Any]:
    return {"type": "string", "value": value}


def n(value: float) -> dict[str, Any]:
    return {"type": "number", "value": value, "description": str(value)}


def console_text(*args: dict[str, Any], kind: str = "log") -> str:
    log = ConsoleLog()
    log.on_event("Runtime.consoleAPICalled", {"type": kind, "args": list(args),
                                              "timestamp": 1.0})
    (entry,) = log.query()
    return entry.text


@pytest.mark.parametrize(("args", "text"), [
    ((s("%s and %s"), s("a"), s("b")), "a and b"),
    ((s("%d/%i/%f"), n(1), n(2), n(2.5)), "1/2/2.5"),
    ((s("%o|%O"), {"type": "object", "className": "Object", "description": "Object"},
      {"type": "object", "subtype": "array", "className": "Array", "description": "Array(3)"}),
     "Object|Array(3)"),
    ((s("%cred%c plain"), s("color: red"), s("")), "red plain"),
    ((s("%c"), s("color: red")), ""),
    ((s("100%%"),), "100%"),
    ((s("%s"), s("a"), s("extra"), n(3)), "a extra 3"),          # leftovers appended
    ((s("%s %s %d"),), "%s %s %d"),                               # nothing to substitute
    ((s("%x %5d %s"), s("v")), "%x %5d v"),                       # unknown specs untouched
    ((n(5), s("%s"), s("x")), "5 %s x"),                          # only a leading string formats
    ((s("no specifiers"), s("b")), "no specifiers b"),
    (({"type": "number", "unserializableValue": "-Infinity", "description": "-Infinity"},),
     "-Infinity"),
    (({"type": "symbol", "description": "Symbol(tag)"},), "Symbol(tag)"),
    (({"type": "function", "className": "Function", "description": "function f() {}"},),
     "function f() {}"),
    (({"type": "object", "value": {"k": ["ü", 1]}},), '{"k": ["ü", 1]}'),
    (({"type": "undefined"},), "undefined"),
])
def test_format_specifiers(args: tuple[dict[str, Any], ...], text: str) -> None:
    assert console_text(*args) == text


def test_argumentless_calls_are_named_after_their_kind() -> None:
    assert console_text(kind="endGroup") == "endGroup"
    assert console_text(kind="log") == ""
    log = ConsoleLog()
    for kind in ("endGroup", "clear", "profile"):
        log.on_event("Runtime.consoleAPICalled", {"type": kind, "args": []})
    assert {e.level for e in log.query()} == {"debug"}


@pytest.mark.parametrize(("kind", "level"), [
    ("error", "error"), ("assert", "error"), ("warning", "warning"), ("info", "info"),
    ("log", "info"), ("table", "info"), ("count", "info"), ("timeEnd", "info"),
    ("debug", "debug"), ("endGroup", "debug"), ("something-new", "info"),
])
def test_console_kind_to_level(kind: str, level: str) -> None:
    log = ConsoleLog()
    log.on_event("Runtime.consoleAPICalled", {"type": kind, "args": [s("x")]})
    assert log.query()[0].level == level


@pytest.mark.parametrize(("level", "expected"), [
    ("error", "error"), ("warning", "warning"), ("info", "info"), ("verbose", "debug")])
def test_log_entry_levels_and_location(level: str, expected: str) -> None:
    log = ConsoleLog()
    log.on_event("Log.entryAdded", {"entry": {
        "source": "violation", "level": level, "text": "t", "timestamp": 1_796_000_000_000.0,
        "url": "https://app.test/x.js", "lineNumber": 41}})
    (entry,) = log.query()
    assert (entry.level, entry.source, entry.url) == (expected, "violation",
                                                      "https://app.test/x.js:42")
    assert entry.time == "2026-11-30T00:53:20.000Z"


def test_long_text_is_cut_and_says_how_much() -> None:
    log = ConsoleLog()
    log.on_event(*log_line("x" * (MAX_TEXT + 123)))
    (entry,) = log.query()
    assert entry.text == "x" * MAX_TEXT + "… [123 more characters]"
    log.on_event(*log_line("y" * MAX_TEXT))
    assert log.query()[-1].text == "y" * MAX_TEXT


def test_long_url_is_shortened() -> None:
    url = "https://app.test/" + "p" * 400
    log = ConsoleLog()
    log.on_event("Log.entryAdded", {"entry": {"level": "info", "text": "t", "url": url,
                                              "lineNumber": 0}})
    location = log.query()[0].url
    assert location == url[:299] + "…:1"


def test_exception_without_exception_object_uses_its_text() -> None:
    log = ConsoleLog()
    log.on_event("Runtime.exceptionThrown", {"timestamp": 1_796_000_000_000.0, "exceptionDetails": {
        "exceptionId": 1, "text": "Uncaught SyntaxError: Unexpected token '}'",
        "lineNumber": 3, "columnNumber": 7, "url": "https://app.test/a.js",
        "stackTrace": {"callFrames": [{"functionName": "f", "url": "https://app.test/a.js",
                                       "lineNumber": 3, "columnNumber": 7}]}}})
    (entry,) = log.query()
    assert entry.text == "Uncaught SyntaxError: Unexpected token '}'"
    assert entry.url == "https://app.test/a.js:4:8"
    assert entry.stack == "    at f (https://app.test/a.js:4:8)"


def test_unrelated_events_are_ignored() -> None:
    log = ConsoleLog()
    for method, params in load("network"):
        if not method.startswith(("Runtime.consoleAPICalled", "Runtime.exceptionThrown",
                                  "Log.")):
            log.on_event(method, params)
    assert log.query() == [] and log.last_id == 0
