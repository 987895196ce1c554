"""Argument types shared by the tool families: one definition each.

They carry no per-tool description: they recur in nearly every tool, and the text
would sit in the agent's context once per tool on every turn. The server's
instructions explain them once (``INSTRUCTIONS`` in ``gateway.server.app``), and
under the names in ``SHARED`` their bounds too: the schema compaction
(``gateway.server.schemas``) publishes a property of exactly that shape as its bare
type. A new tool stays small by taking these types under these names.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

__all__ = ["SHARED", "MaxChars", "TabArg", "TargetArg", "TimeoutArg"]

TargetArg = Annotated[str | None, Field(max_length=64)]
TabArg = Annotated[int, Field(ge=1, le=2**31)]
TimeoutArg = Annotated[float | None, Field(gt=0, le=600)]
MaxChars = Annotated[int, Field(ge=100, le=50_000_000)]

SHARED: dict[str, Any] = {"tab": TabArg, "target": TargetArg, "timeout_s": TimeoutArg,
                          "max_chars": MaxChars}
"""The argument names under which these types are shared, bounds said once."""
