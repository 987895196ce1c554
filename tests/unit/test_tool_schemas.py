"""The tool list an MCP client sees is the product's interface: pin it.

``tools/list`` (names, descriptions, input and output schemas, annotations) is
compared with ``golden/tools_list.json`` and ``golden/tools_list_read_only.json``,
captured from the server itself. A refactoring of how tools are defined must
leave it byte for byte the same; a deliberate change to a tool's interface
regenerates the golden file (``CSGW_UPDATE_GOLDEN=1``) and shows up in review.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from mcp import Client

from gateway.browsers.registry import Registry
from gateway.config import load_config
from gateway.server.app import build_server
from gateway.server.call_log import CallLog

pytestmark = pytest.mark.anyio

GOLDEN = Path(__file__).parent / "golden"


@pytest.mark.parametrize(("read_only", "golden"), [
    (False, "tools_list.json"), (True, "tools_list_read_only.json")])
async def test_tools_list_is_unchanged(read_only: bool, golden: str) -> None:
    config = load_config({"CDP_URL": "127.0.0.1:9"}, read_only=read_only)
    server = build_server(Registry(config), CallLog.open(None))
    async with Client(server) as client:
        listed = await client.list_tools()
    text = json.dumps([tool.model_dump(mode="json", exclude_none=True) for tool in listed.tools],
                      indent=1, ensure_ascii=False) + "\n"
    path = GOLDEN / golden
    if os.environ.get("CSGW_UPDATE_GOLDEN") == "1":
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8"), f"tools/list differs from {path.name}"
