"""Value truncation and the URL policy: pure rules, checked on literals."""

from __future__ import annotations

import json

import pytest

from gateway.config.urls import check_url
from gateway.errors import InvalidArgument
from gateway.output.sizing import fit


def test_small_values_pass_untouched() -> None:
    value = {"a": [1, 2, 3], "b": "x"}
    fitted = fit(value, 1000)
    assert fitted.value is value and not fitted.truncated and fitted.omitted_chars == 0


def test_long_string_is_cut_and_says_how_much() -> None:
    fitted = fit("x" * 5000, 1000)
    assert fitted.value == "x" * 1000
    assert fitted.truncated and fitted.omitted_chars == 4000 and fitted.total_chars == 5000


def test_large_object_becomes_a_json_prefix() -> None:
    value = {"items": list(range(10_000))}
    text = json.dumps(value)
    fitted = fit(value, 500)
    assert fitted.truncated
    assert fitted.value == text[:500]
    assert fitted.omitted_chars == len(text) - 500


@pytest.mark.parametrize("scalar", [None, True, 0, 1.5])
def test_scalars_never_truncate(scalar: object) -> None:
    assert fit(scalar, 100).value == scalar


@pytest.mark.parametrize("url", ["https://example.com/a?b#c", "http://127.0.0.1:8080/",
                                 "about:blank", "data:text/html,<p>x</p>", "  https://x.org "])
def test_allowed_urls(url: str) -> None:
    assert check_url(url) == url.strip()


@pytest.mark.parametrize(("url", "says"), [
    ("javascript:alert(1)", "evaluate"),
    ("JavaScript:alert(1)", "evaluate"),
    ("ftp://example.test/", "not allowed"),   # opt-in schemes: see test_policy.py
    ("example.com/path", "no scheme"),
    ("localhost:3000", "no scheme"),
    ("", "empty"),
    ("https://x/" + "a" * (2 * 1024 * 1024), "at most"),
])
def test_refused_urls_say_why(url: str, says: str) -> None:
    with pytest.raises(InvalidArgument, match=says):
        check_url(url)
