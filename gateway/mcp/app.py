"""The MCP server: the SDK's low-level server in front of the gateway's tools.

The protocol (stdio, HTTP, sessions) is the SDK's ``Server``; what a tool is comes from
its family (``gateway.tools.definition``), and everything a call goes through, from its
arguments to its call-log line, from ``calls.py``. Tool modules know nothing of MCP
servers: this package imports them, never the reverse.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from typing import Any

from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity
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
    Tool,
)

from gateway import __version__
from gateway.config import GatewayConfig
from gateway.fleet.registry import Registry
from gateway.live.hub import Live
from gateway.mcp import STRUCTURED_META
from gateway.mcp.call_log import CallLog
from gateway.mcp.calls import Calls
from gateway.mcp.schemas import RESULTS_NOTE, shared_arguments_note
from gateway.mcp.served_files import Unservable
from gateway.mcp.stdio import AnsweringReadStream
from gateway.tools import TOOLS
from gateway.tools.definition import Tool as ToolValue
from gateway.tools.sets import Selection, select

__all__ = ["GatewayServer", "build_server", "offered_tools"]

NAME = "chrome-ssh-gateway"

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


class GatewayServer(Server[Any]):
    """The MCP server, on the SDK's public surface only: its low-level ``Server`` (the
    protocol, stdio and HTTP) answering ``tools/list`` and ``tools/call`` from the
    gateway's own tool list (``Calls``: schemas published compactly, each call's
    whole lifecycle), ``resources/read`` with the files results linked
    (``served_files.py``), and an error reply to requests its stdio reader cannot
    parse (``stdio.py``)."""

    def __init__(self, calls: Calls, instructions: str, live: Live | None = None) -> None:
        super().__init__(NAME, version=__version__, instructions=instructions,
                         on_list_tools=self._on_list_tools, on_call_tool=self._on_call_tool,
                         on_list_resources=self._on_list_resources,
                         on_list_resource_templates=self._on_list_resource_templates,
                         on_read_resource=self._on_read_resource)
        # The SDK's request-state seal, as its high-level server installs it (inside
        # tracing).
        self.middleware.append(RequestStateBoundary(RequestStateSecurity.ephemeral(),
                                                    default_audience=NAME))
        self.calls = calls
        self.live = live
        """The live view (``gateway.live``), which ``serve --http`` mounts at ``/live``."""

    async def list_tools(self) -> list[Tool]:
        """The tools as published (made once: they never change once built)."""
        return self.calls.published

    async def run_stdio_async(self) -> None:
        async with stdio_server() as (read_stream, write_stream):
            await self.run(AnsweringReadStream(read_stream, write_stream), write_stream,
                           self.create_initialization_options())

    async def _on_list_tools(self, ctx: ServerRequestContext[Any],
                             params: PaginatedRequestParams | None) -> ListToolsResult:
        return ListToolsResult(tools=self.calls.published)

    async def _on_call_tool(self, ctx: ServerRequestContext[Any],
                            params: CallToolRequestParams) -> CallToolResult:
        return await self.calls.call(
            params.name, params.arguments or {}, ctx.session, client=_session_of(ctx),
            structured=(ctx.meta or {}).get(STRUCTURED_META) is True)

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
        if not self.calls.files.serves(uri):
            raise MCPError(code=INVALID_PARAMS, data=data,
                           message=f"{uri} is not a file this gateway linked in a result")
        try:
            content, mime_type = await self.calls.files.read(uri)
        except Unservable as exc:
            raise MCPError(code=INVALID_PARAMS, message=str(exc), data=data) from None
        return ReadResourceResult(contents=[BlobResourceContents(
            uri=uri, blob=base64.b64encode(content).decode(), mime_type=mime_type)])


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
    return select(config.tools, TOOLS, read_only=config.read_only,
                  source=config.tools_source)


def build_server(registry: Registry, call_log: CallLog, selection: Selection | None = None,
                 live: Live | None = None, tools: Sequence[ToolValue] = TOOLS) -> GatewayServer:
    """An MCP server whose ``tools`` (default: every family's) act on ``registry``
    (already running), offering ``selection`` (default: what its config says); ``live``
    serves the live page."""
    read_only = registry.config.read_only
    selection = selection or offered_tools(registry.config)
    instructions = INSTRUCTIONS + selection.note + (READ_ONLY_NOTE if read_only else "")
    calls = Calls(tools, registry, call_log, selection=selection, live=live)
    return GatewayServer(calls, instructions, live)
