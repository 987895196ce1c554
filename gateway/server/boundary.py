"""The one boundary every tool call crosses: errors mapped, the call timed and logged.

``Boundary.tool`` wraps each tool function once. A ``GatewayError`` becomes a tool
error with its own text — also when it was raised under a task group and arrives
wrapped in (possibly nested) exception groups; anything else becomes a tool error
that says it is a gateway bug, and the server keeps serving. Every call gets a
call-log line. This is also where the tools the gateway does not offer
(``--tools``, ``--read-only``: a ``gateway.tools.sets.Selection``) are left out: an
agent cannot call what it is never offered, and a call to one hears which flag
offers it (``withheld``).
``Boundary`` is the server's side of ``gateway.tools.definition.ToolRegistrar``.
"""

from __future__ import annotations

import functools
import itertools
import time
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from typing import Any, ParamSpec, TypeVar

import anyio
import structlog
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel

from gateway.errors import GatewayError
from gateway.server.call_log import CallLog
from gateway.server.schemas import compact_description, compact_input, compact_output
from gateway.tools.definition import ReadsAsText
from gateway.tools.sets import Selection

__all__ = ["MAX_ERROR_CHARS", "Boundary", "as_call_result", "client_session", "error_text",
           "failure_of"]

log = structlog.get_logger("gateway.server")

P = ParamSpec("P")
R = TypeVar("R", bound=BaseModel)

MAX_ERROR_CHARS = 10_000
"""Longest error text a client gets: an error may quote what was sent (V8 repeats a
10 MB identifier in its ReferenceError), and the text lands in a model's context."""


client_session: ContextVar[str | None] = ContextVar("client_session", default=None)
"""The MCP client session the current call came from (the HTTP transport's
``mcp-session-id``; None on stdio, where there is only one). Set by the server for
each call, read here so every call-log line says which client made it."""


def failure_of(exc: BaseException) -> BaseException:
    """What a failure really is: the first ``GatewayError`` anywhere inside (nested)
    exception groups; else a group's only leaf; else ``exc`` itself.

    A task group reports a child's failure as an ``ExceptionGroup``; the client must
    still hear "tab 3 has an open alert dialog …", not "ExceptionGroup".
    """
    if isinstance(exc, BaseExceptionGroup):
        leaves = _leaves(exc)
        for leaf in leaves:
            if isinstance(leaf, GatewayError):
                return leaf
        if len(leaves) == 1:
            return leaves[0]
    return exc


def _leaves(group: BaseExceptionGroup[BaseException]) -> list[BaseException]:
    leaves: list[BaseException] = []
    for inner in group.exceptions:
        leaves.extend(_leaves(inner) if isinstance(inner, BaseExceptionGroup) else [inner])
    return leaves


def error_text(exc: BaseException) -> str:
    """``str(exc)``, cut to ``MAX_ERROR_CHARS`` with a note saying so."""
    text = str(exc)
    if len(text) <= MAX_ERROR_CHARS:
        return text
    return (f"{text[:MAX_ERROR_CHARS]}… [error text cut: {len(text) - MAX_ERROR_CHARS} more "
            "characters]")


def as_call_result(result: BaseModel) -> CallToolResult:
    """What the client gets for a tool's result: the model's fields as structured
    content, and as text what a model reads easily — ``as_text()`` for a result that
    has one (a page view is its view, not a JSON string of escaped quotes and
    newlines), else compact JSON (no indentation: every space lands in a context)."""
    if isinstance(result, CallToolResult):
        return result  # the tool built its own content (screenshot: an image)
    text = result.as_text() if isinstance(result, ReadsAsText) else result.model_dump_json()
    return CallToolResult(content=[TextContent(text=text)],
                          structured_content=result.model_dump(mode="json"))


def _annotations(*, read_only: bool, destructive: bool) -> ToolAnnotations:
    """The hints that differ from MCP's defaults (not read-only, destructive, open
    world): a read-only tool says so; a tool that changes something but destroys
    nothing says that. Unset hints are left out of ``tools/list``."""
    if read_only:
        return ToolAnnotations(read_only_hint=True)
    return ToolAnnotations(destructive_hint=None if destructive else False)


def _publish_compact(server: MCPServer, name: str) -> None:
    """Publish ``name``'s schemas compactly (``schemas.py``); the SDK keeps validating
    with the pydantic models they were generated from."""
    tool = server._tool_manager.get_tool(name)
    assert tool is not None, name
    tool.parameters = compact_input(tool.parameters)
    metadata = tool.fn_metadata
    if metadata.output_schema is not None:
        metadata.output_schema = compact_output(metadata.output_schema)
    tool.__dict__.pop("output_schema", None)  # the SDK caches it on first read


class Boundary:
    """Registers tool functions on the MCP server behind the common call boundary."""

    def __init__(self, server: MCPServer, call_log: CallLog, *,
                 selection: Selection | None = None) -> None:
        self._server = server
        self._call_log = call_log
        self._selection = selection
        self._call_ids = itertools.count(1)

    def withheld(self, tool: str) -> str | None:
        """Why ``tool`` is not offered, if it is a tool this gateway leaves out."""
        return None if self._selection is None else self._selection.withheld.get(tool)

    def record_refused(self, tool: str, arguments: dict[str, Any], start: float,
                       error: str) -> None:
        self._record(next(self._call_ids), tool, arguments, start, "error", error, None)

    def tool(
        self, *, read_only: bool = False, destructive: bool = False
    ) -> Callable[[Callable[P, Awaitable[R]]], Callable[P, Awaitable[R]]]:
        def register(fn: Callable[P, Awaitable[R]]) -> Callable[P, Awaitable[R]]:
            name = fn.__name__
            if self._selection is not None and name not in self._selection.offered:
                return fn

            @functools.wraps(fn)
            async def call(*args: P.args, **kwargs: P.kwargs) -> CallToolResult:
                call_id = next(self._call_ids)
                start = time.perf_counter()
                outcome, error, result = "ok", None, None
                try:
                    result = await fn(*args, **kwargs)
                    return as_call_result(result)
                except anyio.get_cancelled_exc_class():
                    outcome = "cancelled"
                    raise
                except Exception as exc:
                    failure = failure_of(exc)
                    if isinstance(failure, GatewayError):
                        outcome, error = "error", error_text(failure)
                        raise ToolError(error) from None
                    outcome, error = "crash", f"{type(failure).__name__}: {error_text(failure)}"
                    log.exception("tool crashed", tool=name, call_id=call_id)
                    raise ToolError(f"internal gateway error in {name} ({error}); the gateway "
                                    "is still running — retry, and report this if it "
                                    "repeats") from None
                finally:
                    self._record(call_id, name, kwargs, start, outcome, error, result)

            self._server.add_tool(
                call, name=name, description=compact_description(fn.__doc__ or ""),
                annotations=_annotations(read_only=read_only, destructive=destructive),
            )
            _publish_compact(self._server, name)
            return fn

        return register

    def _record(
        self, call_id: int, tool: str, arguments: dict[str, Any], start: float,
        outcome: str, error: str | None, result: BaseModel | None,
    ) -> None:
        duration_ms = round((time.perf_counter() - start) * 1000, 3)
        arguments = {k: v for k, v in arguments.items() if not isinstance(v, Context)}
        if outcome != "ok":
            log.info("call failed", call_id=call_id, tool=tool, outcome=outcome, error=error,
                     duration_ms=duration_ms)
        if not self._call_log.enabled:
            return
        self._call_log.write({
            "ts": time.time(),
            "call_id": call_id,
            "session": client_session.get(),
            "tool": tool,
            "target": arguments.get("target") or getattr(result, "target", None),
            "tab": arguments.get("tab") or getattr(result, "tab", None),
            "arguments": arguments,
            "duration_ms": duration_ms,
            "outcome": outcome,
            "error": error,
            "result_bytes": len(result.model_dump_json()) if result is not None else 0,
        })
