"""How user values appear in configuration error messages (pure).

Every message names the source, the dotted key and the reason; these helpers
keep the value shown in a reason short, one line and unambiguous, and name TOML
types the way the user wrote them rather than as Python types.

A parser that refuses a value raises ``BadValue``, the reason only: it does not know
where the value came from. Whoever does makes the ``ConfigError``, once: ``keyed``
for an env var or an option, the targets file's one translation of pydantic's
errors (``file.py``) for a key in the file (a ``BadValue`` is a ``ValueError``, so
pydantic carries it there).
"""

from __future__ import annotations

import json
import re
from contextlib import AbstractContextManager

from gateway.errors import ConfigError, map_exceptions

__all__ = ["BadValue", "bad_char", "breaks_a_line", "dotted", "keyed", "show", "type_name"]


class BadValue(ValueError):
    """A value refused; ``str()`` is the reason (what is wrong, what is expected)."""


def keyed(source: str, key: str = "") -> AbstractContextManager[None]:
    """A ``BadValue`` of the block as the ``ConfigError`` of ``source`` (and ``key``)."""
    return map_exceptions({BadValue: lambda exc: ConfigError(source, key, str(exc))})

_BARE_KEY_RE = re.compile(r"[A-Za-z0-9_-]+")


def show(text: str, limit: int = 80) -> str:
    """Quote a user value for an error message without flooding it."""
    shown = text if len(text) <= limit else text[:limit] + "…"
    return repr(shown)


def bad_char(text: str) -> str | None:
    """Return the first whitespace or control character in ``text``, if any."""
    for ch in text:
        if ch.isspace() or ord(ch) < 0x20 or 0x7F <= ord(ch) < 0xA0:
            return ch
    return None


def breaks_a_line(text: str) -> bool:
    """Whether ``text`` holds NUL, CR or LF: no path the gateway writes or logs may (a
    newline would forge a log line; NUL ends a C string early)."""
    return "\x00" in text or "\n" in text or "\r" in text


def dotted(prefix: str, name: str) -> str:
    """Join a dotted key the way TOML would write it, quoting odd names so the
    message stays one readable line (a key may hold dots, spaces or newlines)."""
    part = name if _BARE_KEY_RE.fullmatch(name) else json.dumps(name)
    return f"{prefix}.{part}" if prefix else part


_TOML_TYPES = ((bool, "boolean"), (int, "integer"), (float, "float"), (str, "string"),
               (dict, "table"), (list, "array"))  # bool first: it is an int too


def type_name(value: object) -> str:
    """TOML's name for a parsed value's type, for 'expected X, got Y' messages."""
    for kind, name in _TOML_TYPES:
        if isinstance(value, kind):
            return name
    return type(value).__name__  # dates and times
