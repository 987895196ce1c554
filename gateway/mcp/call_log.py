"""The JSON-lines call log.

stdout is the MCP channel, so nothing here ever writes to it. The call log is
one JSON object per tool call (call id, client session, tool, target, tab,
arguments, duration, outcome, error, result size), redacted before it is written. The file is
created 0600 and opened with ``O_NOFOLLOW``: a symlink planted at the log path
is refused (with a warning on stderr) instead of followed, so the gateway
cannot be tricked into appending to somebody else's file.

Sizes are bounded too: a client may send a 10 MB expression or URL, and the
log keeps one line per call, so every string in a record is cut to
``MAX_LOGGED_CHARS`` (saying how much was left out) after redaction — the
log stays greppable and cannot be used to fill the disk at 10 MB a call.
"""

from __future__ import annotations

import json
import os
from collections import deque
from pathlib import Path
from typing import Any

import structlog

from gateway.output.redact import redact

__all__ = ["MAX_LOGGED_CHARS", "RECENT", "RECENT_FIELDS", "CallLog", "bounded"]

log = structlog.get_logger("gateway.log")

MAX_LOGGED_CHARS = 4096
"""Longest string a call-log record keeps (arguments, error text)."""
RECENT = 500
"""Records kept in memory (``CallLog.recent``) for the live view's list of calls."""
RECENT_FIELDS = ("ts", "event", "tool", "target", "tab", "duration_ms", "outcome", "error",
                 "reason", "ended", "hold_s", "held_s")
"""What ``recent`` keeps of a record: never arguments or sizes."""
_SCALARS = (int, float, bool)


class CallLog:
    """Append-only JSON-lines file of tool calls (none when disabled), and the newest
    records' outlines in memory (``recent``: the live view), logged to a file or not."""

    def __init__(self, fd: int | None, path: Path | None) -> None:
        self._fd = fd
        self.path = path
        self.recent: deque[dict[str, object]] = deque(maxlen=RECENT)

    @property
    def enabled(self) -> bool:
        return self._fd is not None

    @classmethod
    def open(cls, path: Path | None) -> CallLog:
        if path is None:
            return cls(None, None)
        try:
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW
                         | os.O_CLOEXEC, 0o600)
        except OSError as exc:
            reason = ("it is a symlink, which the gateway does not follow"
                      if path.is_symlink() else exc.strerror or str(exc))
            log.warning("call log disabled", path=str(path), reason=reason)
            return cls(None, None)
        os.fchmod(fd, 0o600)  # an existing file keeps no wider mode than a new one
        return cls(fd, path)

    def remember(self, record: dict[str, Any]) -> None:
        """Keep what the live view shows of a record (``RECENT_FIELDS``), redacted and
        cut short, in ``recent``; cheap enough for every call, logged or not: none of
        these keys is one ``redact`` blanks, so only their values are walked, and a
        number or None (most of them) is kept as it is."""
        kept: dict[str, object] = {}
        for key in RECENT_FIELDS:
            if key in record:
                value = record[key]
                kept[key] = (value if value is None or type(value) in _SCALARS
                             else bounded(redact(value), 500))
        self.recent.append(kept)

    def write(self, record: dict[str, Any]) -> None:
        self.remember(record)
        if self._fd is None:
            return
        line = json.dumps(bounded(redact(record)), default=str, ensure_ascii=False) + "\n"
        try:
            os.write(self._fd, line.encode())
        except OSError as exc:
            log.warning("call log write failed; logging to file stops", error=str(exc))
            self.close()

    def close(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)


def bounded(value: object, limit: int = MAX_LOGGED_CHARS) -> object:
    """``value`` with every string longer than ``limit`` cut, and the cut said.

    Expects redacted input: ``redact`` has already replaced containers nested
    deeper than its ``MAX_DEPTH``, so this recursion is shallow.
    """
    if isinstance(value, str):
        if len(value) <= limit:
            return value
        return f"{value[:limit]}…[{len(value) - limit} more characters]"
    if isinstance(value, dict):
        return {bounded(key, limit): bounded(item, limit) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [bounded(item, limit) for item in value]
    return value
