"""The MCP SDK's own floor: a stdio MCPServer with one tool that does nothing.

The tool has the same shape as the gateway's ``evaluate`` (two arguments, an
async function, a small pydantic result that becomes the output schema), so
the difference between the two round trips is what the gateway itself adds —
argument validation, result serialisation and output-schema validation cost
the same on both sides.

Run by ``benchmarks.run`` as ``python benchmarks/noop_server.py``.
"""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver import MCPServer
from pydantic import BaseModel

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


if __name__ == "__main__":
    mcp.run()
