"""The MCP SDK's own floor: a stdio MCPServer with tools that do nothing.

``noop`` has the same shape as the gateway's ``evaluate`` (two arguments, an
async function, a small pydantic result that becomes the output schema), so
the difference between the two round trips is what the gateway itself adds —
argument validation, result serialisation and output-schema validation cost
the same on both sides.

``noop_list`` returns ``limit`` entries shaped like the gateway's
``console_messages`` result (built once per ``limit`` and cached), so it is the
SDK's floor for a large structured result: serialising it (as structured
content and as its JSON text), sending it over stdio, and the client's parsing
and output-schema validation.

Run by ``benchmarks.run`` as ``python benchmarks/noop_server.py``.
"""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from pydantic import BaseModel, Field

mcp = MCPServer(name="noop")


class Echo(BaseModel):
    tab: int
    target: str
    type: str
    value: Any
    truncated: bool


@mcp.tool()
async def noop(expression: str, tab: int) -> Echo:
    """Return a constant result of the same shape as the gateway's evaluate."""
    return Echo(tab=tab, target="noop", type="number", value=2, truncated=False)


class Entry(BaseModel):
    """Shaped like the gateway's ConsoleMessage."""

    id: int
    level: str
    text: str
    source: str
    url: str | None
    time: str
    navigation: int
    stack: str | None = None


class Entries(BaseModel):
    """Shaped like the gateway's ConsoleMessages."""

    tab: int
    target: str
    messages: list[Entry]
    last_id: int
    navigation: int
    dropped: int
    note: str | None = None


_LISTS: dict[int, list[Entry]] = {}


@mcp.tool()
async def noop_list(
    tab: int, limit: Annotated[int, Field(ge=1, le=10_000)] = 100
) -> Entries:
    """Return `limit` constant console-message-shaped entries."""
    entries = _LISTS.get(limit)
    if entries is None:
        entries = _LISTS[limit] = [
            Entry(id=i + 1, level="info", text=f"bench message {i + 1} of {limit}",
                  source="console", url=None, time="2026-01-01T00:00:00.000Z", navigation=1)
            for i in range(limit)]
    return Entries(tab=tab, target="noop", messages=entries, last_id=limit, navigation=1,
                   dropped=0)


if __name__ == "__main__":
    mcp.run()
