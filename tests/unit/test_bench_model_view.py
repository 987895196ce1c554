"""benchmarks/model_view.py: what each kind of client shows the model of a result."""

from __future__ import annotations

import json

from mcp.types import CallToolResult, ImageContent, TextContent, Tool

from benchmarks.model_view import definition_json, structured_first, text_first


def test_structured_first_prefers_structured_content_as_compact_json() -> None:
    result = CallToolResult(content=[TextContent(type="text", text="ignored")],
                            structured_content={"tab": 3, "title": "é"})
    assert structured_first(result) == ('{"tab":3,"title":"é"}', 0)
    assert text_first(result) == ("ignored", 0)


def test_text_only_result_reads_the_same_and_images_are_counted() -> None:
    result = CallToolResult(content=[TextContent(type="text", text="a"),
                                     ImageContent(type="image", data="AA==",
                                                  mime_type="image/png"),
                                     TextContent(type="text", text="b")])
    assert structured_first(result) == ("a\nb", 1) == text_first(result)


def test_definition_json_is_name_description_and_schema() -> None:
    tool = Tool(name="t", description="d", input_schema={"type": "object"})
    assert json.loads(definition_json(tool)) == {"name": "t", "description": "d",
                                                 "inputSchema": {"type": "object"}}
