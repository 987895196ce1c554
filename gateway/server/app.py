"""The MCP server: the SDK's server with the gateway's argument checks, built with
every tool family behind the one call boundary (``boundary.py``).

Tool modules contain only what their tools do; they know nothing of MCP servers
(``gateway.tools.definition``). This module imports them, never the reverse.
"""

from __future__ import annotations

import difflib
import time
from collections.abc import Mapping
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.stdio import stdio_server
from pydantic import AnyUrl, ValidationError

from gateway import __version__
from gateway.browsers.registry import Registry
from gateway.config import GatewayConfig
from gateway.progress import reporting
from gateway.server.boundary import Boundary, client_session, structured_wanted
from gateway.server.call_client import STRUCTURED_META
from gateway.server.call_log import CallLog
from gateway.server.schemas import RESULTS_NOTE, shared_arguments_note
from gateway.server.stdio import AnsweringReadStream
from gateway.tools import register_all
from gateway.tools.sets import Selection, catalogue, select

__all__ = ["GatewayServer", "build_server", "offered_tools"]

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


class GatewayServer(MCPServer):
    """The SDK's server, plus: arguments a tool does not take are refused, schema
    failures read as one line per argument, each call's progress goes to its client
    (``gateway.progress``), a call-log line for every call refused
    before any tool runs (unknown tool, bad arguments), and an error reply to requests
    its stdio reader cannot parse (see ``stdio.py``)."""

    boundary: Boundary | None = None

    async def run_stdio_async(self) -> None:
        async with stdio_server() as (read_stream, write_stream):
            await self._lowlevel_server.run(AnsweringReadStream(read_stream, write_stream),
                                            write_stream,
                                            self._lowlevel_server.create_initialization_options())

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> Any:
        start = time.perf_counter()
        client_session.set(_session_of(context))
        structured_wanted.set(_meta_of(context).get(STRUCTURED_META) is True)
        tool = self._tool_manager.get_tool(name)
        refusal = unknown_arguments(name, tool.parameters, arguments) if tool else None
        try:
            if refusal is not None:
                raise ToolError(refusal)
            if context is None:
                return await super().call_tool(name, arguments, context)
            with reporting(context.report_progress):
                return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            if isinstance(exc.__cause__, ValidationError):
                refusal = describe_invalid(name, exc.__cause__)
            elif tool is None:
                refusal = (self.boundary and self.boundary.withheld(name)) or str(exc)
            if refusal is None:
                raise  # the tool ran and failed: its wrapper has logged the call
            if self.boundary is not None:
                self.boundary.record_refused(name, arguments, start, refusal)
            raise ToolError(refusal) from None

    async def read_resource(self, uri: AnyUrl | str,
                            context: Context[Any, Any] | None = None) -> Any:
        """A file a tool result linked (``served_files.py``); else the SDK's resources."""
        if self.boundary is not None and self.boundary.files.serves(str(uri)):
            return await self.boundary.files.read(str(uri))
        return await super().read_resource(uri, context)


def _meta_of(context: Context[Any, Any] | None) -> Mapping[str, Any]:
    """The ``_meta`` of the request a call came in (empty for an in-process call)."""
    try:
        meta = context.request_context.meta if context is not None else None
    except ValueError:  # no request context: an in-process call
        return {}
    return meta or {}


def _session_of(context: Context[Any, Any] | None) -> str | None:
    """Which HTTP client made a call: its ``mcp-session-id`` (protocol versions with
    sessions), else the connection it came on (``2026-07-28`` requests carry no session);
    None in process and on stdio, where there is only one client."""
    try:
        request = context.request_context.request if context is not None else None
    except ValueError:  # no request context: an in-process call
        return None
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
                 selection: Selection | None = None) -> MCPServer:
    """An MCP server whose tools act on ``registry`` (already running), offering
    ``selection`` (default: what its config says)."""
    read_only = registry.config.read_only
    selection = selection or offered_tools(registry.config)
    instructions = INSTRUCTIONS + selection.note + (READ_ONLY_NOTE if read_only else "")
    server = GatewayServer(name="chrome-ssh-gateway", version=__version__,
                           instructions=instructions)
    server.boundary = Boundary(server, call_log, selection=selection)
    register_all(server.boundary, registry)
    return server
