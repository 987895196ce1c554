"""Argument types shared by the tool families: one definition each.

Most carry no per-tool description: they recur in nearly every tool, and the text
would sit in the agent's context once per tool on every turn. The server's
instructions explain them once (``INSTRUCTIONS`` in ``gateway.mcp.app``), and
under the names in ``SHARED`` their bounds too: the schema compaction
(``gateway.mcp.schemas``) publishes a property of exactly that shape as its bare
type, and a default in ``SHARED_DEFAULTS`` is said once too. A new tool stays small
by taking these types under these names (and these defaults).
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from gateway.output.sizing import DEFAULT_MAX_CHARS
from gateway.page.act.models import Ref

__all__ = ["DEFAULT_LIMIT", "SHARED", "SHARED_DEFAULTS", "ContextArg", "LimitArg", "MaxChars",
           "OptionalTab", "SinceArg", "TabArg", "TargetArg", "TimeoutArg", "UrlArg"]

TargetArg = Annotated[str | None, Field(max_length=64)]
TabArg = Annotated[int, Field(ge=1, le=2**31)]
TimeoutArg = Annotated[float | None, Field(gt=0, le=600)]
MaxChars = Annotated[int, Field(ge=100, le=50_000_000)]
SinceArg = Annotated[int | None, Field(ge=0)]
"""A buffer's ``last_id`` from an earlier call: only entries after it."""
LimitArg = Annotated[int, Field(ge=1, le=10_000)]
"""At most this many entries, the newest."""
DEFAULT_LIMIT = 100
OptionalTab = Annotated[int | None, Field(ge=1, le=2**31)]
"""The tab of a tool that can do without one (``navigate`` opens one, ``cdp_command``
talks to the browser): bounded as ``TabArg``, so its bounds are said once too."""
UrlArg = Annotated[str, Field(description="Absolute URL (http, https, about, data).",
                              max_length=2 * 1024 * 1024)]
ContextArg = Annotated[str | None, Field(
    description="An isolated browser context (own cookies, storage), made on first use.",
    pattern=r"^[A-Za-z0-9_.-]{1,64}$")]

SHARED: dict[str, Any] = {"tab": TabArg, "target": TargetArg, "timeout_s": TimeoutArg,
                          "max_chars": MaxChars, "since": SinceArg, "limit": LimitArg,
                          "url": UrlArg, "context": ContextArg, "ref": Ref}
"""The argument names under which these types are shared, bounds said once."""
SHARED_DEFAULTS: dict[str, Any] = {"max_chars": DEFAULT_MAX_CHARS, "limit": DEFAULT_LIMIT}
"""The defaults of shared arguments, said once: a tool's own default is published."""
