"""gateway.mcp.call_log's call log: what a record becomes on disk, whatever a client sent."""

from __future__ import annotations

import json
from pathlib import Path

from gateway.mcp.call_log import MAX_LOGGED_CHARS, CallLog, bounded
from gateway.mcp.calls import MAX_ERROR_CHARS, error_text


def _written(tmp_path: Path, record: dict[str, object]) -> tuple[str, dict[str, object]]:
    log = CallLog.open(tmp_path / "calls.jsonl")
    try:
        log.write(record)
    finally:
        log.close()
    text = (tmp_path / "calls.jsonl").read_text()
    assert text.count("\n") == 1 and text.endswith("\n")
    return text, json.loads(text)


def test_a_10_mb_argument_is_cut_and_the_cut_is_said(tmp_path: Path) -> None:
    huge = "x" * 10_000_000
    text, line = _written(tmp_path, {"tool": "evaluate", "arguments": {
        "expression": huge, "nested": [{"url": huge}], huge: 1}, "error": huge})
    assert len(text) < 8 * MAX_LOGGED_CHARS
    args = line["arguments"]
    assert isinstance(args, dict)
    cut = f"{'x' * MAX_LOGGED_CHARS}…[{10_000_000 - MAX_LOGGED_CHARS} more characters]"
    assert args["expression"] == cut
    assert args["nested"] == [{"url": cut}]
    assert args[cut] == 1  # a huge key is cut like a value
    assert line["error"] == cut


def test_short_values_are_kept_exactly(tmp_path: Path) -> None:
    record: dict[str, object] = {"tool": "navigate", "arguments": {
        "url": "u" * MAX_LOGGED_CHARS, "tab": 3, "wait": None, "flag": True, "ratio": 0.5}}
    _, line = _written(tmp_path, record)
    assert line == record


def test_redaction_happens_before_the_cut(tmp_path: Path) -> None:
    """A secret header far into a long raw header text is still redacted, not cut in half."""
    headers = "GET / HTTP/1.1\r\n" + "X-Pad: p\r\n" * 1000 + "Cookie: SECRET-COOKIE-77\r\n"
    _, line = _written(tmp_path, {"arguments": {"params": {"headersText": headers,
                                                           "headers": {"Cookie": "SECRET-2"}}}})
    assert "SECRET" not in json.dumps(line)


def test_bounded_copes_with_every_json_shape() -> None:
    value = {"a": [1, 2.5, None, False, ("t", "u" * 10)], "b": {"c": "d" * 20}}
    assert bounded(value, limit=5) == {
        "a": [1, 2.5, None, False, ["t", "uuuuu…[5 more characters]"]],
        "b": {"c": "ddddd…[15 more characters]"}}


def test_error_text_is_cut_for_the_client() -> None:
    assert error_text(ValueError("short")) == "short"
    long = error_text(ValueError("e" * (MAX_ERROR_CHARS + 123)))
    assert long == "e" * MAX_ERROR_CHARS + "… [error text cut: 123 more characters]"
