"""The MCP server: the SDK's server with the gateway's argument checks, built with
every tool family behind the one call boundary (``boundary.py``).

Tool modules contain only what their tools do; they know nothing of MCP servers
(``gateway.tools.definition``). This module imports them, never the reverse.
"""

from __future__ import annotations

import base64
import difflib
import time
from typing import Any

import structlog
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError, UnexpectedToolError
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError
from mcp.types import (
    INVALID_PARAMS,
    BlobResourceContents,
    CallToolRequestParams,
    CallToolResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    ListToolsResult,
    PaginatedRequestParams,
    ReadResourceRequestParams,
    ReadResourceResult,
    TextContent,
    Tool,
)
from pydantic import ValidationError

from gateway import __version__
from gateway.browsers.registry import Registry
from gateway.config import GatewayConfig
from gateway.live.hub import Live
from gateway.progress import reporting
from gateway.server import STRUCTURED_META
from gateway.server.boundary import Boundary, client_session, structured_wanted
from gateway.server.call_log import CallLog
from gateway.server.schemas import (
    RESULTS_NOTE,
    compact_input,
    compact_output,
    shared_arguments_note,
)
from gateway.server.stdio import AnsweringReadStream
from gateway.tools import register_all
from gateway.tools.sets import Selection, catalogue, select

__all__ = ["GatewayServer", "build_server", "offered_tools"]

log = structlog.get_logger("gateway.server")

INSTRUCTIONS = """\
Drives Chrome browsers on remote machines (and this one) over SSH. Each browser
is a named target (list_targets). Tabs have small integer ids that are unique
across all targets (list_tabs); pass tab=<id> to tab tools, and target=<name>
only when several targets exist and no tab is given. Arguments most tools share:
timeout_s is the seconds to wait for the browser (default: the target's
command_timeout_s, 30); max_chars is the longest value returned — longer values
are cut and marked truncated; since=<last_id> of an earlier list returns only later
entries, limit at most that many of the newest.
""" + shared_arguments_note() + "\n" + RESULTS_NOTE + "\n"
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
        if name == "target" and "tab" in known:  # taken before issue 19; habits stay
            shown += " (a tab id names its target: leave target out)"
        elif close:
            shown += f" (did you mean {close[0]!r}?)"
        parts.append(shown)
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


class GatewayServer(Server[Any]):
    """The MCP server, on the SDK's public surface only: its low-level ``Server`` (the
    protocol, stdio and HTTP) in front of an ``MCPServer`` used as the tool table
    (``add_tool`` registration, argument validation, result conversion).

    Over what the SDK does it adds: schemas published compactly (``schemas.py``);
    arguments a tool does not take refused; schema failures read as one line per
    argument; each call's progress sent to its client (``gateway.progress``); a
    call-log line for every call refused before any tool runs; files results linked
    served (``served_files.py``); and an error reply to requests its stdio reader
    cannot parse (``stdio.py``)."""

    def __init__(self, tools: MCPServer, boundary: Boundary, live: Live | None = None) -> None:
        super().__init__(tools.name, version=tools.version, instructions=tools.instructions,
                         on_list_tools=self._on_list_tools, on_call_tool=self._on_call_tool,
                         on_list_resources=self._on_list_resources,
                         on_list_resource_templates=self._on_list_resource_templates,
                         on_read_resource=self._on_read_resource)
        self.middleware[:] = tools.middleware  # the SDK's (tracing, request state): once
        self.tools = tools
        self.boundary = boundary
        self.live = live
        """The live view (``gateway.live``), which ``serve --http`` mounts at ``/live``."""
        self._published: dict[str, Tool] | None = None

    async def list_tools(self) -> list[Tool]:
        """The tools as published: the SDK's definitions with compact schemas (made
        once: the tools never change once the server is built)."""
        if self._published is None:
            self._published = {
                tool.name: tool.model_copy(update={
                    "input_schema": compact_input(tool.input_schema),
                    "output_schema": (compact_output(tool.output_schema)
                                      if tool.output_schema is not None else None)})
                for tool in await self.tools.list_tools()}
        return list(self._published.values())

    async def run_stdio_async(self) -> None:
        async with stdio_server() as (read_stream, write_stream):
            await self.run(AnsweringReadStream(read_stream, write_stream), write_stream,
                           self.create_initialization_options())

    async def _on_list_tools(self, ctx: ServerRequestContext[Any],
                             params: PaginatedRequestParams | None) -> ListToolsResult:
        return ListToolsResult(tools=await self.list_tools())

    async def _on_call_tool(self, ctx: ServerRequestContext[Any],
                            params: CallToolRequestParams) -> CallToolResult:
        start = time.perf_counter()
        name, arguments = params.name, params.arguments or {}
        context: Context[Any, Any] = Context(request_context=ctx, mcp_server=self.tools,
                                             input_params=params)
        client_session.set(_session_of(ctx))
        structured_wanted.set((ctx.meta or {}).get(STRUCTURED_META) is True)
        await self.list_tools()
        tool = (self._published or {}).get(name)
        refusal = unknown_arguments(name, tool.input_schema, arguments) if tool else None
        try:
            if refusal is not None:
                raise ToolError(refusal)
            with reporting(context.report_progress):
                result = await self.tools.call_tool(name, arguments, context)
        except ToolError as exc:  # the SDK's own failures, and the boundary's
            if isinstance(exc, UnexpectedToolError):  # the SDK's conversion of a result
                log.error("tool result could not be sent", tool=name,
                          error=repr(exc.__cause__))
            if isinstance(exc.__cause__, ValidationError):
                refusal = describe_invalid(name, exc.__cause__)
            elif tool is None:
                refusal = self.boundary.withheld(name) or str(exc)
            if refusal is None:  # the tool ran and failed: its wrapper logged the call
                return _error_result(str(exc))
            self.boundary.record_refused(name, arguments, start, refusal)
            return _error_result(refusal)
        assert isinstance(result, CallToolResult), result  # no tool asks for input
        return result

    async def _on_list_resources(self, ctx: ServerRequestContext[Any],
                                 params: PaginatedRequestParams | None) -> ListResourcesResult:
        return ListResourcesResult(resources=[])  # only the files results link, by link

    async def _on_list_resource_templates(
            self, ctx: ServerRequestContext[Any],
            params: PaginatedRequestParams | None) -> ListResourceTemplatesResult:
        return ListResourceTemplatesResult(resource_templates=[])

    async def _on_read_resource(self, ctx: ServerRequestContext[Any],
                                params: ReadResourceRequestParams) -> ReadResourceResult:
        """A file a tool result linked (``served_files.py``); nothing else."""
        uri = str(params.uri)
        data = {"uri": uri}
        if not self.boundary.files.serves(uri):
            raise MCPError(code=INVALID_PARAMS, data=data,
                           message=f"{uri} is not a file this gateway linked in a result")
        try:
            content, mime_type = await self.boundary.files.read(uri)
        except ResourceError as exc:
            raise MCPError(code=INVALID_PARAMS, message=str(exc), data=data) from None
        return ReadResourceResult(contents=[BlobResourceContents(
            uri=uri, blob=base64.b64encode(content).decode(), mime_type=mime_type)])


def _error_result(text: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(text=text)], is_error=True)


def _session_of(ctx: ServerRequestContext[Any]) -> str | None:
    """Which HTTP client made a call: its ``mcp-session-id`` (protocol versions with
    sessions), else the connection it came on (``2026-07-28`` requests carry no session);
    None in process and on stdio, where there is only one client."""
    request = ctx.request
    headers = getattr(request, "headers", None)
    if headers is None:
        return None
    session = headers.get("mcp-session-id")
    if session:
        return str(session)
    peer = getattr(request, "client", None)
    return f"{peer.host}:{peer.port}" if peer else "unix socket"


def offered_tools(config: GatewayConfig) -> Selection:
    """The tools ``config`` offers (``--tools``, ``--read-only``); ``ConfigError`` for a
    spec naming no tool or set."""
    return select(config.tools, catalogue(), read_only=config.read_only,
                  source=config.tools_source)


def build_server(registry: Registry, call_log: CallLog,
                 selection: Selection | None = None, live: Live | None = None) -> GatewayServer:
    """An MCP server whose tools act on ``registry`` (already running), offering
    ``selection`` (default: what its config says); ``live`` serves the live page."""
    read_only = registry.config.read_only
    selection = selection or offered_tools(registry.config)
    instructions = INSTRUCTIONS + selection.note + (READ_ONLY_NOTE if read_only else "")
    tools = MCPServer(name="chrome-ssh-gateway", version=__version__,
                      instructions=instructions)
    boundary = Boundary(tools, call_log, selection=selection)
    register_all(boundary, registry, live)
    return GatewayServer(tools, boundary, live)
