"""Event frames read off their text before parsing, and console events kept unparsed.

``fixtures/frames/console.jsonl`` holds every frame one real headless Chromium sent on a
browser websocket with one flattened page session — the console page of
``fixtures/capture_events.py`` and a burst of 200 ``console.log`` calls — as text, exactly
as it came (``fixtures/capture_frames.py``). The connection is the real
``CdpConnection`` taking frames through ``receive``, the tab the real ``Tab``.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from gateway.cdp.connection import CdpConnection
from gateway.cdp.frames import peek_event
from gateway.tabs.console_log import MAX_FRAME, ConsoleLog
from gateway.tabs.tab import Tab

FRAMES = Path(__file__).parents[2] / "fixtures" / "frames" / "console.jsonl"
BURST = 200


@cache
def captured() -> tuple[str, ...]:
    with FRAMES.open() as f:
        return tuple(json.loads(line) for line in f)


def session_of_capture() -> str:
    return next(m["sessionId"] for m in map(json.loads, captured()) if "sessionId" in m)


def fed(*, capacity: int = 1000, take: bool = True) -> tuple[CdpConnection, Tab]:
    """Every captured frame through a connection, its page session feeding a tab."""
    cdp = CdpConnection(object(), name="capture")  # type: ignore[arg-type]  # never sends
    tab = Tab(1, "capture", "T", console=ConsoleLog(capacity))
    cdp.listen(session_of_capture(), tab.on_event, take=tab.take_frame if take else None)
    for frame in captured():
        cdp.receive(frame)
    return cdp, tab


# ------------------------------------------------------------------ peek_event


def test_every_session_event_of_the_capture_is_peeked_exactly() -> None:
    peeked = 0
    for frame in captured():
        message = json.loads(frame)
        got = peek_event(frame)
        if "id" in message or "sessionId" not in message:  # a reply, a browser event
            assert got is None, frame
            continue
        assert got == (message["method"], message["sessionId"]), frame
        assert set(message) == {"method", "params", "sessionId"}
        peeked += 1
    assert peeked > BURST  # the burst, the page's own messages, its lifecycle events


def _console_frame() -> str:
    """The burst's first frame: ``console.log('flood', 1)``."""
    return next(f for f in captured() if '"value":"flood"' in f)


@pytest.mark.parametrize("frame", [
    # not Chrome's outline: parse it as before
    '{"method": "Runtime.consoleAPICalled", "params": {}, "sessionId": "S"}',
    '{"params":{},"method":"Runtime.consoleAPICalled","sessionId":"S"}',
    '{"sessionId":"S","method":"Runtime.consoleAPICalled","params":{}}',
    '{"method":"Runtime.consoleAPICalled","params":{}}',
    '{"method":"Runtime.consoleAPICalled","params":[],"sessionId":"S"}',
    '{"method":"Runtime.console\\u0041PICalled","params":{},"sessionId":"S"}',
    '{"method":"Runtime.consoleAPICalled","params":{},"sessionId":"S\\u0022"}',
    '{"method":"Runtime.consoleAPICalled","params":{},"sessionId":""}',
    # a session id inside params, the object closing after it
    '{"method":"Runtime.consoleAPICalled","params":{"x":{},"sessionId":"S"}}',
    # a string value that spells the key out: its quotes are escaped
    '{"method":"Runtime.consoleAPICalled","params":{"v":"},\\"sessionId\\":\\"S"}',
    '{"id":7,"result":{},"sessionId":"S"}',
    "",
])
def test_a_frame_not_in_chromes_outline_is_not_peeked(frame: str) -> None:
    assert peek_event(frame) is None


def test_a_value_spelling_the_session_key_does_not_hide_the_real_one() -> None:
    frame = ('{"method":"Runtime.consoleAPICalled","params":{"v":"},\\"sessionId\\":\\"X"},'
             '"sessionId":"REAL"}')
    assert peek_event(frame) == ("Runtime.consoleAPICalled", "REAL")
    assert json.loads(frame)["sessionId"] == "REAL"


# ------------------------------------------------------- console frames unparsed


def test_console_frames_taken_unparsed_read_the_same_as_parsed_ones() -> None:
    _, parsed = fed(take=False)
    _, taken = fed(take=True)
    assert taken.console.query(limit=10_000) == parsed.console.query(limit=10_000)
    texts = [e.text for e in taken.console.query(limit=10_000)]
    assert texts[-BURST:] == [f"flood {n}" for n in range(1, BURST + 1)]
    assert any(e.source == "exception" and e.stack for e in taken.console.query(limit=10_000))
    assert taken.console.last_id == parsed.console.last_id
    # Filtered by level, too: error entries (console.error, assert, exceptions) alone.
    assert taken.console.query({"error"}, limit=100) == parsed.console.query({"error"}, limit=100)


def test_a_flood_pushed_out_of_the_ring_is_counted_and_never_parsed() -> None:
    cdp, tab = fed(capacity=50)
    # A frame in the outline whose params are not JSON: taken as text, then pushed out
    # by fifty more — were it parsed, the console would count it malformed.
    broken = _console_frame().replace('"params":{', '"params":{oops', 1)
    cdp.receive(broken)
    for _ in range(50):
        cdp.receive(_console_frame())
    log = tab.console
    entries = log.query(limit=100)
    assert len(entries) == 50 and log.malformed == 0
    total = sum(f.startswith('{"method":"Runtime.') and (
        "consoleAPICalled" in f[:40] or "exceptionThrown" in f[:40]) for f in captured())
    assert log.dropped == total + 1  # the capture's and the broken frame: all pushed out
    assert log.last_id == total + 1 + 50
    assert cdp.dropped_frames == {}  # nothing reached the parser to be dropped there


def test_a_kept_frame_that_is_not_a_console_event_is_counted_malformed_when_read() -> None:
    cdp, tab = fed(capacity=1000)
    before = tab.console.last_id
    cdp.receive(_console_frame().replace('"params":{', '"params":{oops', 1))
    cdp.receive(_console_frame().replace('"args":[', '"args":7,"x":[', 1))
    assert tab.console.last_id == before + 2  # taken on arrival, ids given
    ids = [e.id for e in tab.console.query(limit=10_000)]
    assert tab.console.malformed == 2 and ids[-1] == before  # both gone once read


def test_a_waiter_or_a_tap_on_console_events_gets_them_parsed() -> None:
    cdp = CdpConnection(object(), name="capture")  # type: ignore[arg-type]
    tab = Tab(1, "capture", "T")
    cdp.listen(session_of_capture(), tab.on_event, take=tab.take_frame)
    arrival = tab.expect("Runtime.consoleAPICalled")
    tapped: list[dict[str, Any]] = []
    tab.subscribe("Runtime.consoleAPICalled", lambda _, params: tapped.append(params))
    cdp.receive(_console_frame())
    assert arrival.done and tapped and tapped[0]["type"] == "log"
    assert [e.text for e in tab.console.query()] == ["flood 1"]


def test_a_long_frame_is_parsed_at_once() -> None:
    cdp = CdpConnection(object(), name="capture")  # type: ignore[arg-type]
    tab = Tab(1, "capture", "T")
    cdp.listen(session_of_capture(), tab.on_event, take=tab.take_frame)
    long = _console_frame().replace('"value":"flood"', '"value":"' + "x" * MAX_FRAME + '"', 1)
    assert not tab.take_frame("Runtime.consoleAPICalled", long)
    cdp.receive(long)
    assert tab.console.query()[0].text.startswith("x" * 100)


def test_a_removed_listener_takes_no_more_frames() -> None:
    cdp = CdpConnection(object(), name="capture")  # type: ignore[arg-type]
    tab = Tab(1, "capture", "T")
    remove = cdp.listen(session_of_capture(), tab.on_event, take=tab.take_frame)
    remove()
    cdp.receive(_console_frame())
    assert tab.console.last_id == 0 and cdp.listener_count == 0
