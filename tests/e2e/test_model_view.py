"""What a model is shown of each tool's result, in each kind of client (issue 19).

Measured with the clients themselves (see benchmarks/model_view.py): Claude Code and Codex hand the
model a result's ``structuredContent`` alone, as one JSON text, when it has one (its
text content dropped, images kept); text-first clients (Cursor, VS Code's chat as
configured by most) hand it the text content. ``structured_first`` and
``text_first`` below read a result as each does, through the real MCP client over
stdio (the readers ``benchmarks/model_view.py`` measures with), and every tool the
gateway defines is called once:

- a page view (``browse``, ``browse_view``, ``browse_act``) reaches the model as the
  same plain lines in both — no structured content to be escaped into one JSON line;
- every other result is the same compact JSON in both (no spaces, nothing at rest:
  no ``null``, no ``"truncated": false``);
- a screenshot is an image in both.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from mcp.types import (
    BlobResourceContents,
    CallToolResult,
    ResourceLink,
)

from benchmarks.model_view import every_tool_once, structured_first, text_first
from gateway.tools.sets import catalogue
from tests.e2e.pages import DevtoolsEnv, devtools_gateway
from tests.topology import Topology

pytestmark = pytest.mark.anyio

TEXT_TOOLS = {"browse", "browse_view", "browse_act"}
HEADER = re.compile(r"tab \d+ on h1 \(\d+ refs\)")
UNCHANGED = re.compile(r"tab \d+ on h1 \(\d+ refs; no change since the last view of \d+ lines\)")


def _text(result: CallToolResult) -> str:
    return text_first(result)[0]


def _at_rest(value: Any, where: str = "") -> list[str]:
    """Fields of a result, at any depth, sent with nothing to say (a ``null``, a flag that
    is false, a count of 0). A raw CDP answer or a page's own JSON is not ours to trim."""
    found = []
    if isinstance(value, dict):
        for key, field in value.items():
            if field is None or (key in ("truncated", "clipped", "recording")
                                 and field is False) or (
                    key in ("omitted_chars", "dropped") and field == 0):
                found.append(f"{where}{key}")
            elif key not in ("result", "value", "request_headers", "response_headers",
                             "timing"):
                found += _at_rest(field, f"{where}{key}.")
    elif isinstance(value, list):
        for item in value:
            found += _at_rest(item, f"{where}[].")
    return found


@pytest.fixture(scope="module")
async def env(topology: Topology,
              tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[DevtoolsEnv]:
    async with devtools_gateway(topology, tmp_path_factory.mktemp("model-view"),
                                hosts=("h1",)) as e:
        yield e


async def test_each_tool_reads_the_same_compact_form_in_every_kind_of_client(
        env: DevtoolsEnv) -> None:
    seen: dict[str, tuple[str, str]] = {}
    links: dict[str, list[ResourceLink]] = {}
    news = env.site("h1").url("/fixture/news.html")
    async for tool, result in every_tool_once(env.client, news):
        links[tool] = [b for b in result.content if isinstance(b, ResourceLink)]
        (shown_sf, images_sf), (shown_tf, images_tf) = structured_first(result), text_first(
            result)
        seen[tool] = (shown_sf, shown_tf)
        assert shown_sf and shown_sf == shown_tf, (tool, shown_sf[:300], shown_tf[:300])
        assert images_sf == images_tf == (1 if tool == "screenshot" else 0), tool
        if tool in TEXT_TOOLS:
            assert result.structured_content is None, tool
            header, *lines = shown_tf.split("\n")
            if tool == "browse_act":  # a scroll changes no line: the model holds the view
                assert UNCHANGED.fullmatch(header), (tool, header)
                assert lines == ["steps: scroll"], lines
                continue
            assert HEADER.fullmatch(header), (tool, header)
            url, *rest = lines
            assert url.startswith("url: http://") and "/fixture/news.html" in url, url
            assert len(rest) > 10 and '\\"' not in shown_tf and "\\n" not in shown_tf, tool
        else:
            structured = result.structured_content
            assert isinstance(structured, dict), tool
            assert shown_tf == json.dumps(structured, separators=(",", ":"),
                                          ensure_ascii=False), tool  # compact, the same
            assert _at_rest(structured) == [], (tool, _at_rest(structured), shown_tf[:500])
    assert set(seen) == {t.name for t in catalogue()}, "a tool this test does not call"
    # Every file a result names comes linked beside its path, and reads back whole.
    assert {tool for tool, found in links.items() if found} == {
        "heap_snapshot", "performance_trace", "pdf", "storage_state", "downloads", "record"}
    for tool in ("heap_snapshot", "performance_trace", "pdf", "storage_state", "downloads",
                 "record"):
        [link] = links[tool]
        path = Path(json.loads(seen[tool][1])["path"])
        assert (link.uri, link.name, link.size) == (path.as_uri(), path.name,
                                                    path.stat().st_size)
        [read] = (await env.client.read_resource(link.uri)).contents
        assert isinstance(read, BlobResourceContents) and read.mime_type == link.mime_type
        assert base64.b64decode(read.blob) == path.read_bytes(), tool
    view = seen["browse_view"][0]
    assert len(view) < 16_000 and view.count("\n") > 20  # the news page, as lines
