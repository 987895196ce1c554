"""Argument types shared by the tool families: one definition each.

They carry no per-tool description: they recur in nearly every tool, and the text
would sit in the agent's context once per tool on every turn. The server's
instructions explain them once (``ARGUMENTS_NOTE`` in ``gateway.server.app``).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

__all__ = ["MaxChars", "TabArg", "TargetArg", "TimeoutArg"]

TargetArg = Annotated[str | None, Field(max_length=64)]
TabArg = Annotated[int, Field(ge=1, le=2**31)]
TimeoutArg = Annotated[float | None, Field(gt=0, le=600)]
MaxChars = Annotated[int, Field(ge=100, le=50_000_000)]

