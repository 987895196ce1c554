"""Hostile and malformed arguments, table-driven over every tool the server lists.

``TABLE`` maps each tool name to its cases; ``test_table_covers_every_tool`` fails
when the server lists a tool the table does not name, so a new tool cannot ship
without hostile cases. Each case is either

* ``refused(...)``: a tool error whose text holds the given key words (what is
  wrong, what to do) and is neither a Python traceback nor an "internal gateway
  error", or
* ``answered(...)``: a result, checked by value,

within ``CASE_BOUND`` seconds; after every case the same gateway must still answer
(``_still_serving``: ``ping`` plus an ``evaluate`` proving the steady tab did not
move). All cases share one gateway (per module), whose call log is checked last:
valid JSON lines, one per call, no 10 MB argument copied into it.

What pages and browsers do wrong (hung pages, dialogs, tabs closed behind the
gateway's back, unreachable hosts, JavaScript errors) is in ``test_bad_input.py``.
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from tests.e2e.helpers import (
    ERROR_BOUND,
    STRUCTURED,
    RawJson,
    call_ok,
    data_url,
    open_gateway,
    open_raw_stdio,
    text_of,
    wait_for_targets,
)
from tests.topology import Topology

pytestmark = pytest.mark.anyio

PAGE = data_url("hostile", "<p id=p>steady</p><button>b</button>")
CASE_BOUND = 60.0
"""Per case: generous, since a 10 MB argument crosses stdio, pydantic and maybe Chrome."""

TAB = object()
"""Placeholder in a case's arguments for the steady tab's id (known only at run time)."""

HUGE = "x" * 10_000_000
NAMES = ["nope", "../x", "a;rm -rf /", "$(id)", "-oProxyCommand=x", "a\x00b", "default/.."]
"""Target names a client might send: unknown, path and shell characters, option-like, NUL."""


Check = Callable[["Hostile", dict[str, Any]], Awaitable[None]]


@dataclass(frozen=True)
class Case:
    id: str
    args: dict[str, Any]
    words: tuple[str, ...] = ()        # refused: key words of the error text
    check: Check | None = None         # answered: checks the structured result


def refused(id: str, args: dict[str, Any], *words: str) -> Case:
    return Case(id, args, words=words)


def answered(id: str, args: dict[str, Any], check: Check) -> Case:
    return Case(id, args, check=check)


# --------------------------------------------------------------- shared case families


def target_cases(base: dict[str, Any]) -> list[Case]:
    """``target`` of the wrong type, 10 MB long, and names no target has."""
    cases = [
        refused("target-int", {**base, "target": 5}, "target", "Input should be a valid string"),
        refused("target-list", {**base, "target": ["default"]}, "target",
                "Input should be a valid string"),
        refused("target-10MB", {**base, "target": HUGE}, "target",
                "String should have at most 64 characters"),
    ]
    cases += [refused(f"target-{name!r}", {**base, "target": name},
                      f"unknown target {name!r}; configured targets: default. Call list_targets")
              for name in NAMES]
    return cases


def no_target_cases(base: dict[str, Any]) -> list[Case]:
    """A tool whose tab is required takes no ``target`` (the tab names it): one passed,
    right or wrong, is refused as an argument it does not take."""
    return [refused(f"target-{name!r}", {**base, "target": name}, "unknown argument",
                    "'target'") for name in ("default", 5, "nope")]


def tab_cases(base: dict[str, Any]) -> list[Case]:
    """``tab`` unknown, of the wrong type, zero, negative, and beyond any id (refused by
    its bounds, the same for an optional tab)."""
    cases = [
        refused("tab-unknown", {**base, "tab": 987654},
                "tab 987654 is not a known tab id; call list_tabs for the current tab ids"),
        refused("tab-str", {**base, "tab": "abc"}, "tab", "Input should be a valid integer"),
        refused("tab-float", {**base, "tab": 1.5}, "tab", "Input should be a valid integer"),
        refused("tab-zero", {**base, "tab": 0}, "tab", "greater than or equal to 1"),
        refused("tab-negative", {**base, "tab": -3}, "tab", "greater than or equal to 1"),
        refused("tab-object", {**base, "tab": {"id": 1}}, "tab", "Input should be a valid integer"),
    ]
    cases.append(refused("tab-huge", {**base, "tab": 2**40}, "tab",
                         "less than or equal to 2147483648"))
    return cases


def missing(base: dict[str, Any], *fields: str) -> list[Case]:
    return [refused(f"missing-{name}", {k: v for k, v in base.items() if k != name},
                    name, "Field required") for name in fields]


def timeout_cases(base: dict[str, Any], key: str = "timeout_s") -> list[Case]:
    """Zero, negative, absurdly large and NaN-ish timeouts: all refused, none waited on."""
    above = "less than or equal to 600"
    return [
        refused(f"{key}-zero", {**base, key: 0}, key, "greater than 0"),
        refused(f"{key}-negative", {**base, key: -1}, key, "greater than 0"),
        refused(f"{key}-huge", {**base, key: 1e308}, key, above),
        refused(f"{key}-NaN", {**base, key: "NaN"}, key, above),
        refused(f"{key}-Infinity", {**base, key: "Infinity"}, key, above),
        refused(f"{key}--Infinity", {**base, key: "-Infinity"}, key, "greater than 0"),
        refused(f"{key}-word", {**base, key: "soon"}, key, "Input should be a valid number"),
    ]


def max_chars_cases(base: dict[str, Any]) -> list[Case]:
    return [
        refused("max_chars-zero", {**base, "max_chars": 0}, "max_chars",
                "greater than or equal to 100"),
        refused("max_chars-negative", {**base, "max_chars": -5}, "max_chars",
                "greater than or equal to 100"),
        refused("max_chars-huge", {**base, "max_chars": 10**30}, "max_chars",
                "less than or equal to 50000000"),
        refused("max_chars-fraction", {**base, "max_chars": 150.5}, "max_chars",
                "Input should be a valid integer"),
        refused("max_chars-NaN", {**base, "max_chars": "NaN"}, "max_chars",
                "Input should be a valid integer"),
    ]


def extra_fields(base: dict[str, Any]) -> Case:
    """Arguments the tool does not take are refused by name — silently dropping them would
    let a typo (``timeout`` for ``timeout_s``) go unnoticed — even 10 MB, deep ones."""
    return refused("extra-fields", {**base, "no_such_argument": HUGE, "deep": _nested(150)},
                   "unknown arguments for", "'no_such_argument'", "'deep'", "it takes")


REFUSED_URLS = [
    ("javascript", "javascript:alert(1)",
     "javascript: URLs are not navigated to; run the code with evaluate"),
    ("JavaScript", "JavaScript:document.title='x'", "javascript: URLs are not navigated to"),
    ("file", "file:///etc/passwd", "url scheme 'file' is not allowed"),
    ("file-host", "file://h1/etc/passwd", "url scheme 'file' is not allowed"),
    ("chrome", "chrome://version", "url scheme 'chrome' is not allowed"),
    ("chrome-settings", "chrome://settings", "url scheme 'chrome' is not allowed"),
    ("devtools", "devtools://devtools/bundled/inspector.html",
     "url scheme 'devtools' is not allowed"),
    ("chrome-extension", "chrome-extension://abc/x.html",
     "url scheme 'chrome-extension' is not allowed"),
    ("view-source", "view-source:https://example.com/", "url scheme 'view-source' is not allowed"),
    ("no-scheme", "example.com", "url 'example.com' has no scheme; add one, e.g. https://"),
    ("ipv6-unclosed", "http://[x", "url 'http://[x' is malformed (Invalid IPv6 URL)"),
    ("no-scheme-port", "localhost:8080/x", "has no scheme; add one"),
    ("empty", "", "url is empty"),
    ("blank", "   ", "url is empty"),
    ("over-2MB", "data:text/html," + "a" * (2 * 1024 * 1024), "url",
     "String should have at most 2097152 characters"),
    ("10MB", HUGE, "url", "String should have at most 2097152 characters"),
]


def url_cases(base: dict[str, Any]) -> list[Case]:
    cases = [refused(f"url-{name}", {**base, "url": url}, *([words] if isinstance(words, str)
                                                          else words))
             for name, url, *rest in REFUSED_URLS for words in [tuple(rest)]]
    cases += [
        refused("url-int", {**base, "url": 5}, "url", "Input should be a valid string"),
        refused("url-list", {**base, "url": ["https://a.test/"]}, "url",
                "Input should be a valid string"),
    ]
    return cases


def _deep_json(depth: int) -> str:
    return '{"a": ' * depth + "1" + "}" * depth


def _nested(depth: int, leaf: Any = 1, *, lists: bool = False) -> Any:
    value = leaf
    for _ in range(depth):
        value = [value] if lists else {"a": value}
    return value


# ------------------------------------------------------------------------ checks


async def _close_opened(h: Hostile, result: dict[str, Any]) -> None:
    """A case that opened a tab (data: URLs are allowed): it is real; close it again."""
    assert result["target"] == "default"
    closed = await h.call("close_tab", {"tab": result["tab"]})
    assert not closed.is_error and closed.structured_content["closed"] is True


def _opened(url: str, title: str | None = None) -> Check:
    async def check(h: Hostile, result: dict[str, Any]) -> None:
        assert result["url"] == url
        if title is not None:
            assert result["title"] == title
        await _close_opened(h, result)
    return check


def _value(expected: Any, kind: str | None = None) -> Check:
    async def check(h: Hostile, result: dict[str, Any]) -> None:
        assert result["value"] == expected, result
        if kind is not None:
            assert result["type"] == kind, result
    return check


async def _no_routes(h: Hostile, result: dict[str, Any]) -> None:
    assert (result["tab"], result["routes"]) == (h.tab, []), result


def _view_of_steady(max_chars: int | None = None) -> Check:
    async def check(h: Hostile, result: dict[str, Any]) -> None:
        assert result["url"] == PAGE
        if max_chars is None:
            assert "steady" in result["view"] and 'button#' in result["view"]
        else:
            assert len(result["view"]) == max_chars and result["truncated"] is True
    return check


async def _live_url(h: Hostile, result: dict[str, Any]) -> None:
    assert result["url"].startswith("http://127.0.0.1:") and "/live/?t=" in result["url"]
    assert result["idle_expiry_s"] == 900 and set(result) == {"url", "idle_expiry_s"}


def _emulating(expected: dict[str, Any]) -> Check:
    async def check(h: Hostile, result: dict[str, Any]) -> None:
        assert (result["tab"], result["emulating"]) == (h.tab, expected), result
    return check


async def _cdp_two(h: Hostile, result: dict[str, Any]) -> None:
    assert result["result"]["result"]["value"] == 2, result


async def _huge_array(h: Hostile, result: dict[str, Any]) -> None:
    """1e6 elements: the first 10,000 copied, then a note of how many were left out."""
    value = result["value"]
    assert result["type"] == "object/array" and "truncated" not in result
    assert value[:3] == [0, 1, 2] and value[9_999] == 9_999
    assert value[10_000:] == ["… 990000 more items"]


async def _hundred_k_keys(h: Hostile, result: dict[str, Any]) -> None:
    """100k keys: 10,000 copied plus a "more keys" marker, then cut at max_chars."""
    assert result["type"] == "object" and result["truncated"] is True
    assert isinstance(result["value"], str) and len(result["value"]) == 100_000
    assert result["value"].startswith('{"k0": 0, "k1": 1,')
    assert result["omitted_chars"] > 0


async def _cut_at_100(h: Hostile, result: dict[str, Any]) -> None:
    assert result["truncated"] is True and len(result["value"]) == 100
    assert result["omitted_chars"] > 0


async def _small_image(h: Hostile, result: dict[str, Any]) -> None:
    assert result["format"] == "jpeg" and 1 <= result["width"] <= 16, result


async def _no_messages_over_one(h: Hostile, result: dict[str, Any]) -> None:
    assert len(result["messages"]) <= 1 and result["tab"] >= 1


async def _no_requests(h: Hostile, result: dict[str, Any]) -> None:
    assert result["requests"] == [], result


# -------------------------------------------------------------------------- the table

EVAL = {"tab": TAB, "expression": "1 + 1"}
CDP = {"method": "Runtime.evaluate", "tab": TAB, "params": {"expression": "1 + 1"}}

TABLE: dict[str, list[Case]] = {
    "list_targets": [
        extra_fields({}),
        refused("extra-wrong-types", {"target": 5, "tab": "x"},
                "unknown arguments for list_targets: 'target', 'tab'; it takes no arguments"),
    ],
    "ping": [
        *target_cases({}),
        extra_fields({}),
    ],
    "list_tabs": [
        *target_cases({}),
        extra_fields({}),
    ],
    "new_tab": [
        *url_cases({}),
        *target_cases({}),
        answered("url-data-allowed", {"url": data_url("new-tab-data")},
                 _opened(data_url("new-tab-data"))),
        extra_fields({"url": "about:blank"}),
    ],
    "navigate": [
        *url_cases({"tab": TAB}),
        *url_cases({}),
        *tab_cases({"url": PAGE}),
        *target_cases({"url": PAGE}),
        refused("missing-url", {}, "exactly one of url", "history"),
        *timeout_cases({"url": PAGE}),
        refused("history-unknown", {"tab": TAB, "history": "up"}, "history",
                "'back', 'forward' or 'reload'"),
        refused("history-without-tab", {"history": "back"}, "needs the tab", "list_tabs"),
        refused("history-and-url", {"tab": TAB, "history": "reload", "url": PAGE},
                "exactly one of url"),
        refused("history-tab-unknown", {"tab": 987654, "history": "reload"},
                "tab 987654 is not a known tab id"),
        refused("ignore_cache-not-reload", {"tab": TAB, "history": "back",
                                            "ignore_cache": True}, "ignore_cache applies"),
        refused("ignore_cache-word", {"tab": TAB, "history": "reload", "ignore_cache": "hard"},
                "ignore_cache", "Input should be a valid boolean"),
        refused("wait-unknown", {"url": PAGE, "wait": "networkidle"}, "wait",
                "'load', 'domcontentloaded' or 'none'"),
        answered("url-data-allowed", {"url": data_url("nav-data")},
                 _opened(data_url("nav-data"), "nav-data")),
        extra_fields({"url": data_url("nav-extra")}),
        refused("typo-timeout", {"url": PAGE, "timeout": 5},
                "unknown argument for navigate: 'timeout' (did you mean 'timeout_s'?)"),
    ],
    "close_tab": [
        *tab_cases({}),
        *no_target_cases({"tab": TAB}),
        *missing({"tab": TAB}, "tab"),
    ],
    "browse": [
        *url_cases({"tab": TAB}),
        *tab_cases({"url": PAGE}),
        *target_cases({"url": PAGE}),
        *timeout_cases({"url": PAGE, "tab": TAB}),
        *max_chars_cases({"url": PAGE, "tab": TAB}),
        answered("same-page", {"url": PAGE, "tab": TAB}, _view_of_steady()),
    ],
    "browse_view": [
        *tab_cases({}),
        *no_target_cases({"tab": TAB}),
        *max_chars_cases({"tab": TAB}),
        answered("max_chars-100", {"tab": TAB, "max_chars": 100}, _view_of_steady(100)),
        refused("find-catastrophic-regex-backreference", {"tab": TAB, "find": r"/(a+)+\1/"},
                "not a regex RE2 accepts"),
        refused("find-unclosed-regex", {"tab": TAB, "find": "/(a/"}, "not a regex RE2"),
        refused("find-10MB", {"tab": TAB, "find": HUGE}, "find", "at most 200 characters"),
        refused("within-zero", {"tab": TAB, "within": 0}, "within",
                "greater than or equal to 1"),
        refused("within-unknown-ref", {"tab": TAB, "within": 99999}, "ref #99999",
                "browse_view"),
        refused("within-str", {"tab": TAB, "within": "main"}, "within",
                "Input should be a valid integer"),
        extra_fields({"tab": TAB}),
    ],
    "browse_act": [
        *tab_cases({"actions": [{"do": "press", "key": "Shift"}]}),
        *no_target_cases({"tab": TAB, "actions": [{"do": "press", "key": "Shift"}]}),
        *missing({"tab": TAB, "actions": []}, "actions"),
        *timeout_cases({"tab": TAB, "actions": [{"do": "press", "key": "Shift"}]}),
        refused("actions-str", {"tab": TAB, "actions": "click"}, "actions",
                "Input should be a valid list"),
        refused("actions-object", {"tab": TAB, "actions": {"do": "click", "ref": 1}}, "actions",
                "Input should be a valid list"),
        refused("actions-empty", {"tab": TAB, "actions": []}, "actions", "at least 1 item"),
        refused("actions-51", {"tab": TAB, "actions": [{"do": "press", "key": "Shift"}] * 51},
                "actions", "at most 50 items"),
        refused("action-unknown", {"tab": TAB, "actions": [{"do": "nope"}]},
                "Input tag 'nope'", "'click', 'type', 'press'"),
        refused("action-no-do", {"tab": TAB, "actions": [{"ref": 1}]},
                "Unable to extract tag using discriminator 'do'"),
        refused("action-not-object", {"tab": TAB, "actions": [5]}, "actions.0"),
        refused("click-no-ref", {"tab": TAB, "actions": [{"do": "click"}]}, "ref",
                "Field required"),
        refused("click-ref-str", {"tab": TAB, "actions": [{"do": "click", "ref": "#3"}]}, "ref",
                "Input should be a valid integer"),
        refused("click-count-9", {"tab": TAB, "actions": [{"do": "click", "ref": 1, "count": 9}]},
                "count", "less than or equal to 3"),
        refused("type-10MB", {"tab": TAB, "actions": [{"do": "type", "ref": 1, "text": HUGE}]},
                "text", "at most 1000000 characters"),
        refused("press-10MB", {"tab": TAB, "actions": [{"do": "press", "key": HUGE}]}, "key",
                "at most 64 characters"),
        refused("scroll-huge", {"tab": TAB, "actions": [{"do": "scroll", "by": 10**12}]}, "by",
                "less than or equal to 100000"),
        refused("wait_for-timeout-negative",
                {"tab": TAB, "actions": [{"do": "wait_for", "text": "x", "timeout": -1}]},
                "timeout", "greater than 0"),
        # the step fails, so the call is a tool error (still carrying the view)
        refused("click-unknown-ref", {"tab": TAB, "actions": [{"do": "click", "ref": 99999}]},
                "step 1 of 1 (click) failed: ", "ref #99999", "\nsteps: click failed: "),
    ],
    "evaluate": [
        *tab_cases({"expression": "1"}),
        *no_target_cases(EVAL),
        *missing(EVAL, "expression", "tab"),
        *timeout_cases(EVAL),
        *max_chars_cases(EVAL),
        refused("expression-int", {**EVAL, "expression": 5}, "expression",
                "Input should be a valid string"),
        refused("expression-null", {**EVAL, "expression": None}, "expression",
                "Input should be a valid string"),
        refused("await_promise-word", {**EVAL, "await_promise": "maybe"}, "await_promise",
                "Input should be a valid boolean"),
        refused("expression-10MB", {**EVAL, "expression": HUGE},
                "JavaScript error: ReferenceError: xxxx", "[error text cut: "),
        answered("expression-10MB-literal", {**EVAL, "expression": f"'{HUGE[:-20]}'.length"},
                 _value(10_000_000 - 20)),
        extra_fields(EVAL),
        answered("cycle", {**EVAL, "expression": "const o = {n: 1}; o.self = o; o.l = [o]; o"},
                 _value({"n": 1, "self": "[Circular]", "l": ["[Circular]"]}, "object")),
        answered("bigint", {**EVAL, "expression": "2n ** 70n"},
                 _value("1180591620717411303424n", "bigint")),
        answered("bigint-inside", {**EVAL, "expression": "({b: 12n})"}, _value({"b": "12n"})),
        answered("array-1e6", {**EVAL, "expression": "Array.from({length: 1e6}, (_, i) => i)"},
                 _huge_array),
        answered("array-1e6-max_chars", {**EVAL, "expression": "new Array(1e6).fill(7)",
                                         "max_chars": 100}, _cut_at_100),
        answered("dom-node", {**EVAL, "expression": "document.getElementById('p')"},
                 _value("<p#p>", "object/node")),
        answered("dom-document", {**EVAL, "expression": "document"},
                 _value("[#document]", "object/node")),
        answered("dom-nodelist", {**EVAL, "expression": "document.querySelectorAll('p, button')"},
                 _value(["<p#p>", "<button>"])),
        answered("dom-in-object", {**EVAL, "expression": "({el: document.body})"},
                 _value({"el": "<body>"})),
        answered("symbol", {**EVAL, "expression": "Symbol('s')"}, _value("Symbol(s)", "symbol")),
        answered("function", {**EVAL, "expression": "(function named() {})"},
                 _value("[Function named]", "function")),
        answered("minus-zero", {**EVAL, "expression": "-0"}, _value("-0", "number")),
        answered("NaN", {**EVAL, "expression": "NaN"}, _value("NaN", "number")),
        answered("Infinity", {**EVAL, "expression": "-Infinity"}, _value("-Infinity", "number")),
        answered("undefined", {**EVAL, "expression": "undefined"}, _value(None, "undefined")),
        answered("specials-inside", {**EVAL, "expression":
                 "({z: -0, n: NaN, i: Infinity, u: undefined, s: Symbol.iterator, f() {}})"},
                 _value({"z": 0, "n": "NaN", "i": "Infinity", "u": None,
                         "s": "Symbol(Symbol.iterator)", "f": "[Function f]"})),
        answered("map", {**EVAL, "expression": "new Map([[1, {a: 1}], ['k', new Set([2, 2])]])"},
                 _value({"1": {"a": 1}, "k": [2]}, "object/map")),
        answered("set", {**EVAL, "expression": "new Set([1, 'a', 1])"},
                 _value([1, "a"], "object/set")),
        answered("throwing-getter", {**EVAL, "expression":
                 "({get bad() { throw new Error('getter-7') }, ok: 1})"},
                 _value({"bad": "[throws: Error: getter-7]", "ok": 1}, "object")),
        answered("throwing-proxy", {**EVAL, "expression":
                 "new Proxy({}, {ownKeys() { throw new Error('px') }, "
                 "get() { throw new Error('pg') }, getPrototypeOf() { throw new Error('pp') }})"},
                 _value("Proxy(Object)", "object/proxy")),
        answered("keys-100k", {**EVAL, "expression":
                 "Object.fromEntries(Array.from({length: 1e5}, (_, i) => ['k' + i, i]))"},
                 _hundred_k_keys),
        answered("deep-object", {**EVAL, "expression":
                 "let a = {}; for (let i = 0; i < 1e4; i++) a = {a}; a"},
                 _value(_nested(32, "[Object]"))),
    ],
    "cdp_command": [
        *target_cases({"method": "Browser.getVersion"}),
        *tab_cases(CDP),
        *missing(CDP, "method"),
        *timeout_cases(CDP),
        *max_chars_cases(CDP),
        *[refused(f"method-{method!r}", {**CDP, "method": method},
                  f"method {method!r} is not a CDP method name; use Domain.method")
          for method in ["foo", "Page.", "page.navigate", "Page.navigate;rm", ".navigate",
                         "Page.navigate ", "Page.Navigate", "Page.navigate.x", "Pa ge.navigate",
                         "", "Runtime.evaluate\x00", "../Runtime.evaluate", "$(id).x"]],
        refused("method-10MB", {**CDP, "method": HUGE}, "method", "at most 200 characters"),
        refused("method-int", {**CDP, "method": 5}, "method", "Input should be a valid string"),
        refused("domain-unknown", {**CDP, "method": "Nope.nothing"},
                "Nope.nothing failed", "wasn't found (CDP error -32601)"),
        refused("page-method-at-browser-level", {"method": "Page.navigate",
                                                 "params": {"url": "about:blank"}},
                "at browser level; page domains (Page, Runtime, DOM, …) need tab=<id>"),
        *[refused(f"params-{name}", {**CDP, "params": params}, "params",
                  "Input should be a valid dictionary")
          for name, params in [("list", ["expression", "1"]), ("string", "expression=1"),
                               ("number", 5), ("bool", True), ("json-array-text", "[1, 2]")]],
        answered("params-10MB-unknown-key", {**CDP, "params": {HUGE: 1, "expression": "1 + 1"}},
                 _cdp_two),
        answered("params-deep-object", {**CDP, "params": {"expression": "1 + 1",
                                                          "ignored": _nested(150)}}, _cdp_two),
        answered("params-deep-array", {**CDP, "params": {"expression": "1 + 1",
                                                         "ignored": _nested(150, lists=True)}},
                 _cdp_two),
        extra_fields(CDP),
    ],
    "screenshot": [
        *tab_cases({}),
        *no_target_cases({"tab": TAB}),
        *timeout_cases({"tab": TAB}),
        refused("format-gif", {"tab": TAB, "format": "gif"}, "format", "'png', 'jpeg' or 'webp'"),
        refused("quality-101", {"tab": TAB, "quality": 101}, "quality",
                "less than or equal to 100"),
        refused("max_width-0", {"tab": TAB, "max_width": 0}, "max_width",
                "greater than or equal to 16"),
        refused("max_width-huge", {"tab": TAB, "max_width": 10**9}, "max_width",
                "less than or equal to 10000"),
        refused("ref-unknown", {"tab": TAB, "ref": 99999},
                "ref #99999", "browse_view"),  # "not in the current view" or "no view yet"
        refused("ref-and-full_page", {"tab": TAB, "ref": 1, "full_page": True},
                "pass either ref or full_page, not both"),
        refused("save_to-relative", {"tab": TAB, "save_to": "../../x.png"},
                "save_to must be an absolute path"),
        refused("save_to-outside", {"tab": TAB, "save_to": "/etc/csgw-hostile.png"},
                "is outside the allowed directories"),
        refused("save_to-NUL", {"tab": TAB, "save_to": "/tmp/a\x00b.png"},
                "save_to contains a NUL character"),
        refused("save_to-10MB", {"tab": TAB, "save_to": "/" + HUGE}, "save_to",
                "at most 4096 characters"),
        answered("tiny-jpeg", {"tab": TAB, "format": "jpeg", "max_width": 16}, _small_image),
    ],
    "console_messages": [
        *tab_cases({}),
        *no_target_cases({"tab": TAB}),
        refused("level-unknown", {"tab": TAB, "level": "fatal"}, "level",
                "'error', 'warning', 'info' or 'debug'"),
        refused("level-list-unknown", {"tab": TAB, "level": ["error", "x"]}, "level"),
        refused("since-negative", {"tab": TAB, "since": -1}, "since",
                "greater than or equal to 0"),
        refused("limit-zero", {"tab": TAB, "limit": 0}, "limit", "greater than or equal to 1"),
        refused("limit-huge", {"tab": TAB, "limit": 10**12}, "limit",
                "less than or equal to 10000"),
        answered("limit-1", {"tab": TAB, "limit": 1}, _no_messages_over_one),
        extra_fields({"tab": TAB}),
    ],
    "network_requests": [
        *tab_cases({}),
        *no_target_cases({"tab": TAB}),
        refused("filter-bad-regex", {"tab": TAB, "filter": "/[/"},
                "filter '/[/' is not a valid regex"),
        refused("filter-10MB", {"tab": TAB, "filter": HUGE}, "filter", "at most 2000 characters"),
        refused("resource_types-33", {"tab": TAB, "resource_types": ["XHR"] * 33},
                "resource_types", "at most 32 items"),
        refused("resource_types-str-items", {"tab": TAB, "resource_types": [5]},
                "resource_types", "Input should be a valid string"),
        refused("limit-zero", {"tab": TAB, "limit": 0}, "limit", "greater than or equal to 1"),
        refused("since-negative", {"tab": TAB, "since": -1}, "since",
                "greater than or equal to 0"),
        answered("filter-no-match", {"tab": TAB, "filter": "no-such-url-part"}, _no_requests),
        answered("filter-shell-chars", {"tab": TAB, "filter": "$(id);rm -rf /"}, _no_requests),
    ],
    "network_request": [
        *tab_cases({"id": 1}),
        *no_target_cases({"tab": TAB, "id": 1}),
        *missing({"tab": TAB, "id": 1}, "id"),
        refused("id-unknown", {"tab": TAB, "id": 999999}, "has no request 999999",
                "call network_requests for current ids"),
        refused("id-zero", {"tab": TAB, "id": 0}, "id", "greater than or equal to 1"),
        refused("include_body-unknown", {"tab": TAB, "id": 1, "include_body": "all"},
                "include_body", "'none', 'request', 'response' or 'both'"),
        refused("save_to-relative", {"tab": TAB, "id": 999999, "save_to": "x"},
                "has no request 999999"),
        *max_chars_cases({"tab": TAB, "id": 1}),
    ],
    "emulate": [
        *tab_cases({}),
        *no_target_cases({"tab": TAB}),
        *missing({"tab": TAB}, "tab"),
        extra_fields({"tab": TAB}),
        answered("nothing-named", {"tab": TAB}, _emulating({})),
        refused("device-unknown", {"tab": TAB, "device": "Nokia 3310"}, "device",
                "'iPhone 15'"),
        refused("viewport-huge", {"tab": TAB, "viewport": {"width": 10**9, "height": 500}},
                "width", "less than or equal to 10000"),
        refused("viewport-not-object", {"tab": TAB, "viewport": "1920x1080"}, "viewport"),
        refused("cpu_throttle-NaN", {"tab": TAB, "cpu_throttle": "NaN"}, "cpu_throttle"),
        refused("cpu_throttle-zero", {"tab": TAB, "cpu_throttle": 0}, "cpu_throttle",
                "greater than or equal to 1"),
        refused("user_agent-10MB", {"tab": TAB, "user_agent": HUGE}, "user_agent",
                "at most 1000 characters"),
        refused("user_agent-header-injection", {"tab": TAB, "user_agent": "a\r\nX-Y: 1"},
                "user_agent", "pattern"),
        refused("geolocation-list", {"tab": TAB, "geolocation": [1, 2]}, "geolocation"),
        refused("network-unknown", {"tab": TAB, "network": "5g"}, "network"),
        refused("network-negative-latency", {"tab": TAB, "network": {
            "latency_ms": -5, "download_kbps": 1, "upload_kbps": 1}}, "latency_ms"),
        refused("timezone-unknown", {"tab": TAB, "timezone": "Mars/Olympus_Mons"},
                "IANA name", "unchanged"),
        refused("timezone-path", {"tab": TAB, "timezone": "../../etc/passwd"}, "timezone",
                "pattern"),
    ],
    "performance_trace": [
        *tab_cases({"duration_s": 0.1}),
        *no_target_cases({"tab": TAB, "duration_s": 0.1}),
        refused("duration-zero", {"tab": TAB, "duration_s": 0}, "duration_s", "greater than 0"),
        refused("duration-hour", {"tab": TAB, "duration_s": 3600}, "duration_s",
                "less than or equal to 60"),
        refused("action-unknown", {"tab": TAB, "action": "pause"}, "action",
                "'start' or 'stop'"),
        refused("stop-without-start", {"tab": TAB, "action": "stop"},
                "no performance trace started with action='start'"),
        refused("save_to-relative", {"tab": TAB, "duration_s": 0.1, "save_to": "x"},
                "save_to must be an absolute path"),
        refused("save_to-10MB", {"tab": TAB, "save_to": HUGE}, "save_to",
                "at most 4096 characters"),
        extra_fields({"tab": TAB}),
    ],
    "heap_snapshot": [
        *tab_cases({}),
        *no_target_cases({"tab": TAB}),
        refused("save_to-etc", {"tab": TAB, "save_to": "/etc/passwd"},
                "outside the allowed directories"),
        refused("save_to-dir", {"tab": TAB, "save_to": "/tmp"}, "is a directory"),
        extra_fields({"tab": TAB}),
    ],
    "pdf": [
        *tab_cases({"save_to": "/tmp/csgw-hostile-never.pdf"}),
        *no_target_cases({"tab": TAB, "save_to": "/tmp/csgw-hostile-never.pdf"}),
        *missing({"tab": TAB, "save_to": "/tmp/csgw-hostile-never.pdf"}, "save_to"),
        refused("save_to-etc", {"tab": TAB, "save_to": "/etc/csgw-hostile.pdf"},
                "outside the allowed directories"),
        refused("save_to-dir", {"tab": TAB, "save_to": "/tmp"}, "is a directory"),
        refused("save_to-10MB", {"tab": TAB, "save_to": "/" + HUGE}, "save_to",
                "at most 4096 characters"),
        refused("pages-backwards", {"tab": TAB, "save_to": "/tmp/csgw-hostile-never.pdf",
                                    "pages": "9-2"}, "pages", "first to last"),
        refused("pages-words", {"tab": TAB, "save_to": "/tmp/csgw-hostile-never.pdf",
                                "pages": "all of them"}, "pages", "'1-3,5'"),
        refused("pages-10MB", {"tab": TAB, "save_to": "/tmp/csgw-hostile-never.pdf",
                               "pages": HUGE}, "pages", "at most 400 characters"),
        refused("paper-unknown", {"tab": TAB, "save_to": "/tmp/csgw-hostile-never.pdf",
                                  "paper": "a0"}, "paper", "'a4'"),
        refused("margins-NaN", {"tab": TAB, "save_to": "/tmp/csgw-hostile-never.pdf",
                                "margins": "NaN"}, "margins"),
        refused("margins-huge", {"tab": TAB, "save_to": "/tmp/csgw-hostile-never.pdf",
                                 "margins": 1e9}, "margins", "less than or equal to 4"),
        extra_fields({"tab": TAB, "save_to": "/tmp/csgw-hostile-never.pdf"}),
    ],
    "storage_state": [
        *target_cases({"action": "clear"}),
        *tab_cases({"action": "clear"}),
        *missing({"action": "clear"}, "action"),
        *timeout_cases({"action": "clear"}),
        extra_fields({"action": "clear"}),
        refused("action-unknown", {"action": "steal", "tab": TAB}, "action",
                "'save', 'load' or 'clear'"),
        refused("save-no-path", {"action": "save", "tab": TAB}, "action='save' needs path"),
        refused("path-relative", {"action": "save", "tab": TAB, "path": "x.json"},
                "path must be an absolute path"),
        refused("path-NUL", {"action": "load", "tab": TAB, "path": "/tmp/a\x00b"},
                "path contains a NUL character"),
        refused("path-10MB", {"action": "load", "tab": TAB, "path": HUGE}, "path",
                "at most 4096 characters"),
        refused("save-etc", {"action": "save", "tab": TAB, "path": "/etc/csgw-state.json"},
                "outside the allowed directories"),
        refused("load-etc", {"action": "load", "tab": TAB, "path": "/etc/passwd"},
                "outside the allowed directories"),
        refused("load-dir", {"action": "load", "tab": TAB, "path": "/tmp"},
                "not a regular file"),
        refused("context-path", {"action": "clear", "context": "../x"}, "context", "pattern"),
        refused("context-unknown", {"action": "clear", "context": "nobody"},
                "has no context 'nobody'"),
        refused("tab-and-context", {"action": "clear", "tab": TAB, "context": "c"},
                "pass tab or context, not both"),
    ],
    "network_route": [
        *tab_cases({"action": "list"}),
        *target_cases({"action": "list", "context": "hostile"}),
        *missing({"tab": TAB, "action": "list"}, "action"),
        extra_fields({"tab": TAB, "action": "list"}),
        answered("list-none", {"tab": TAB, "action": "list"}, _no_routes),
        refused("action-unknown", {"tab": TAB, "action": "hijack"}, "action",
                "'fulfill', 'block', 'continue', 'remove' or 'list'"),
        refused("neither-tab-nor-context", {"action": "list"}, "pass tab or context"),
        refused("tab-and-context", {"action": "list", "tab": TAB, "context": "c"},
                "pass tab or context"),
        refused("no-pattern", {"tab": TAB, "action": "block"}, "needs pattern"),
        refused("pattern-open-brace", {"tab": TAB, "action": "block", "pattern": "**/{a"},
                "not a valid glob or /regex/", "never closed"),
        refused("pattern-bad-regex", {"tab": TAB, "action": "block", "pattern": "/(a/"},
                "not a valid glob or /regex/", "missing )"),
        refused("pattern-10MB", {"tab": TAB, "action": "block", "pattern": HUGE}, "pattern",
                "at most 2000 characters"),
        refused("status-999", {"tab": TAB, "action": "fulfill", "pattern": "**/never",
                               "status": 999}, "status", "less than or equal to 599"),
        refused("header-injection", {"tab": TAB, "action": "fulfill", "pattern": "**/never",
                                     "headers": {"X-A": "1\r\nSet-Cookie: x=1"}},
                "not valid HTTP"),
        refused("headers-list", {"tab": TAB, "action": "continue", "pattern": "**/never",
                                 "headers": ["X-A: 1"]}, "headers", "valid dictionary"),
        refused("body-10MB", {"tab": TAB, "action": "fulfill", "pattern": "**/never",
                              "body": HUGE}, "over the limit of 4,194,304 (MAX_BODY_BYTES)"),
        refused("body-and-body_path", {"tab": TAB, "action": "fulfill", "pattern": "**/never",
                                       "body": "x", "body_path": "/tmp/x"},
                "pass body or body_path, not both"),
        refused("body_path-etc", {"tab": TAB, "action": "fulfill", "pattern": "**/never",
                                  "body_path": "/etc/passwd"}, "outside the allowed directories"),
        refused("body_path-dir", {"tab": TAB, "action": "fulfill", "pattern": "**/never",
                                  "body_path": "/tmp"}, "not a regular file"),
        refused("body-for-block", {"tab": TAB, "action": "block", "pattern": "**/never",
                                   "body": "x"}, "body is for action=fulfill"),
        refused("times-zero", {"tab": TAB, "action": "block", "pattern": "**/never",
                               "times": 0}, "times", "greater than or equal to 1"),
        refused("status-for-block", {"tab": TAB, "action": "block", "pattern": "**/never",
                                     "status": 404}, "status is for action=fulfill, not 'block'"),
        refused("times-for-list", {"tab": TAB, "action": "list", "times": 1},
                "times is for action=fulfill or block or continue, not 'list'"),
        refused("times-for-remove", {"tab": TAB, "action": "remove", "times": 2},
                "times is for action=fulfill or block or continue, not 'remove'"),
        refused("id-for-list", {"tab": TAB, "action": "list", "id": 1},
                "id is for action=remove, not 'list'"),
        refused("id-for-fulfill", {"tab": TAB, "action": "fulfill", "pattern": "**/never",
                                   "id": 1}, "id is for action=remove, not 'fulfill'"),
        refused("id-zero", {"tab": TAB, "action": "remove", "id": 0}, "id",
                "greater than or equal to 1"),
        *url_cases({"tab": TAB, "action": "continue", "pattern": "**/never"}),
    ],
    "downloads": [
        *target_cases({}),
        *tab_cases({}),
        *timeout_cases({"fetch": 1}),
        extra_fields({}),
        refused("fetch-unknown", {"fetch": 987654}, "no download 987654",
                "call downloads without fetch to list them"),
        refused("fetch-huge", {"fetch": 2**70}, f"no download {2**70}"),
        refused("fetch-zero", {"fetch": 0}, "fetch", "greater than or equal to 1"),
        refused("fetch-str", {"fetch": "1; rm -rf ~"}, "fetch", "Input should be a valid integer"),
        refused("save_to-without-fetch", {"save_to": "/tmp/csgw-hostile-never.bin"},
                "save_to needs fetch"),
        refused("save_to-etc", {"fetch": 1, "save_to": "/etc/csgw-hostile.bin"},
                "outside the allowed directories"),
        refused("save_to-relative", {"fetch": 1, "save_to": "x.bin"},
                "save_to must be an absolute path"),
        refused("save_to-NUL", {"fetch": 1, "save_to": "/tmp/a\x00b"},
                "save_to contains a NUL character"),
        refused("save_to-10MB", {"fetch": 1, "save_to": "/" + HUGE}, "save_to",
                "at most 4096 characters"),
    ],
    "handoff": [
        *tab_cases({"reason": "sign in"}),
        *no_target_cases({"tab": TAB, "reason": "sign in"}),
        *missing({"tab": TAB, "reason": "sign in"}, "reason"),
        *timeout_cases({"tab": TAB, "reason": "sign in"}),
        extra_fields({"tab": TAB, "reason": "sign in"}),
        refused("reason-empty", {"tab": TAB, "reason": ""}, "reason", "at least 1 character"),
        refused("reason-10MB", {"tab": TAB, "reason": HUGE}, "reason",
                "at most 200 characters"),
        refused("wait-word", {"tab": TAB, "reason": "x", "wait": "maybe"}, "wait",
                "Input should be a valid boolean"),
    ],
    "live_view": [
        *tab_cases({}),
        extra_fields({}),
        refused("control-word", {"control": "please"}, "control",
                "Input should be a valid boolean"),
        answered("every-tab", {}, _live_url),
    ],
    "record": [
        *tab_cases({"action": "stop"}),
        *no_target_cases({"tab": TAB, "action": "stop"}),
        *missing({"tab": TAB, "action": "stop"}, "action"),
        extra_fields({"tab": TAB, "action": "stop"}),
        refused("action-unknown", {"tab": TAB, "action": "pause"}, "action",
                "'start' or 'stop'"),
        refused("stop-nothing", {"tab": TAB, "action": "stop"}, "is not being recorded",
                "action: start"),
        refused("max_seconds-zero", {"tab": TAB, "action": "start", "max_seconds": 0},
                "max_seconds", "greater than or equal to 1"),
        refused("save_to-etc", {"tab": TAB, "action": "start",
                                "save_to": "/etc/csgw-hostile.webm"},
                "outside the allowed directories"),
        refused("save_to-relative", {"tab": TAB, "action": "start", "save_to": "x.webm"},
                "save_to must be an absolute path"),
    ],
    "handle_dialog": [
        *tab_cases({"accept": True}),
        *no_target_cases({"tab": TAB, "accept": True}),
        *missing({"tab": TAB, "accept": True}, "accept"),
        refused("accept-word", {"tab": TAB, "accept": "maybe"}, "accept",
                "Input should be a valid boolean"),
        refused("prompt_text-10MB", {"tab": TAB, "accept": True, "prompt_text": HUGE},
                "prompt_text", "at most 100000 characters"),
        refused("no-dialog", {"tab": TAB, "accept": False}, "tab", "has no open dialog"),
    ],
}

CASES = [pytest.param(tool, case, id=f"{tool}-{case.id}")
         for tool, cases in TABLE.items() for case in cases]


# ------------------------------------------------------------------------ fixtures


@dataclass
class Hostile:
    client: Client
    log: Path
    tab: int
    calls: int = 0

    async def call(self, tool: str, args: dict[str, Any]) -> Any:
        """Every call of this module goes through here, so the call log can be checked
        against the exact number of calls made."""
        self.calls += 1
        return await self.client.call_tool(tool, args, meta=STRUCTURED)


@pytest.fixture(scope="module")
async def hostile(
    topology: Topology, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[Hostile]:
    log = tmp_path_factory.mktemp("hostile") / "calls.jsonl"
    env = topology.client_env() | {"SSH_PROXY_TO": "h1", "MCP_DEBUG_LOG": str(log)}
    async with open_gateway(env, ["--tools", "all"], errlog=sys.stderr) as client:
        await wait_for_targets(client, {"default": "up"})
        nav = await call_ok(client, "navigate", {"url": PAGE})
        state = Hostile(client, log, int(nav["tab"]), calls=len(_log_lines(log)))
        await _still_serving(state)
        yield state


def _fill(args: dict[str, Any], tab: int) -> dict[str, Any]:
    return {key: tab if value is TAB else value for key, value in args.items()}


def _log_lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


async def _still_serving(h: Hostile) -> None:
    """The same gateway answers, and the steady tab is where it was."""
    with anyio.fail_after(ERROR_BOUND):
        ping = await h.call("ping", {})
        state = await h.call("evaluate", {
            "tab": h.tab, "expression": "[location.href, document.getElementById('p').textContent]",
        })
    assert not ping.is_error and ping.structured_content["connected"] is True, text_of(ping)
    assert not state.is_error, text_of(state)
    assert state.structured_content["value"] == [PAGE, "steady"]


# --------------------------------------------------------------------------- tests


async def test_table_covers_every_tool(hostile: Hostile) -> None:
    listed = {tool.name for tool in (await hostile.client.list_tools()).tools}
    assert listed == set(TABLE), (
        f"tools without hostile cases: {sorted(listed - set(TABLE))}; "
        f"cases for tools that do not exist: {sorted(set(TABLE) - listed)}")
    assert all(TABLE[name] for name in listed)


@pytest.mark.parametrize(("tool", "case"), CASES)
async def test_hostile_case(hostile: Hostile, tool: str, case: Case) -> None:
    args = _fill(case.args, hostile.tab)
    with anyio.fail_after(CASE_BOUND):
        result = await hostile.call(tool, args)
    text = text_of(result)
    if case.check is None:
        assert result.is_error, f"{tool} accepted {case.id}: {result.structured_content!r}"[:2000]
        for word in case.words:
            assert word in text, (word, text[:2000])
        assert "internal gateway error" not in text and "Traceback" not in text, text[:2000]
        assert len(text) <= 12_000, f"error text of {len(text)} characters"
    else:
        assert not result.is_error, f"{tool} {case.id} failed: {text[:2000]}"
        assert isinstance(result.structured_content, dict)
        await case.check(hostile, result.structured_content)
    await _still_serving(hostile)


async def test_zz_call_log_after_the_hostile_run(hostile: Hostile) -> None:
    """Runs last (module order): one valid JSON line per call made, none carrying 10 MB."""
    with anyio.fail_after(ERROR_BOUND):
        while len(_log_lines(hostile.log)) < hostile.calls:  # lines land as calls end
            await anyio.sleep(0.1)
    lines = _log_lines(hostile.log)
    assert len(lines) == hostile.calls
    records = [json.loads(line) for line in lines]
    assert all(isinstance(r, dict) and r["outcome"] in {"ok", "error"} for r in records)
    ids = [r["call_id"] for r in records]
    assert len(set(ids)) == len(ids)
    assert max(len(line) for line in lines) < 200_000
    assert not [line for line in lines if "x" * 100_000 in line]
    cut = [r for r in records if "…[" in json.dumps(r["arguments"], ensure_ascii=False)]
    assert len(cut) >= 10  # the 10 MB cases are logged, cut and marked


# ----------------------------------------------------------- below the MCP client


async def test_garbage_and_too_deep_requests_do_not_stop_the_server(
    topology: Topology, tmp_path: Path
) -> None:
    """Speak JSON-RPC on the gateway's stdin directly: the MCP client itself refuses to
    send what is tested here (its serializer stops near 400 levels of nesting)."""
    env = topology.client_env() | {"SSH_PROXY_TO": "h1"}
    async with open_raw_stdio(env) as rpc:
        deep = json.dumps({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
            "name": "cdp_command", "arguments": {"method": "Browser.getVersion", "params": {
                "x": "PLACEHOLDER"}}}})
        for line in ["not json at all", "{", "[]", '{"jsonrpc": "2.0"}', "\x00\x01",
                     deep.replace('"PLACEHOLDER"', _deep_json(10_000)),
                     deep.replace('"PLACEHOLDER"', "[" * 10_000 + "]" * 10_000)]:
            await rpc.send_line(line)
        reply = await rpc.request("tools/call", {"name": "cdp_command", "arguments": {
            "method": "Browser.getVersion"}}, timeout=ERROR_BOUND)
        assert reply["result"]["isError"] is False
        assert reply["result"]["structuredContent"]["result"]["product"].startswith("Chrome/")


async def test_too_deep_request_gets_an_error_reply(topology: Topology) -> None:
    """A request nested 10,000 deep must be answered with an error for its id, not left
    unanswered (the client would wait forever for it)."""
    env = topology.client_env() | {"SSH_PROXY_TO": "h1"}
    async with open_raw_stdio(env) as rpc:
        reply = await rpc.request("tools/call", {"name": "cdp_command", "arguments": {
            "method": "Runtime.evaluate", "params": {"x": RawJson(_deep_json(10_000))}}},
            timeout=ERROR_BOUND)
        assert "error" in reply or reply["result"]["isError"] is True, reply
        text = json.dumps(reply)
        assert "deep" in text or "nest" in text, text[:2000]


async def test_catastrophic_filter_regex_does_not_freeze_the_gateway(topology: Topology) -> None:
    """``network_requests(filter="/(a+)+$/")`` over a URL with a long run of a's makes
    Python's backtracking ``re`` take ~2^40 steps. The gateway runs one event loop, so
    such a filter must be bounded (or refused), or every target stops answering.
    Its own gateway: a frozen one would take the table's cases down with it."""
    env = topology.client_env() | {"SSH_PROXY_TO": "h1"}
    async with open_gateway(env) as gw:
        await wait_for_targets(gw, {"default": "up"})
        tab = (await call_ok(gw, "navigate", {"url": data_url("redos")}))["tab"]
        # Port 2 on the remote loopback refuses: the request fails fast but is listed.
        await call_ok(gw, "evaluate", {"tab": tab, "expression":
                      "fetch('http://127.0.0.1:2/' + 'a'.repeat(40) + '!').catch(() => 0)"})
        with anyio.fail_after(ERROR_BOUND):
            result = await gw.call_tool("network_requests", {"tab": tab, "filter": "/(a+)+$/"})
            ping = await call_ok(gw, "ping")
        assert ping["connected"] is True
        assert result.is_error or result.structured_content["requests"] == [], text_of(result)
