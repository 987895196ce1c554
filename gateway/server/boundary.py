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
import typing
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

import anyio
import structlog
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, ContentBlock, TextContent, ToolAnnotations
from pydantic import BaseModel

from gateway.errors import GatewayError
from gateway.server.call_log import CallLog
from gateway.server.schemas import compact_description
from gateway.server.served_files import ServedFiles
from gateway.tools.definition import FallsShort, Hints, ReadsAsText, WritesFiles
from gateway.tools.links import file_link
from gateway.tools.sets import Selection

__all__ = ["MAX_ERROR_CHARS", "Boundary", "as_call_result", "client_session",
           "error_text", "failure_of", "shortfall_of", "structured_wanted"]

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


structured_wanted: ContextVar[bool] = ContextVar("structured_wanted", default=False)
"""Whether the current call's request carried ``STRUCTURED_META`` (``call --json``,
tests — never a model: ``as_call_result``); set by the server."""


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


def error_text(exc: BaseException | str) -> str:
    """``str(exc)``, cut to ``MAX_ERROR_CHARS`` with a note saying so."""
    text = str(exc)
    if len(text) <= MAX_ERROR_CHARS:
        return text
    return (f"{text[:MAX_ERROR_CHARS]}… [error text cut: {len(text) - MAX_ERROR_CHARS} more "
            "characters]")


def as_call_result(result: BaseModel, *, structured: bool = False) -> CallToolResult:
    """What the client gets for a tool's result, the same for every kind of client.

    Clients differ in what they hand the model: Claude Code and Codex give it the
    structured content alone when there is any (as one JSON text), text-first
    clients the text content. So a result a model reads as text (``ReadsAsText``: a
    page view) is text only — in a JSON string its lines would arrive as one line of
    escaped quotes and newlines — and its tool publishes no output schema; its
    structured form is added only when the request asked for it (``structured``:
    ``call --json``, tests). Any other result is its compact JSON (no spaces, fields
    that do not apply left out) as both structured content and text. Each file a
    result names (``WritesFiles``) is linked after it.

    A result that fell short (``FallsShort``) is a tool error carrying all of the above,
    its first text opening with what was not done: for an error, Claude Code hands the
    model the first text block alone — not the structured content — so that block holds
    the whole story (``shortfall_of`` is the same sentence, for the call log)."""
    if isinstance(result, CallToolResult):
        return result  # the tool built its own content (screenshot: an image)
    reads_as_text, writes_files, _ = _shape(type(result))
    text = result.as_text() if reads_as_text else result.model_dump_json()  # type: ignore[attr-defined]
    shortfall = shortfall_of(result)
    if shortfall is not None:
        text = f"{shortfall}\n{text}"
    content: list[ContentBlock] = [TextContent(text=text)]
    if writes_files:
        content += [file_link(Path(path)) for path in result.written()]  # type: ignore[attr-defined]
    dumped = result.model_dump(mode="json") if structured or not reads_as_text else None
    return CallToolResult(content=content, structured_content=dumped,
                          is_error=shortfall is not None)


def shortfall_of(result: BaseModel | None) -> str | None:
    """What a result left undone (``FallsShort``), else None."""
    if result is None or not _shape(type(result))[2]:
        return None
    return typing.cast(FallsShort, result).shortfall()


@functools.cache
def _shape(cls: type) -> tuple[bool, bool, bool]:
    """Whether a result class reads as text, writes files, and can fall short: a check
    against a runtime Protocol costs ~20 µs, so it is made once per class, not per call."""
    return (issubclass(cls, ReadsAsText), issubclass(cls, WritesFiles),
            issubclass(cls, FallsShort))


def _reads_as_text(fn: Callable[..., Any]) -> bool:
    """Whether ``fn`` returns a ``ReadsAsText`` result (read off its return annotation)."""
    returned = typing.get_type_hints(fn).get("return")
    return isinstance(returned, type) and issubclass(returned, ReadsAsText)


def _annotations(hints: Hints) -> ToolAnnotations:
    """Every hint said, none left to MCP's defaults (which assume the worst: destructive,
    open world): clients differ in what they do with a missing one. A read-only tool
    destroys nothing, and reading again changes nothing."""
    return ToolAnnotations(title=hints.title, read_only_hint=hints.read_only,
                           destructive_hint=hints.destructive and not hints.read_only,
                           idempotent_hint=hints.idempotent or hints.read_only,
                           open_world_hint=hints.open_world)


class Boundary:
    """Registers tool functions on the MCP server behind the common call boundary."""

    def __init__(self, server: MCPServer, call_log: CallLog, *,
                 selection: Selection | None = None) -> None:
        self._server = server
        self._call_log = call_log
        self._selection = selection
        self._call_ids = itertools.count(1)
        self.files = ServedFiles()
        """The files results linked, which ``resources/read`` serves (``app.py``)."""

    def withheld(self, tool: str) -> str | None:
        """Why ``tool`` is not offered, if it is a tool this gateway leaves out."""
        return None if self._selection is None else self._selection.withheld.get(tool)

    def record_refused(self, tool: str, arguments: dict[str, Any], start: float,
                       error: str) -> None:
        self._record(next(self._call_ids), tool, arguments, start, "error", error, None)

    def tool(
        self, hints: Hints
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
                    answer = as_call_result(result, structured=structured_wanted.get())
                    self.files.note(answer)
                    shortfall = shortfall_of(result)
                    if shortfall is not None:  # did part of its work: an error, said so
                        outcome, error = "error", error_text(shortfall)
                    return answer
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
                call, name=name, title=hints.title,
                description=compact_description(fn.__doc__ or ""),
                annotations=_annotations(hints),
                structured_output=False if _reads_as_text(fn) else None,
            )
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
        record = {
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
        }
        if not self._call_log.enabled:  # the live view's outline only: no result sized
            self._call_log.remember(record)
            return
        self._call_log.write({
            **record,
            "result_bytes": len(result.model_dump_json()) if result is not None else 0,
        })
