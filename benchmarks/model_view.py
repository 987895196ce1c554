"""How an MCP client hands a tool result to the model.

The readers ``tests/e2e/test_model_view.py`` checks every tool with: Claude Code and Codex
("structured-first") show the model a result's ``structuredContent`` as one JSON
text when it has one (the text content dropped), else the text; text-first clients
(Cursor, VS Code) show the text content.  Images are counted beside the text.  The
structured-first readers are what Claude Code 2.1.328 and Codex CLI 0.169.0 were seen to
send the model, driven offline against a local stand-in of their model APIs.
"""

from __future__ import annotations

import contextlib
import json
import secrets
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from mcp.types import CallToolResult, ImageContent, TextContent

from benchmarks.clients import CALL_TIMEOUT_S

__all__ = ["definition_json", "every_tool_once", "structured_first", "text_first"]


def structured_first(result: CallToolResult) -> tuple[str, int]:
    """What Claude Code or Codex shows the model, and how many images beside it."""
    images = sum(isinstance(block, ImageContent) for block in result.content)
    if result.structured_content is not None:
        return json.dumps(result.structured_content, separators=(",", ":"),
                          ensure_ascii=False), images
    return _text(result), images


def text_first(result: CallToolResult) -> tuple[str, int]:
    """What a text-first client shows the model: the text content, and the images."""
    return _text(result), sum(isinstance(block, ImageContent) for block in result.content)


def _text(result: CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, TextContent))


def definition_json(tool: Any) -> str:
    """One tool's definition as a model is given it: name, description, input schema."""
    return json.dumps({"name": tool.name, "description": tool.description or "",
                       "inputSchema": tool.input_schema}, ensure_ascii=False)


DOWNLOAD_JS = ("const a = document.createElement('a'); a.download = 'seen.txt';"
               "a.href = 'data:text/plain,seen%20by%20the%20model'; a.click(); 1")
"""A download the page starts (a link to a data: URL): ``downloads`` lists it, fetches it."""
Call = Callable[[str, dict[str, Any]], Awaitable[CallToolResult]]


async def _downloaded(call: Call, tab: int) -> int:
    """The id of the first download of ``tab`` once it completed (bounded)."""
    with anyio.fail_after(CALL_TIMEOUT_S):
        while True:
            listed = (await call("downloads", {"tab": tab})).structured_content or {}
            done = [d["id"] for d in listed["downloads"] if d["state"] == "completed"]
            if done:
                return int(done[0])
            await anyio.sleep(0.1)


async def every_tool_once(gw: Client, news: str) -> AsyncIterator[tuple[str, CallToolResult]]:
    """Every tool the gateway defines, called once on the page at ``news`` as a model's
    client calls it (no ``_meta``), each with its result: what the per-tool test checks
    and the benchmark measures. A failed call raises ``RuntimeError`` with its text."""

    async def call(tool: str, args: dict[str, Any]) -> CallToolResult:
        with anyio.fail_after(CALL_TIMEOUT_S):
            result = await gw.call_tool(tool, args)
        if result.is_error:
            raise RuntimeError(f"{tool}: {structured_first(result)[0][:300]}")
        return result

    listed = await call("list_targets", {})
    yield "list_targets", listed
    targets = (listed.structured_content or {}).get("targets") or [{}]
    target = targets[0].get("name") or "h1"
    yield "ping", await call("ping", {"target": target})
    opened = await call("new_tab", {"target": target})
    yield "new_tab", opened
    tab = int((opened.structured_content or {})["tab"])
    try:
        yield "navigate", await call("navigate", {"tab": tab, "url": news})
        yield "list_tabs", await call("list_tabs", {"target": target})
        yield "browse", await call("browse", {"tab": tab, "url": news})
        yield "browse_view", await call("browse_view", {"tab": tab})
        yield "browse_act", await call("browse_act", {"tab": tab, "actions": [
            {"do": "scroll", "to": "bottom"}]})
        yield "evaluate", await call("evaluate", {"tab": tab, "expression": "document.title"})
        yield "cdp_command", await call("cdp_command", {
            "tab": tab, "method": "Runtime.evaluate", "params": {"expression": "6 * 7"}})
        yield "screenshot", await call("screenshot", {"tab": tab})
        await call("evaluate", {"tab": tab, "expression": "console.log('seen'); 1"})
        yield "console_messages", await call("console_messages", {"tab": tab})
        requests = await call("network_requests", {"tab": tab})
        yield "network_requests", requests
        first = (requests.structured_content or {})["requests"][0]["id"]
        yield "network_request", await call("network_request", {"tab": tab, "id": first})
        yield "emulate", await call("emulate", {"tab": tab, "timezone": "Asia/Tokyo"})
        yield "performance_trace", await call("performance_trace",
                                              {"tab": tab, "duration_s": 0.5})
        yield "heap_snapshot", await call("heap_snapshot", {"tab": tab})
        pdf = Path(tempfile.gettempdir()) / f"csgw-pdf-{uuid.uuid4().hex}.pdf"  # a new file
        yield "pdf", await call("pdf", {"tab": tab, "save_to": str(pdf)})
        state = Path(tempfile.gettempdir()) / f"csgw-state-{secrets.token_hex(6)}.json"
        yield "storage_state", await call("storage_state", {"tab": tab, "action": "save",
                                                            "path": str(state)})
        yield "live_view", await call("live_view", {"tab": tab})
        yield "handoff", await call("handoff", {"tab": tab, "reason": "look", "wait": True,
                                                "timeout_s": 0.2})  # over before what follows
        await call("record", {"tab": tab, "action": "start"})
        yield "record", await call("record", {"tab": tab, "action": "stop"})  # a frame or more
        yield "network_route", await call("network_route", {
            "tab": tab, "action": "block", "pattern": "**/never-requested/*"})
        # in a context of the gateway's: the default context of a browser it did not
        # launch keeps saving where it always did, out of the gateway's reach
        saver = int((await call("new_tab", {"target": target, "context": "csgw-model"})
                     ).structured_content["tab"])  # type: ignore[index]
        try:
            await call("evaluate", {"tab": saver, "expression": DOWNLOAD_JS})
            fetched = await call("downloads", {"tab": saver,
                                               "fetch": await _downloaded(call, saver)})
        finally:
            await call("close_tab", {"tab": saver})
        yield "downloads", fetched
        await call("evaluate", {"tab": tab,
                                "expression": "setTimeout(() => alert('hi'), 10); 1"})
        deadline = time.monotonic() + 10
        while True:
            result = await gw.call_tool("handle_dialog", {"tab": tab, "accept": True})
            if not result.is_error or time.monotonic() > deadline:
                break
            await anyio.sleep(0.1)
        if result.is_error:
            raise RuntimeError(f"handle_dialog: {structured_first(result)[0][:300]}")
        yield "handle_dialog", result
    except BaseException:
        with anyio.CancelScope(shield=True), anyio.move_on_after(10), \
                contextlib.suppress(Exception):
            await gw.call_tool("close_tab", {"tab": tab})
        raise
    yield "close_tab", await call("close_tab", {"tab": tab})
