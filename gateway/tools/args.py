"""Argument types shared by the tool families: one definition, one description."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

__all__ = ["MaxChars", "TabArg", "TargetArg", "TimeoutArg"]

TargetArg = Annotated[
    str | None,
    Field(description="Target name from list_targets. Optional when only one target exists "
                      "or when `tab` is given.", max_length=64),
]
TabArg = Annotated[
    int, Field(description="Tab id from list_tabs / new_tab / navigate (unique across targets).",
               ge=1, le=2**31),
]
TimeoutArg = Annotated[
    float | None,
    Field(description="Seconds to wait for the browser (default: the target's "
                      "command_timeout_s, 30).", gt=0, le=600),
]
MaxChars = Annotated[
    int,
    Field(description="Longest value returned, in characters; longer values are cut and "
                      "marked truncated.", ge=100, le=50_000_000),
]
