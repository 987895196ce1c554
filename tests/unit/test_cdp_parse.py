"""``parse_message``: the fast parser where it can, ``json``'s where it cannot."""

from __future__ import annotations

import json

import pytest

from gateway.cdp.frames import parse_message


@pytest.mark.parametrize("text", [
    '{"id": 7, "result": {"result": {"type": "number", "value": 2}}}',
    '{"method": "Runtime.consoleAPICalled", "params": {"args": [{"value": "\\ud83d\\ude00"}]}}',
    '{"a": -0.0, "b": 1e308, "c": 18446744073709551615, "d": "\\u0000", "e": null}',
])
def test_same_value_as_json(text: str) -> None:
    assert parse_message(text) == json.loads(text)
    assert parse_message(text.encode()) == json.loads(text)


def test_integers_beyond_64_bits_are_the_javascript_number() -> None:
    """Every CDP number is a JavaScript double: a literal beyond 64 bits (as a page's
    ``1e20`` prints) arrives as that double, not as a Python int JavaScript never had."""
    value = parse_message('{"v": 100000000000000000000, "w": 12345678901234567890123}')
    assert value == {"v": 1e20, "w": 12345678901234567890123.0}
    assert type(value["v"]) is float


@pytest.mark.parametrize(("text", "expected"), [
    ('{"v": "lone \\ud800x"}', {"v": "lone \ufffdx"}),
    ('{"params": {"args": [{"value": "\\udc00"}]}, "\\ud800k": 1}',
     {"params": {"args": [{"value": "\ufffd"}]}, "\ufffdk": 1}),
    ('{"v": "pair \\ud83d\\ude00 lone \\ude00"}', {"v": "pair \U0001f600 lone \ufffd"}),
])
def test_lone_surrogates_from_javascript_strings_become_replacement_characters(
    text: str, expected: dict[str, object]
) -> None:
    value = parse_message(text)
    assert value == expected
    json.dumps(value, ensure_ascii=False).encode()  # now it can go out as UTF-8


@pytest.mark.parametrize("text", ["", "{", "not json", '{"a": 1,}'])
def test_text_that_is_not_json_raises_value_error(text: str) -> None:
    with pytest.raises(ValueError):
        parse_message(text)
