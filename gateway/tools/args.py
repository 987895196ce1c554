"""Argument types shared by the tool families: one definition each.

They carry no per-tool description: they recur in nearly every tool, and the text
would sit in the agent's context once per tool on every turn. The server's
instructions explain them once (``ARGUMENTS_NOTE`` in ``gateway.server.app``).
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

__all__ = ["ABSENT", "MaxChars", "TabArg", "TargetArg", "TimeoutArg", "absent"]

ABSENT = "x-absent"
"""Marks a result field that is left out, rather than sent as null, when it does not
apply (the server's schema compaction then publishes its plain type)."""

TargetArg = Annotated[str | None, Field(max_length=64)]
TabArg = Annotated[int, Field(ge=1, le=2**31)]
TimeoutArg = Annotated[float | None, Field(gt=0, le=600)]
MaxChars = Annotated[int, Field(ge=100, le=50_000_000)]


def absent() -> Any:
    """A result field's default: None, and then not in the result at all — a field that
    applies to few results (a scanned browser's pid) costs the others nothing."""
    return Field(default=None, exclude_if=_is_none, json_schema_extra={ABSENT: True})


def _is_none(value: object) -> bool:
    return value is None
