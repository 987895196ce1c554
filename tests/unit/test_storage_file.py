"""The storage-state file model (``gateway.page.storage.file``).

``fixtures/storage/playwright-storage-state.json`` is a state in Playwright's documented
shape, laid out as Playwright writes it (``JSON.stringify(state, undefined, 2)``): it
must read and write back byte for byte. ``chrome156-storage-getcookies.json`` is what
Chrome 156 answered to ``Storage.getCookies`` for a context with an HttpOnly Lax session
cookie, a persistent Strict one and one set without SameSite (captured through the
gateway's ``cdp_command``, so the values read ``[redacted]``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gateway.errors import InvalidArgument
from gateway.page.storage.file import MAX_STATE_BYTES, Cookie, parse_state

FIXTURES = Path(__file__).parents[2] / "fixtures" / "storage"
PLAYWRIGHT = FIXTURES / "playwright-storage-state.json"
CHROME = FIXTURES / "chrome156-storage-getcookies.json"


def test_a_playwright_state_round_trips_byte_for_byte() -> None:
    data = PLAYWRIGHT.read_bytes()
    state = parse_state(data, "pw.json")
    assert [c.name for c in state.cookies] == ["session", "_ga", "csrf"]
    assert [(c.expires, c.same_site, c.http_only) for c in state.cookies] == [
        (-1, "Lax", True), (1799202000.123456, "None", False), (1767234000, "Strict", False)]
    assert [(o.origin, len(o.local_storage)) for o in state.origins] == [
        ("https://app.example.com", 2), ("http://localhost:3000", 1)]
    assert state.to_json() == data


def test_keys_playwright_may_add_are_read_and_left_out() -> None:
    raw = json.loads(PLAYWRIGHT.read_text())
    raw["cookies"][0]["partitionKey"] = "https://example.com"
    raw["origins"][0]["indexedDB"] = []
    state = parse_state(json.dumps(raw).encode(), "pw.json")
    assert state.to_json() == PLAYWRIGHT.read_bytes()


def test_chrome_cookies_become_playwright_cookies_and_back() -> None:
    captured = json.loads(CHROME.read_text())["cookies"]
    cookies = [Cookie.from_cdp(c) for c in captured]
    dumped = [c.model_dump(by_alias=True) for c in cookies]
    assert [(c["name"], c["expires"], c["sameSite"], c["httpOnly"]) for c in dumped] == [
        ("sid", -1, "Lax", True), ("theme", captured[1]["expires"], "Strict", False),
        ("plain", -1, "Lax", False)]  # no SameSite from Chrome: its default, Lax
    assert all(set(c) == {"name", "value", "domain", "path", "expires", "httpOnly",
                          "secure", "sameSite"} for c in dumped)
    params = [c.to_cdp() for c in cookies]
    assert "expires" not in params[0] and "expires" not in params[2]  # session cookies
    assert params[1]["expires"] == captured[1]["expires"]
    assert {k: params[1][k] for k in ("name", "domain", "path", "sameSite", "secure")} == {
        "name": "theme", "domain": "127.0.0.1", "path": "/", "sameSite": "Strict",
        "secure": False}


@pytest.mark.parametrize(("data", "says"), [
    (b"\xff\xfe not text", "is not JSON"),
    (b'{"cookies": [], ', "is not JSON (line 1, column"),
    (b"[]", "the top level: Input should be a valid dictionary"),
    (b'{"cookies": []}', "origins: Field required"),
    (b'{"cookies": [{"name": "a", "value": "SECRET-1", "domain": "x", "path": "/", '
     b'"expires": -1, "httpOnly": false, "secure": false}], "origins": []}',
     "cookies.0.sameSite: Field required"),
    (b'{"cookies": [{"name": "a", "value": "SECRET-1", "domain": "x", "path": "/", '
     b'"expires": "soon", "httpOnly": false, "secure": false, "sameSite": "Lax"}], '
     b'"origins": []}', "cookies.0.expires"),
    (b'{"cookies": [], "origins": [{"origin": "file:///etc", "localStorage": []}]}',
     "origins.0.origin: Value error, an origin is http(s)://host[:port]"),
    (b'{"cookies": [], "origins": [{"origin": "https://a.example/x", "localStorage": []}]}',
     "origins.0.origin"),
    (b'{"cookies": [], "origins": [{"origin": "https://a.example", '
     b'"localStorage": [{"name": "k", "value": 7}]}]}', "origins.0.localStorage.0.value"),
])
def test_what_is_not_a_storage_state_is_refused_saying_where(data: bytes, says: str) -> None:
    with pytest.raises(InvalidArgument) as refused:
        parse_state(data, "/tmp/state.json")
    message = str(refused.value)
    assert message.startswith("/tmp/state.json is not ") and says in message, message
    assert "SECRET-1" not in message and "soon" not in message  # never the values


def test_many_problems_are_counted_not_all_listed() -> None:
    cookies = [{"name": f"c{i}"} for i in range(10)]
    with pytest.raises(InvalidArgument) as refused:
        parse_state(json.dumps({"cookies": cookies, "origins": []}).encode(), "s.json")
    assert "more)" in str(refused.value) and str(refused.value).count("cookies.") == 5


def test_a_file_over_the_bound_is_refused_unparsed() -> None:
    with pytest.raises(InvalidArgument, match="over the limit"):
        parse_state(b" " * (MAX_STATE_BYTES + 1), "big.json")
