"""How an MCP client hands a tool result to the model (DESIGN §8; issue 19).

The readers ``tests/e2e/test_model_view.py`` checks every tool with: Claude Code and Codex
("structured-first") show the model a result's ``structuredContent`` as one JSON
text when it has one (the text content dropped), else the text; text-first clients
(Cursor, VS Code) show the text content.  Images are counted beside the text.
"""

from __future__ import annotations

import json
from typing import Any

from mcp.types import CallToolResult, ImageContent, TextContent

__all__ = ["definition_json", "structured_first", "text_first"]


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
