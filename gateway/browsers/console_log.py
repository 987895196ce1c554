"""A tab's console: ``console.*`` calls, uncaught exceptions, browser log entries.

Pure: CDP events go in (``on_event``), entries come out (``query``). The gateway
feeds it from the moment it attaches to a tab, so what a page logged before
the agent's first call is there. Memory is bounded by the ring underneath
(``ring.EpochRing``): ``capacity`` entries, the last ``KEEP_NAVIGATIONS``
main-frame navigations.
"""

from __future__ import annotations

import json
import math
import re
import time
from dataclasses import dataclass
from typing import Any

from gateway.browsers.ring import KEEP_NAVIGATIONS, EpochRing

__all__ = ["KEEP_NAVIGATIONS", "LEVELS", "ConsoleEntry", "ConsoleLog"]

LEVELS = ("error", "warning", "info", "debug")
MAX_TEXT = 8_000

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


class ConsoleLog(EpochRing[ConsoleEntry]):
    """Bounded console history of one tab."""

    def __init__(self, capacity: int = 1000) -> None:
        super().__init__(capacity)
        self.malformed = 0

    def on_event(self, method: str, params: dict[str, Any]) -> None:
        try:
            if method == "Runtime.consoleAPICalled":
                self._console_call(params)
            elif method == "Runtime.exceptionThrown":
                self._exception(params.get("exceptionDetails", {}), params.get("timestamp"))
            elif method == "Log.entryAdded":
                self._log_entry(params.get("entry", {}))
        except (AttributeError, KeyError, TypeError, ValueError, OverflowError):
            self.malformed += 1  # not the protocol's shape: skip it, keep the rest

    def query(
        self, levels: set[str] | None = None, since: int | None = None, limit: int = 100
    ) -> list[ConsoleEntry]:
        """The newest ``limit`` entries matching, oldest first."""
        return self._select(lambda e: levels is None or e.level in levels, since, limit)

    def _add(self, level: str, text: str, source: str, url: str | None, time: str,
             stack: str | None = None) -> None:
        if len(text) > MAX_TEXT:
            text = text[:MAX_TEXT] + f"… [{len(text) - MAX_TEXT} more characters]"
        self._keep(ConsoleEntry(self._next_id(), level, text, source, url, time,
                                self.navigation, stack))

    def _console_call(self, params: dict[str, Any]) -> None:
        kind = params.get("type", "log")
        stack = params.get("stackTrace") or {}
        top = (stack.get("callFrames") or [{}])[0]
        self._add(
            _CONSOLE_LEVEL.get(kind, "info"),
            _format_args(params.get("args", [])) or (kind if kind != "log" else ""),
            "console",
            _location(top.get("url"), top.get("lineNumber"), top.get("columnNumber")),
            _iso(params.get("timestamp")),
            _stack_text(stack) if kind in ("error", "trace", "assert") else None,
        )

    def _exception(self, details: dict[str, Any], timestamp: float | None) -> None:
        exception = details.get("exception") or {}
        description = exception.get("description") or _remote_text(exception) if exception else ""
        text = details.get("text", "Uncaught")
        headline = f"{text} {description.splitlines()[0]}" if description else text
        stack = (description if description and "\n" in description
                 else _stack_text(details.get("stackTrace")))
        self._add("error", headline.strip(), "exception",
                  _location(details.get("url"), details.get("lineNumber"),
                            details.get("columnNumber")),
                  _iso(timestamp), stack)

    def _log_entry(self, entry: dict[str, Any]) -> None:
        self._add(_LOG_LEVEL.get(entry.get("level", "info"), "info"), entry.get("text", ""),
                  entry.get("source", "other"),
                  _location(entry.get("url"), entry.get("lineNumber"), None),
                  _iso(entry.get("timestamp")), _stack_text(entry.get("stackTrace")))
