"""Result fields left out, rather than sent as null, when they do not apply.

A field that applies to few results (a scanned browser's pid, a failed step's
error, a body's saved path) would otherwise cost every other result a ``null``
and every tool definition an ``anyOf [X, null]``. Marked with ``absent()``, it
is dropped from a result while it is None, and the server's schema compaction
publishes its plain type (``ABSENT`` tells it which fields).
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

__all__ = ["ABSENT", "absent"]

ABSENT = "x-absent"


def absent() -> Any:
    """A result field's default: None, and then not in the result at all."""
    return Field(default=None, exclude_if=_is_none, json_schema_extra={ABSENT: True})


def _is_none(value: object) -> bool:
    return value is None
