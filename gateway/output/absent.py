"""Result fields left out, rather than sent as null (or false, or 0), when they do not apply.

A field that applies to few results (a scanned browser's pid, a failed step's
error, a body's saved path) would otherwise cost every other result a ``null``
and every tool definition an ``anyOf [X, null]``. Marked with ``absent()``, it
is dropped from a result while it is None, and the server's schema compaction
publishes its plain type (``ABSENT`` tells it which fields). A flag or count that
is nearly always at rest (``truncated``, ``omitted_chars``, ``dropped``) is
``absent(False)`` or ``absent(0)``: a model reads ``{"value": 2}`` as well as
``{"value": 2, "truncated": false, "omitted_chars": 0}``, and every call costs less.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

__all__ = ["ABSENT", "absent"]

ABSENT = "x-absent"


def absent(rest: bool | int | None = None) -> Any:
    """A result field's default, ``rest`` (None, False or 0), and then not in the result
    at all."""
    def at_rest(value: object) -> bool:
        return value is rest or (type(value) is type(rest) and value == rest)

    return Field(default=rest, exclude_if=at_rest, json_schema_extra={ABSENT: True})
