"""One call's lifecycle (``gateway.mcp.calls``): what a client hears for a call
refused before its tool runs (unknown, withheld, unknown or invalid arguments), for a
tool that fails (a ``GatewayError`` under task groups, a bug) or does part of its work,
and the call-log line each one leaves; and ``gather`` raises a failure bare.

The tools here are real tool values (``gateway.tools.definition.tool``) on the
gateway's real server, called through the SDK's in-process client, with a call log on
disk.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import anyio
import pytest
from mcp import Client
from mcp.types import TextContent
from pydantic import BaseModel, Field

from gateway.concurrency import gather
from gateway.config import load_config
from gateway.errors import DialogOpen, GatewayError, TabNotFound
from gateway.fleet.registry import Registry
from gateway.mcp.app import build_server
from gateway.mcp.call_log import CallLog
from gateway.mcp.calls import Calls, failure_of
from gateway.tools.definition import Gateway, tool
from gateway.tools.sets import Selection

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


RAN: list[str] = []
"""The tools whose handlers ran (a refused call must not reach its handler)."""


@tool("test")
async def blocked_tool(gateway: Gateway) -> Answer:
    RAN.append("blocked_tool")
    await _two_children_one_fails(DialogOpen(3, "alert", "csgw-hello"))
    return Answer(value=1)


@tool("test")
async def buggy_tool(gateway: Gateway) -> Answer:
    RAN.append("buggy_tool")
    await _two_children_one_fails(ZeroDivisionError("division by zero"))
    return Answer(value=1)


@tool("test")
async def partly_tool(gateway: Gateway, missed: str | None = None) -> Partly:
    RAN.append("partly_tool")
    return Partly(done=2, missed=missed)


@tool("test")
async def sum_tool(gateway: Gateway,
                   values: Annotated[list[int], Field(max_length=3)],
                   scale: Annotated[int, Field(ge=1)] = 1) -> Answer:
    RAN.append("sum_tool")
    return Answer(value=sum(values) * scale)


@tool("test")
async def hidden_tool(gateway: Gateway) -> Answer:
    RAN.append("hidden_tool")
    return Answer(value=0)


STRUCTURED: list[object] = []
OFFERED = (blocked_tool, buggy_tool, partly_tool, sum_tool)
HIDDEN = "hidden_tool is not offered: this test offers it to nobody"


async def _calls(tmp_path: Path, *calls: tuple[str, dict[str, object]]
                 ) -> tuple[list[tuple[bool, str]], list[dict[str, object]]]:
    """Make ``calls`` through the SDK client: (is_error, text) of each, and the call log
    (``STRUCTURED``: each result's structured content)."""
    STRUCTURED.clear()
    RAN.clear()
    log = CallLog.open(tmp_path / "calls.jsonl")
    selection = Selection(frozenset(t.name for t in OFFERED), {"hidden_tool": HIDDEN})
    server = build_server(Registry(load_config({"CDP_URL": "127.0.0.1:9"})), log,
                          selection, tools=(*OFFERED, hidden_tool))
    answers = []
    try:
        async with Client(server) as client:
            for name, args in calls:
                with anyio.fail_after(10):
                    result = await client.call_tool(name, args)
                STRUCTURED.append(result.structured_content)
                answers.append((bool(result.is_error), "".join(
                    b.text for b in result.content if isinstance(b, TextContent))))
    finally:
        log.close()
    lines = [json.loads(line) for line in (tmp_path / "calls.jsonl").read_text().splitlines()]
    return answers, lines


async def _call(tmp_path: Path, name: str, args: dict[str, object] | None = None
                ) -> tuple[bool, str, dict[str, object]]:
    [(is_error, text)], [line] = await _calls(tmp_path, (name, args or {}))
    return is_error, text, line


async def test_a_gateway_error_under_task_groups_reaches_the_client_as_itself(
    tmp_path: Path,
) -> None:
    is_error, text, line = await _call(tmp_path, "blocked_tool")
    assert is_error
    assert text == f"Error executing tool blocked_tool: {DIALOG}"
    assert (line["tool"], line["outcome"], line["error"]) == ("blocked_tool", "error", str(DIALOG))


async def test_a_bug_under_a_task_group_names_the_real_exception(tmp_path: Path) -> None:
    is_error, text, line = await _call(tmp_path, "buggy_tool")
    assert is_error
    assert text == ("Error executing tool buggy_tool: internal gateway error in buggy_tool "
                    "(ZeroDivisionError: division by zero); the gateway is still running — "
                    "retry, and report this if it repeats")
    assert (line["outcome"], line["error"]) == ("crash", "ZeroDivisionError: division by zero")


async def test_an_unknown_argument_is_refused_with_the_name_it_meant(tmp_path: Path) -> None:
    is_error, text, line = await _call(tmp_path, "sum_tool", {"values": [1], "scal": 2})
    assert is_error
    assert text == ("unknown argument for sum_tool: 'scal' (did you mean 'scale'?); it takes "
                    "values, scale")
    assert RAN == []
    assert (line["tool"], line["outcome"], line["error"]) == ("sum_tool", "error", text)


async def test_invalid_arguments_read_as_one_line_each_and_the_tool_does_not_run(
    tmp_path: Path,
) -> None:
    is_error, text, line = await _call(tmp_path, "sum_tool", {"values": [1, "x"], "scale": 0})
    assert is_error
    assert text == ("invalid arguments for sum_tool: values.1: Input should be a valid "
                    "integer, unable to parse string as an integer (got 'x'); scale: Input "
                    "should be greater than or equal to 1 (got 0)")
    assert RAN == []
    assert (line["outcome"], line["error"]) == ("error", text)


async def test_a_missing_argument_is_named_and_a_list_sent_as_json_text_is_read(
    tmp_path: Path,
) -> None:
    (missing, listed), _ = await _calls(tmp_path, ("sum_tool", {}),
                                        ("sum_tool", {"values": "[1, 2]", "scale": 3}))
    assert missing == (True, "invalid arguments for sum_tool: values: Field required")
    assert listed == (False, '{"value":9}')


async def test_a_withheld_tool_says_why_and_an_unknown_one_says_so(tmp_path: Path) -> None:
    (hidden, unknown), lines = await _calls(tmp_path, ("hidden_tool", {}), ("nope", {}))
    assert hidden == (True, HIDDEN)
    assert unknown == (True, "Unknown tool: nope")
    assert RAN == []
    assert [(line["tool"], line["error"]) for line in lines] == [
        ("hidden_tool", HIDDEN), ("nope", "Unknown tool: nope")]


async def test_a_result_that_fell_short_is_a_tool_error_that_still_carries_it(
    tmp_path: Path,
) -> None:
    """Clients mark the call failed; the model still reads what was done — in the first
    text block, which is all Claude Code hands it for an error — and the call log says
    error, with what was missed."""
    (short, whole), lines = await _calls(tmp_path, ("partly_tool", {"missed": "step 3"}),
                                         ("partly_tool", {}))
    assert short == (True, 'step 3 was not done; do it again\n{"done":2,"missed":"step 3"}')
    assert whole == (False, '{"done":2,"missed":null}')
    assert STRUCTURED == [{"done": 2, "missed": "step 3"}, {"done": 2, "missed": None}]
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


class Caller(BaseModel):
    client: str | None


@tool("test")
async def caller_tool(gateway: Gateway) -> Caller:
    return Caller(client=gateway.client)


class _Peer:
    """A client session as ``Calls.call`` uses it for a tool that reports no progress."""

    async def report_progress(self, *args: object, **kwargs: object) -> None:
        raise AssertionError("caller_tool reports no progress")


async def test_a_tool_hears_which_client_called(tmp_path: Path) -> None:
    """A page view's change set is taken against what that client holds (``take``'s
    ``holder``): the call must say which client it came from."""
    log = CallLog.open(tmp_path / "calls.jsonl")
    calls = Calls((caller_tool,), Registry(load_config({"CDP_URL": "127.0.0.1:9"})), log)
    try:
        answers = [await calls.call("caller_tool", {}, _Peer(), client=client,  # type: ignore[arg-type]
                                    structured=True) for client in ("A", None)]
    finally:
        log.close()
    assert [a.structured_content for a in answers] == [{"client": "A"}, {"client": None}]
