"""The MCP server: tool registration, and the one boundary every call crosses.

``ToolRegistrar.tool`` wraps each tool function once. The wrapper is where
errors are mapped (a ``GatewayError`` becomes a tool error with its own text;
anything else becomes a tool error that says it is a gateway bug, and the
server keeps serving), where a call is timed, and where it is written to the
call log. Tool modules therefore contain only what their tools do. In
read-only mode (``--read-only``) it is also where the tools that change
something are left out: an agent cannot call what it is never offered.
"""

from __future__ import annotations

import difflib
import functools
import itertools
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, ParamSpec, TypeVar

import anyio
import structlog
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.stdio import stdio_server
from mcp.types import ToolAnnotations
from pydantic import BaseModel, ValidationError

from gateway import __version__
from gateway.browsers.registry import Registry, open_registry
from gateway.config import GatewayConfig
from gateway.errors import GatewayError
from gateway.server.call_log import CallLog
from gateway.server.stdio import AnsweringReadStream

__all__ = [
    "MAX_ERROR_CHARS",
    "GatewayServer",
    "ToolRegistrar",
    "build_server",
    "error_text",
    "running_server",
    "serve_stdio",
]

log = structlog.get_logger("gateway.server")

P = ParamSpec("P")
R = TypeVar("R", bound=BaseModel)

MAX_ERROR_CHARS = 10_000
"""Longest error text a client gets: an error may quote what was sent (V8 repeats a
10 MB identifier in its ReferenceError), and the text lands in a model's context."""

INSTRUCTIONS = """\
Drives Chrome browsers on remote machines (and this one) over SSH. Each browser
is a named target (list_targets). Tabs have small integer ids that are unique
across all targets (list_tabs); pass tab=<id> to tab tools, and target=<name>
only when several targets exist and no tab is given.
"""
READ_ONLY_NOTE = """
This gateway runs read-only: only tools that change nothing in the browsers are
offered (listing, views, screenshots, console and network).
"""


def unknown_arguments(tool: str, schema: dict[str, Any], arguments: dict[str, Any]) -> str | None:
    """The refusal for arguments the tool does not take, else None.

    The SDK would drop them silently, so ``timeout=5`` instead of ``timeout_s=5``
    would just not apply; an agent is better served by hearing the right name.
    """
    known = list(schema.get("properties", {}))
    unknown = [name for name in arguments if name not in known]
    if not unknown:
        return None
    parts = []
    for name in unknown[:5]:
        close = difflib.get_close_matches(str(name), known, n=1)
        shown = repr(str(name)[:60])
        parts.append(f"{shown} (did you mean {close[0]!r}?)" if close else shown)
    return (f"unknown argument{'s' if len(unknown) > 1 else ''} for {tool}: "
            f"{', '.join(parts)}; it takes {', '.join(known) or 'no arguments'}")


def describe_invalid(tool: str, error: ValidationError) -> str:
    """Pydantic's findings as one line per argument, without its type codes and URLs."""
    problems = []
    for item in error.errors(include_url=False)[:5]:
        where = ".".join(str(part) for part in item["loc"]) or "arguments"
        got = "" if item["type"] == "missing" else f" (got {_short(item.get('input'))})"
        problems.append(f"{where}: {item['msg']}{got}")
    more = error.error_count() - len(problems)
    tail = f"; and {more} more" if more > 0 else ""
    return f"invalid arguments for {tool}: {'; '.join(problems)}{tail}"


def _short(value: object, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + f"… ({len(text)} chars)"


class GatewayServer(MCPServer):
    """The SDK's server, plus: arguments a tool does not take are refused, schema
    failures read as one line per argument, a call-log line for every call refused
    before any tool runs (unknown tool, bad arguments), and an error reply to requests
    its stdio reader cannot parse (see ``stdio.py``)."""

    registrar: ToolRegistrar | None = None

    async def run_stdio_async(self) -> None:
        async with stdio_server() as (read_stream, write_stream):
            await self._lowlevel_server.run(AnsweringReadStream(read_stream, write_stream),
                                            write_stream,
                                            self._lowlevel_server.create_initialization_options())

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> Any:
        start = time.perf_counter()
        tool = self._tool_manager.get_tool(name)
        refusal = unknown_arguments(name, tool.parameters, arguments) if tool else None
        try:
            if refusal is not None:
                raise ToolError(refusal)
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            if isinstance(exc.__cause__, ValidationError):
                refusal = describe_invalid(name, exc.__cause__)
            elif tool is None:
                refusal = str(exc)
            if refusal is None:
                raise  # the tool ran and failed: its wrapper has logged the call
            if self.registrar is not None:
                self.registrar.record_refused(name, arguments, start, refusal)
            raise ToolError(refusal) from None


class ToolRegistrar:
    """Registers tool functions on the MCP server behind the common call boundary."""

    def __init__(self, server: MCPServer, call_log: CallLog, *, read_only: bool = False) -> None:
        self._server = server
        self._call_log = call_log
        self._read_only = read_only
        self._call_ids = itertools.count(1)

    def record_refused(self, tool: str, arguments: dict[str, Any], start: float,
                       error: str) -> None:
        self._record(next(self._call_ids), tool, arguments, start, "error", error, None)

    def tool(
        self, *, read_only: bool = False, destructive: bool = False
    ) -> Callable[[Callable[P, Awaitable[R]]], Callable[P, Awaitable[R]]]:
        def register(fn: Callable[P, Awaitable[R]]) -> Callable[P, Awaitable[R]]:
            name = fn.__name__
            if self._read_only and not read_only:
                return fn

            @functools.wraps(fn)
            async def call(*args: P.args, **kwargs: P.kwargs) -> R:
                call_id = next(self._call_ids)
                start = time.perf_counter()
                outcome, error, result = "ok", None, None
                try:
                    result = await fn(*args, **kwargs)
                    return result
                except GatewayError as exc:
                    outcome, error = "error", error_text(exc)
                    raise ToolError(error) from None
                except anyio.get_cancelled_exc_class():
                    outcome = "cancelled"
                    raise
                except Exception as exc:
                    outcome, error = "crash", f"{type(exc).__name__}: {error_text(exc)}"
                    log.exception("tool crashed", tool=name, call_id=call_id)
                    raise ToolError(f"internal gateway error in {name} ({error}); the gateway "
                                    "is still running — retry, and report this if it "
                                    "repeats") from None
                finally:
                    self._record(call_id, name, kwargs, start, outcome, error, result)

            self._server.add_tool(
                call, name=name,
                annotations=ToolAnnotations(read_only_hint=read_only,
                                            destructive_hint=destructive,
                                            open_world_hint=True),
            )
            return call

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
            "tool": tool,
            "target": arguments.get("target") or getattr(result, "target", None),
            "tab": arguments.get("tab") or getattr(result, "tab", None),
            "arguments": arguments,
            "duration_ms": duration_ms,
            "outcome": outcome,
            "error": error,
            "result_bytes": len(result.model_dump_json()) if result is not None else 0,
        })


def error_text(exc: BaseException) -> str:
    """``str(exc)``, cut to ``MAX_ERROR_CHARS`` with a note saying so."""
    text = str(exc)
    if len(text) <= MAX_ERROR_CHARS:
        return text
    return (f"{text[:MAX_ERROR_CHARS]}… [error text cut: {len(text) - MAX_ERROR_CHARS} more "
            "characters]")


def build_server(gateway: Registry, call_log: CallLog) -> MCPServer:
    """An MCP server whose tools act on ``gateway`` (already running)."""
    from gateway.tools import register_all

    read_only = gateway.config.read_only
    server = GatewayServer(name="chrome-ssh-gateway", version=__version__,
                           instructions=INSTRUCTIONS + (READ_ONLY_NOTE if read_only else ""))
    server.registrar = ToolRegistrar(server, call_log, read_only=read_only)
    register_all(server.registrar, gateway)
    return server


@asynccontextmanager
async def running_server(config: GatewayConfig) -> AsyncIterator[tuple[MCPServer, Registry]]:
    """Registry started, call log open, server built; all closed again on exit."""
    call_log = CallLog.open(config.call_log)
    try:
        async with open_registry(config) as gateway:
            yield build_server(gateway, call_log), gateway
    finally:
        call_log.close()


async def serve_stdio(config: GatewayConfig) -> None:
    """Serve MCP on stdin/stdout until the client closes stdin."""
    async with running_server(config) as (server, _):
        await server.run_stdio_async()
    log.info("client went away; gateway stopped")
