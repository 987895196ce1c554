"""gateway.output.redact: the header-shaped places it blanks, and everything it leaves alone."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.output import redact as redact_module
from gateway.output.redact import (
    MAX_DEPTH,
    REDACTED,
    SECRET_HEADERS,
    TEXT_SCAN_LIMIT,
    TOO_DEEP,
    redact,
)

SECRET = "s3cr3t-T0KEN"


def test_constants() -> None:
    assert REDACTED == "[redacted]"
    assert {"cookie", "set-cookie", "authorization", "proxy-authorization"} == SECRET_HEADERS


def test_header_dicts_any_case_any_value_type() -> None:
    event = {
        "requestId": "1",
        "request": {
            "url": "https://example.test/",
            "headers": {
                "Cookie": "sid=" + SECRET,
                "AUTHORIZATION": "Bearer " + SECRET,
                "proxy-authorization": ["Basic " + SECRET],
                "Set-Cookie": {"weird": SECRET},
                "Accept": "text/html",
            },
        },
    }
    assert redact(event) == {
        "requestId": "1",
        "request": {
            "url": "https://example.test/",
            "headers": {
                "Cookie": REDACTED,
                "AUTHORIZATION": REDACTED,
                "proxy-authorization": REDACTED,
                "Set-Cookie": REDACTED,
                "Accept": "text/html",
            },
        },
    }


def test_set_extra_http_headers_params() -> None:
    params = {"headers": {"authorization": "Bearer " + SECRET, "X-Trace": "abc"}}
    assert redact(params) == {"headers": {"authorization": REDACTED, "X-Trace": "abc"}}


def test_set_cookie_params_top_level_cookie_object() -> None:
    for marker in ({"domain": "example.test"}, {"url": "https://x.test"}, {"path": "/"}):
        params = {"name": "sid", "value": SECRET, "httpOnly": True, **marker}
        assert redact(params) == {"name": "sid", "value": REDACTED, "httpOnly": True, **marker}


def test_set_cookies_list_even_without_domain() -> None:
    params = {
        "cookies": [
            {"name": "a", "value": SECRET},
            {"name": "b", "value": SECRET, "domain": ".example.test", "secure": True},
            "not a cookie",
        ]
    }
    assert redact(params) == {
        "cookies": [
            {"name": "a", "value": REDACTED},
            {"name": "b", "value": REDACTED, "domain": ".example.test", "secure": True},
            "not a cookie",
        ]
    }


def test_get_cookies_result_and_extra_info_cookies() -> None:
    result = {"cookies": [{"name": "sid", "value": SECRET, "domain": "x", "size": 3}]}
    assert redact(result) == {
        "cookies": [{"name": "sid", "value": REDACTED, "domain": "x", "size": 3}]
    }
    extra_info = {
        # A cookie object on its own, not in a "cookies" list.
        "exemptedCookies": [
            {"reason": "r", "cookie_obj": {"name": "a", "value": SECRET, "path": "/"}}
        ],
        # The CDP key is "cookie", a secret header name: the whole object goes.
        "associatedCookies": [{"blockedReasons": [], "cookie": {"name": "sid", "value": SECRET}}],
        "blockedCookies": [
            {"cookieLine": f"sid={SECRET}; Path=/", "blockedReasons": ["SameSiteLax"]}
        ],
    }
    assert redact(extra_info) == {
        "exemptedCookies": [
            {"reason": "r", "cookie_obj": {"name": "a", "value": REDACTED, "path": "/"}}
        ],
        "associatedCookies": [{"blockedReasons": [], "cookie": REDACTED}],
        "blockedCookies": [{"cookieLine": REDACTED, "blockedReasons": ["SameSiteLax"]}],
    }


def test_header_arrays() -> None:
    params = {
        "requestId": "interception-1",
        "headers": [
            {"name": "Authorization", "value": "Bearer " + SECRET},
            {"name": "set-cookie", "value": SECRET},
            {"name": "Accept", "value": "*/*"},
        ],
    }
    assert redact(params) == {
        "requestId": "interception-1",
        "headers": [
            {"name": "Authorization", "value": REDACTED},
            {"name": "set-cookie", "value": REDACTED},
            {"name": "Accept", "value": "*/*"},
        ],
    }


def test_har_entry() -> None:
    har = {
        "request": {
            "headers": [{"name": "Cookie", "value": "a=" + SECRET}],
            "cookies": [{"name": "a", "value": SECRET, "expires": None}],
            "queryString": [{"name": "q", "value": "shoes"}],
        }
    }
    assert redact(har) == {
        "request": {
            "headers": [{"name": "Cookie", "value": REDACTED}],
            "cookies": [{"name": "a", "value": REDACTED, "expires": None}],
            "queryString": [{"name": "q", "value": "shoes"}],
        }
    }


def test_raw_header_text() -> None:
    text = (
        "GET / HTTP/1.1\r\n"
        "Host: example.test\r\n"
        f"Cookie: sid={SECRET}; theme=dark\r\n"
        f"authorization:Bearer {SECRET}\r\n"
        f"  Proxy-Authorization :  Basic {SECRET}\r\n"
        "Accept: */*\r\n\r\n"
    )
    out = redact({"requestHeadersText": text, "response": {"headersText": text}})
    expected = (
        "GET / HTTP/1.1\r\n"
        "Host: example.test\r\n"
        f"Cookie: {REDACTED}\r\n"
        f"authorization:{REDACTED}\r\n"
        f"  Proxy-Authorization :  {REDACTED}\r\n"
        "Accept: */*\r\n\r\n"
    )
    assert out == {"requestHeadersText": expected, "response": {"headersText": expected}}


def test_header_lines_in_any_short_string() -> None:
    text = f"pasted:\nSet-Cookie: sid={SECRET}\nX: y"
    assert redact([text]) == [f"pasted:\nSet-Cookie: {REDACTED}\nX: y"]
    assert redact(f"cookie: {SECRET}") == f"cookie: {REDACTED}"


def test_header_words_not_at_line_start_are_left_alone() -> None:
    prose = [
        "Set your cookie: preferences in settings",  # not at line start after "Set your"
        "the authorization header carries a token",
        "Bearer abc",  # only header-shaped places are redacted
        "cookies: many",
        "Cookie-Policy: strict",
    ]
    assert redact(prose) is prose


def test_long_strings_are_scanned_only_under_header_text_keys() -> None:
    big = "x" * TEXT_SCAN_LIMIT + f"\nCookie: {SECRET}"
    assert redact({"text": big}) == {"text": big}
    out = redact({"headersText": big, "headers": big})
    assert isinstance(out, dict)
    assert SECRET not in out["headersText"]
    assert SECRET not in out["headers"]


def test_tuples_stay_tuples() -> None:
    assert redact(({"Cookie": SECRET}, 1)) == ({"Cookie": REDACTED}, 1)


def test_non_string_keys_and_other_objects() -> None:
    marker = object()
    value = {1: "a", None: [marker], "x": 1.5}
    assert redact(value) is value


def test_input_is_never_mutated() -> None:
    value: dict[str, Any] = {
        "headers": {"Cookie": SECRET},
        "cookies": [{"name": "a", "value": SECRET}],
        "list": [{"name": "Authorization", "value": SECRET}, "Cookie: " + SECRET],
    }
    before = copy.deepcopy(value)
    out = redact(value)
    assert value == before
    assert out != value


def test_unchanged_parts_are_shared_not_copied() -> None:
    clean = {"nodes": list(range(1000))}
    value = {"headers": {"Cookie": SECRET}, "tree": clean}
    out = redact(value)
    assert isinstance(out, dict)
    assert out is not value
    assert out["tree"] is clean


def test_depth_limit() -> None:
    deep: Any = "leaf"
    for _ in range(10_000):
        deep = [deep]
    out = redact(deep)
    level = out
    for _ in range(MAX_DEPTH):
        assert isinstance(level, list)
        level = level[0]
    assert level == TOO_DEEP


def test_depth_limit_boundary() -> None:
    shallow: Any = "leaf"
    for _ in range(MAX_DEPTH):
        shallow = {"k": shallow}
    assert redact(shallow) is shallow  # MAX_DEPTH containers deep: kept whole


def test_cyclic_input_terminates() -> None:
    loop: list[Any] = []
    loop.append(loop)
    out = redact(loop)
    assert isinstance(out, list)


def test_a_big_clean_value_is_neither_copied_nor_scanned(monkeypatch: pytest.MonkeyPatch) -> None:
    """What keeps a 670 kB AX tree or a 5 MB screenshot cheap to log: nothing is copied,
    and text is scanned for header lines only where one can be (counted, not timed)."""
    scanned: list[int] = []
    pattern = redact_module._HEADER_LINE_RE

    class Counting:
        def subn(self, replacement: str, text: str) -> tuple[str, int]:
            scanned.append(len(text))
            return pattern.subn(replacement, text)

    monkeypatch.setattr(redact_module, "_HEADER_LINE_RE", Counting())
    nodes = [
        {"nodeId": i, "role": {"type": "role", "value": "button"}, "name": {"value": f"b{i}"}}
        for i in range(20_000)
    ]
    screenshot = "A" * 5_000_000 + "\nCookie: a=b"  # over the limit: not even looked at
    value = {"nodes": nodes, "data": screenshot}
    out = redact(value)
    assert out is value and scanned == []
    # The counter does count: a short text that names a header is scanned once.
    assert redact({"text": "Cookie: a=b"}) == {"text": f"Cookie: {REDACTED}"}
    assert scanned == [len("Cookie: a=b")]


# --------------------------------------------------------------------------- fuzz

MARK = "PLANTED-"

json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False),
    st.text(max_size=20),
)
json_values = st.recursive(
    json_scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=5),
        st.dictionaries(st.text(max_size=10), children, max_size=5),
    ),
    max_leaves=40,
)


def _has_secret_shape(value: object) -> bool:
    """A conservative superset of what redact may touch, written independently of it."""
    words = ("cookie", "authorization", "name", "value")
    if isinstance(value, str):
        return any(w in value.lower() for w in words)
    if isinstance(value, dict):
        return any(_has_secret_shape(k) or _has_secret_shape(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_secret_shape(v) for v in value)
    return False


@settings(max_examples=300, deadline=None)
@given(value=json_values)
def test_fuzz_values_without_secrets_come_back_equal(value: object) -> None:
    before = copy.deepcopy(value)
    out = redact(value)
    assert value == before  # never mutated (the strategy draws no NaN, so == is exact)
    if not _has_secret_shape(value):
        assert out == value
        assert out is value


secret_keys = st.sampled_from(sorted(SECRET_HEADERS)).flatmap(
    lambda name: st.lists(st.booleans(), min_size=len(name), max_size=len(name)).map(
        lambda flips: "".join(c.upper() if f else c for c, f in zip(name, flips, strict=True))
    )
)
secrets = st.text(alphabet="abcXYZ0129-_=;/+", max_size=12).map(lambda s: MARK + s)
secret_values = st.one_of(
    secrets,
    st.lists(secrets, min_size=1, max_size=3),
    st.dictionaries(st.text(max_size=5), secrets, min_size=1, max_size=2),
)


@st.composite
def planted(draw: st.DrawFn) -> object:
    """A random JSON value with secrets placed in every supported shape."""
    base = draw(json_values.filter(lambda v: MARK not in json.dumps(v)))
    shapes = [
        {draw(secret_keys): draw(secret_values)},
        {"headers": [{"name": draw(secret_keys), "value": draw(secret_values)}]},
        {
            "name": "sid",
            "value": draw(secrets),
            draw(st.sampled_from(["domain", "url", "path"])): "x",
        },
        {"cookies": [{"name": "sid", "value": draw(secret_values)}]},
        {"cookieLine": draw(secrets)},
        {"requestHeadersText": f"GET / HTTP/1.1\r\n{draw(secret_keys)}: {draw(secrets)}\r\n"},
        f"x\n{draw(secret_keys)}: {draw(secrets)}",
    ]
    chosen = draw(st.lists(st.sampled_from(shapes), min_size=1, max_size=4))
    # Nest each shape somewhere inside the random value.
    result: object = base
    for shape in chosen:
        wrap = draw(st.sampled_from(["list", "dict", "none"]))
        if wrap == "list":
            result = [result, shape]
        elif wrap == "dict":
            result = {"k" + draw(st.text(max_size=5)): shape, "rest": result}
        else:
            result = [shape, result]
    return result


@settings(max_examples=300, deadline=None)
@given(value=planted())
def test_fuzz_planted_secrets_never_survive(value: object) -> None:
    before = json.dumps(value)
    out = redact(value)
    assert MARK in before
    assert MARK not in json.dumps(out)
    assert json.dumps(value) == before  # input untouched
    assert redact(out) == out  # idempotent
