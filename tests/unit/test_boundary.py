"""The error boundary is total: a GatewayError raised under task groups reaches the
client as itself, and ``gather`` raises a failure bare.

The tools here are real MCP tools on a real ``MCPServer`` behind the gateway's
``Boundary``, called through the SDK's in-process client, with a call log on disk.
"""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp.server.mcpserver import MCPServer
from mcp.types import TextContent
from pydantic import BaseModel

from gateway.concurrency import gather
from gateway.errors import DialogOpen, GatewayError, TabNotFound
from gateway.server.boundary import Boundary, failure_of
from gateway.server.call_log import CallLog
from gateway.tools.definition import Hints

pytestmark = pytest.mark.anyio

DIALOG = DialogOpen(3, "alert", "csgw-hello")


def _nested() -> ExceptionGroup[Exception]:
    """A GatewayError two task groups deep, next to an unrelated failure."""
    return ExceptionGroup("outer", [ValueError("noise"),
                                    ExceptionGroup("inner", [KeyError("k"), DIALOG])])


def test_failure_of_finds_the_gateway_error_in_nested_groups() -> None:
    assert failure_of(_nested()) is DIALOG


def test_failure_of_a_sole_leaf_is_that_leaf() -> None:
    leaf = RuntimeError("the bug")
    assert failure_of(ExceptionGroup("g", [ExceptionGroup("h", [leaf])])) is leaf


def test_failure_of_many_unrelated_leaves_is_the_group() -> None:
    group = ExceptionGroup("g", [RuntimeError("a"), KeyError("b")])
    assert failure_of(group) is group


def test_failure_of_a_plain_exception_is_itself() -> None:
    assert failure_of(DIALOG) is DIALOG
    error = OSError("x")
    assert failure_of(error) is error


class Answer(BaseModel):
    value: int


class Partly(BaseModel):
    """A result that can fall short (``FallsShort``), as a batch of steps does."""

    done: int
    missed: str | None = None

    def shortfall(self) -> str | None:
        return None if self.missed is None else f"{self.missed} was not done; do it again"


async def _two_children_one_fails(error: Exception) -> None:
    """What a tool does that fans out: the failure comes out of a real task group."""
    async def fail() -> None:
        await anyio.sleep(0)
        raise error

    async with anyio.create_task_group() as tg:
        tg.start_soon(anyio.sleep, 30)
        async with anyio.create_task_group() as inner:
            inner.start_soon(fail)


def _server(tmp_path: Path) -> tuple[MCPServer, CallLog]:
    server = MCPServer(name="boundary-test")
    log = CallLog.open(tmp_path / "calls.jsonl")
    boundary = Boundary(server, log)

    @boundary.tool(Hints("test"))
    async def blocked_tool() -> Answer:
        await _two_children_one_fails(DialogOpen(3, "alert", "csgw-hello"))
        return Answer(value=1)

    @boundary.tool(Hints("test"))
    async def buggy_tool() -> Answer:
        await _two_children_one_fails(ZeroDivisionError("division by zero"))
        return Answer(value=1)

    @boundary.tool(Hints("test"))
    async def partly_tool(missed: str | None = None) -> Partly:
        return Partly(done=2, missed=missed)

    return server, log


async def _call(tmp_path: Path, tool: str,
                args: dict[str, object] | None = None) -> tuple[bool, str, dict[str, object]]:
    """Call ``tool`` through the SDK client: is_error, the text, and its call-log line."""
    server, log = _server(tmp_path)
    try:
        async with Client(server) as client:
            with anyio.fail_after(10):
                result = await client.call_tool(tool, args or {})
    finally:
        log.close()
    text = "".join(b.text for b in result.content if isinstance(b, TextContent))
    return bool(result.is_error), text, json.loads((tmp_path / "calls.jsonl").read_text())


async def test_a_gateway_error_under_task_groups_reaches_the_client_as_itself(
    tmp_path: Path,
) -> None:
    is_error, text, line = await _call(tmp_path, "blocked_tool")
    assert is_error
    assert str(DIALOG) in text
    assert "ExceptionGroup" not in text and "internal gateway error" not in text
    assert (line["tool"], line["outcome"], line["error"]) == ("blocked_tool", "error", str(DIALOG))


async def test_a_bug_under_a_task_group_names_the_real_exception(tmp_path: Path) -> None:
    is_error, text, line = await _call(tmp_path, "buggy_tool")
    assert is_error
    assert "internal gateway error in buggy_tool (ZeroDivisionError: division by zero)" in text
    assert line["outcome"] == "crash"


async def test_a_result_that_fell_short_is_a_tool_error_that_still_carries_it(
    tmp_path: Path,
) -> None:
    """Clients mark the call failed; the model still reads what was done — in the first
    text block, which is all Claude Code hands it for an error — and the call log says
    error, with what was missed."""
    server, log = _server(tmp_path)
    try:
        async with Client(server) as client:
            with anyio.fail_after(10):
                short = await client.call_tool("partly_tool", {"missed": "step 3"})
                whole = await client.call_tool("partly_tool", {})
    finally:
        log.close()
    assert short.is_error and not whole.is_error
    [block] = short.content
    assert isinstance(block, TextContent)
    assert block.text == 'step 3 was not done; do it again\n{"done":2,"missed":"step 3"}'
    assert short.structured_content == {"done": 2, "missed": "step 3"}
    assert whole.structured_content == {"done": 2, "missed": None}
    lines = [json.loads(line) for line in (tmp_path / "calls.jsonl").read_text().splitlines()]
    assert [(line["outcome"], line["error"]) for line in lines] == [
        ("error", "step 3 was not done; do it again"), ("ok", None)]


async def test_gather_keeps_the_order_of_results() -> None:
    async def late(value: int, delay: float) -> int:
        await anyio.sleep(delay)
        return value

    assert await gather(late(1, 0.03), late(2, 0.0), late(3, 0.01)) == [1, 2, 3]


async def test_gather_raises_the_first_failure_bare_and_cancels_the_rest() -> None:
    cancelled = anyio.Event()

    async def forever() -> int:
        try:
            await anyio.sleep(30)
        finally:
            cancelled.set()
        return 0

    async def fails() -> int:
        await anyio.sleep(0.01)
        raise TabNotFound(7, "is not open")

    with anyio.fail_after(5):
        with pytest.raises(GatewayError) as caught:
            await gather(forever(), gather(forever(), fails()))
    assert type(caught.value) is TabNotFound
    assert cancelled.is_set()
