"""gateway.mcp.stdio: which unreadable request lines get an answer, and for which id."""

from __future__ import annotations

import pytest

from gateway.mcp.stdio import request_id_of

DEEP = "[" * 300 + "]" * 300


@pytest.mark.parametrize(("line", "expected"), [
    ('{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"x":' + DEEP + "}}", 7),
    ('{"jsonrpc": "2.0", "id": "req-1", "method": "x", "params": ' + DEEP + "}", "req-1"),
    ('  {"id":-3,"jsonrpc":"2.0","method":"x","params":' + DEEP + "}", -3),
    ('{"jsonrpc":"2.0","id":"a\\"b","method":"x","params":1', 'a"b'),
    ('{"jsonrpc":"2.0","method":"x","id":12}', 12),        # no params at all
])
def test_the_top_level_id_is_found(line: str, expected: int | str) -> None:
    assert request_id_of(line) == expected


@pytest.mark.parametrize("line", [
    # The only "id" is inside params: answering it would fail some other call.
    '{"jsonrpc":"2.0","method":"x","params":{"id":5,"y":' + DEEP + '},"id":9}',
    # An "id" inside a nested object before params is not the request's.
    '{"jsonrpc":"2.0","meta":{"id":5},"method":"x","params":' + DEEP + "}",
    '{"jsonrpc":"2.0","method":"notifications/x","params":' + DEEP + "}",   # a notification
    "not json at all",
    '{"jsonrpc":"2.0","id":1.5,"method":"x"}',                             # not an integer id
    "",
])
def test_no_id_when_it_cannot_be_told_for_sure(line: str) -> None:
    assert request_id_of(line) is None
