"""A tab's console: ``console.*`` calls, uncaught exceptions, browser log entries.

Pure: CDP events go in (``on_event``), entries come out (``query``). The gateway
feeds it from the moment it attaches to a tab, so what a page logged before
the agent's first call is there. Memory is bounded by the ring underneath
(``ring.EpochRing``): ``capacity`` entries, the last ``KEEP_NAVIGATIONS``
main-frame navigations.

A console event can also come in as its frame's text (``keep_frame``, from the
connection's fast path, ``frames``): it takes its id and navigation on arrival
and is parsed only when read, so a flood's messages pushed out of the ring unread
cost no parse at all — and are counted in ``dropped`` all the same. A tab flooding its
console is sampled instead (``console_flood``): ``sampled`` then says the gateway did not
see every message, and ``dropped`` is a lower bound.
"""

from __future__ import annotations

import json
import math
import re
import time
from dataclasses import dataclass
from typing import Any, NamedTuple, cast

from gateway.cdp.frames import parse_message
from gateway.tabs.ring import KEEP_NAVIGATIONS, EpochRing

__all__ = ["EVENTS", "KEEP_NAVIGATIONS", "LEVELS", "MAX_FRAME", "ConsoleEntry", "ConsoleLog",
           "UnreadEvent"]

EVENTS = frozenset({"Runtime.consoleAPICalled", "Runtime.exceptionThrown", "Log.entryAdded"})
"""The events a console is made of."""
LEVELS = ("error", "warning", "info", "debug")
MAX_TEXT = 8_000
MAX_FRAME = 16_384
"""A console frame kept as text up to this length (a flood's are ~360 characters); a
longer one is parsed at once, so the ring holds no more than it would as entries."""

_CONSOLE_LEVEL = {
    "error": "error", "assert": "error", "warning": "warning", "info": "info", "log": "info",
    "dir": "info", "dirxml": "info", "table": "info", "trace": "info", "count": "info",
    "timeEnd": "info", "startGroup": "info", "startGroupCollapsed": "info", "endGroup": "debug",
    "clear": "debug", "profile": "debug", "profileEnd": "debug", "debug": "debug",
}
_LOG_LEVEL = {"error": "error", "warning": "warning", "info": "info", "verbose": "debug"}
_FORMAT_RE = re.compile(r"%[sdifoOc%]")


@dataclass(frozen=True)
class ConsoleEntry:
    id: int
    level: str
    text: str
    source: str          # console / exception / network / security / violation / …
    url: str | None      # "url:line:column" of where it came from, when known
    time: str            # ISO 8601, UTC
    navigation: int      # which main-frame navigation of the tab it belongs to
    stack: str | None = None


def _iso(ms: float | None) -> str:
    """A CDP timestamp (ms since the epoch; none: now) as ISO 8601 UTC with milliseconds.

    Same text as ``datetime.isoformat(timespec="milliseconds")``, but the date and time
    of day are formatted once per second and reused: a page logging thousands of
    messages a second would otherwise spend most of the per-entry work here.
    """
    global _second_text
    # Split and rounded as datetime.fromtimestamp does, so the text is the same to the ms.
    fraction, whole = math.modf((ms if ms else time.time() * 1000) / 1000)
    seconds, micros = int(whole), round(fraction * 1e6)
    if micros >= 1_000_000:
        seconds, micros = seconds + 1, micros - 1_000_000
    cached_second, text = _second_text
    if seconds != cached_second:
        text = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds))
        _second_text = (seconds, text)
    return f"{text}.{micros // 1000:03d}Z"


_second_text: tuple[int, str] = (-1, "")


def _location(url: str | None, line: int | None, column: int | None) -> str | None:
    if not url:
        return None
    where = url if len(url) <= 300 else url[:299] + "…"
    if line is not None:
        where += f":{line + 1}"
        if column is not None:
            where += f":{column + 1}"
    return where


def _remote_text(arg: dict[str, Any]) -> str:
    if "value" in arg:
        value = arg["value"]
        if isinstance(value, str):
            return value
        if type(value) is int:  # the common number; json.dumps would give the same text
            return str(value)
        return json.dumps(value, ensure_ascii=False)
    if "unserializableValue" in arg:
        return str(arg["unserializableValue"])
    return str(arg.get("description") or arg.get("className") or arg.get("type", ""))


def _format_args(args: list[dict[str, Any]]) -> str:
    """console.log's own formatting: ``%s``/``%d``/``%o`` substituted, ``%c`` (CSS) dropped."""
    if not args:
        return ""
    texts = [_remote_text(a) for a in args]
    first = texts[0]
    if args[0].get("type") != "string" or "%" not in first:
        return " ".join(texts)
    rest = iter(texts[1:])
    consumed = 0

    def substitute(match: re.Match[str]) -> str:
        nonlocal consumed
        spec = match.group(0)
        if spec == "%%":
            return "%"
        value = next(rest, None)
        if value is None:
            return spec
        consumed += 1
        return "" if spec == "%c" else value

    head = _FORMAT_RE.sub(substitute, first)
    return " ".join([head, *texts[1 + consumed:]])


def _stack_text(stack: dict[str, Any] | None) -> str | None:
    if not stack:
        return None
    lines = []
    for frame in stack.get("callFrames", [])[:20]:
        name = frame.get("functionName") or "<anonymous>"
        where = _location(frame.get("url"), frame.get("lineNumber"), frame.get("columnNumber"))
        lines.append(f"    at {name} ({where})" if where else f"    at {name}")
    return "\n".join(lines) or None


class UnreadEvent(NamedTuple):
    """A console event kept as its frame's text until someone reads the console."""

    id: int
    navigation: int
    frame: str
    received_ms: float   # its time, should the event carry none


class ConsoleLog(EpochRing[ConsoleEntry | UnreadEvent]):
    """Bounded console history of one tab."""

    def __init__(self, capacity: int = 1000) -> None:
        super().__init__(capacity)
        self.malformed = 0
        self.seen = 0          # events taken in, kept or not (a flood's sampler reads it)
        self.sampled = False   # a flood was sampled: not every message was seen
        self._unread = 0

    def _next_id(self) -> int:
        self.seen += 1
        return super()._next_id()

    def keep_frame(self, frame: str) -> bool:
        """Keep a console event's frame as it came (False: too long, parse it now)."""
        if len(frame) > MAX_FRAME:
            return False
        self._keep(UnreadEvent(self._next_id(), self.navigation, frame, time.time() * 1000))
        self._unread += 1
        return True

    def on_event(self, method: str, params: dict[str, Any]) -> None:
        described = self._describe(method, params)
        if described is not None:
            fields, when = described
            self._keep(fields.entry(self._next_id(), when, self.navigation))

    def query(
        self, levels: set[str] | None = None, since: int | None = None, limit: int = 100
    ) -> list[ConsoleEntry]:
        """The newest ``limit`` entries matching, oldest first."""
        self._read_frames()  # from here on every entry is a ConsoleEntry
        entries = cast("list[ConsoleEntry]", self._select(
            lambda e: levels is None or cast(ConsoleEntry, e).level in levels, since, limit))
        return entries

    def _read_frames(self) -> None:
        """Turn every kept frame into its entry; one that is not a console event of the
        protocol's shape is counted in ``malformed`` and goes."""
        if not self._unread:
            return
        self._unread = 0
        entries = self._entries
        for entry_id, kept in list(entries.items()):
            if type(kept) is not UnreadEvent:
                continue
            entry = self._read(kept)
            if entry is None:
                del entries[entry_id]
            else:
                entries[entry_id] = entry

    def _read(self, kept: UnreadEvent) -> ConsoleEntry | None:
        """The entry of a kept frame; None for one that is not a console event of the
        protocol's shape (counted in ``malformed``)."""
        try:
            message = parse_message(kept.frame)
            method, params = message["method"], message["params"]
        except (ValueError, RecursionError, TypeError, KeyError):
            method = params = None
        if type(method) is not str or type(params) is not dict or method not in EVENTS:
            self.malformed += 1
            return None
        described = self._describe(method, params, kept.received_ms)  # counts its own
        if described is None:
            return None
        fields, when = described
        return fields.entry(kept.id, when, kept.navigation)

    def _describe(self, method: str, params: dict[str, Any],
                  received_ms: float | None = None) -> tuple[_Fields, str] | None:
        """A console event's fields and time (``received_ms`` or now if it has none); None
        for another event or one not of the protocol's shape (counted in ``malformed``)."""
        try:
            if method == "Runtime.consoleAPICalled":
                return _console_call(params), _iso(params.get("timestamp") or received_ms)
            if method == "Runtime.exceptionThrown":
                return (_exception(params.get("exceptionDetails", {})),
                        _iso(params.get("timestamp") or received_ms))
            if method == "Log.entryAdded":
                entry = params.get("entry", {})
                return _log_entry(entry), _iso(entry.get("timestamp") or received_ms)
        except (AttributeError, KeyError, TypeError, ValueError, OverflowError):
            self.malformed += 1  # not the protocol's shape: skip it, keep the rest
        return None


class _Fields(NamedTuple):
    """What an entry says, before it has an id, a time and a navigation."""

    level: str
    text: str
    source: str
    url: str | None
    stack: str | None

    def entry(self, entry_id: int, time: str, navigation: int) -> ConsoleEntry:
        return ConsoleEntry(entry_id, self.level, self.text, self.source, self.url, time,
                            navigation, self.stack)


def _fields(level: str, text: str, source: str, url: str | None,
            stack: str | None = None) -> _Fields:
    if len(text) > MAX_TEXT:
        text = text[:MAX_TEXT] + f"… [{len(text) - MAX_TEXT} more characters]"
    return _Fields(level, text, source, url, stack)


def _console_call(params: dict[str, Any]) -> _Fields:
    kind = params.get("type", "log")
    stack = params.get("stackTrace") or {}
    top = (stack.get("callFrames") or [{}])[0]
    return _fields(
        _CONSOLE_LEVEL.get(kind, "info"),
        _format_args(params.get("args", [])) or (kind if kind != "log" else ""),
        "console",
        _location(top.get("url"), top.get("lineNumber"), top.get("columnNumber")),
        _stack_text(stack) if kind in ("error", "trace", "assert") else None,
    )


def _exception(details: dict[str, Any]) -> _Fields:
    exception = details.get("exception") or {}
    description = exception.get("description") or _remote_text(exception) if exception else ""
    text = details.get("text", "Uncaught")
    headline = f"{text} {description.splitlines()[0]}" if description else text
    stack = (description if description and "\n" in description
             else _stack_text(details.get("stackTrace")))
    return _fields("error", headline.strip(), "exception",
                   _location(details.get("url"), details.get("lineNumber"),
                             details.get("columnNumber")), stack)


def _log_entry(entry: dict[str, Any]) -> _Fields:
    return _fields(_LOG_LEVEL.get(entry.get("level", "info"), "info"), entry.get("text", ""),
                   entry.get("source", "other"),
                   _location(entry.get("url"), entry.get("lineNumber"), None),
                   _stack_text(entry.get("stackTrace")))
