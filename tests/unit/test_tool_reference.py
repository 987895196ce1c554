"""docs/tools.md is the tool list a client receives, rendered (``gateway.server.reference``):
a tool, argument or description changed without regenerating the page fails here."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp.types import Tool, ToolAnnotations

from gateway.server.reference import COMMAND, listed_tools, render
from gateway.tools.sets import catalogue

pytestmark = pytest.mark.anyio

PAGE = Path(__file__).parents[2] / "docs" / "tools.md"


async def test_docs_tools_md_is_the_generated_reference() -> None:
    expected = render(listed_tools())
    assert PAGE.read_text(encoding="utf-8") == expected, (
        f"docs/tools.md differs from the tool list; regenerate it: .venv/bin/{COMMAND}")


def test_every_tool_of_all_has_its_section() -> None:
    text = PAGE.read_text(encoding="utf-8")
    missing = [t.name for t in catalogue() if f"\n## {t.name}\n" not in text]
    assert not missing, missing


def test_a_tool_renders_its_hints_arguments_and_results() -> None:
    tool = Tool(
        name="demo", title="A demo", description="Does a thing.",
        input_schema={"type": "object", "required": ["tab", "mode"], "properties": {
            "tab": {"type": "integer"},
            "mode": {"enum": ["a", "b"], "default": "a", "description": "Which | way."},
            "steps": {"type": "array", "maxItems": 3, "items": {"oneOf": [
                {"properties": {"do": {"const": "go"}, "ref": {"type": "integer"}},
                 "required": ["ref"]}]}}}},
        output_schema={"type": "object", "properties": {"tab": {"type": "integer"}}},
        annotations=ToolAnnotations(read_only_hint=True, idempotent_hint=True))
    section = render([tool], {"demo": "x"}).split("\n## demo\n", 1)[1]
    assert "**A demo** · category `x` · read-only, idempotent" in section
    assert "| `tab` | integer |  | *shared* |" in section
    assert '| `mode` | "a" \\| "b" | "a" | Which \\| way. |' in section
    assert '| `steps`? | array of {do: "go", ref} (≤ 3 items) |  |  |' in section
    assert "Returns: `tab`." in section

