"""CdpConnection's reader takes any frame a browser (or a proxy before it) sends.

Each test runs a real websocket server on loopback that plays the browser's
side: it sends frames, reads the gateway's commands and answers them. The
gateway's side is the real ``CdpConnection`` over ``open_websocket``, its
reader running in the test's task group, so a frame that raised out of the
reader would fail the test through that task group — as it ended the whole
gateway before.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest
from structlog.testing import capture_logs
from websockets.asyncio.server import ServerConnection, serve

from gateway.cdp.connection import SAMPLE_CHARS, CdpConnection, open_websocket
from gateway.errors import CdpError, MalformedReply

pytestmark = pytest.mark.anyio

SESSION = "5E55104A1D0000000000000000000001"

# (frame, the kind it is counted as): every shape that used to raise out of the reader
# or end the connection, and the ones it silently misread.
UNUSABLE: list[tuple[str | bytes, str]] = [
    ("[]", "not a JSON object"),
    ('"just a string"', "not a JSON object"),
    ("5", "not a JSON object"),
    ("null", "not a JSON object"),
    ("not json", "not JSON"),
    ('{"id": 1, "result": {}', "not JSON"),
    ("", "not JSON"),
    ("[" * 100_000 + "]" * 100_000, "not JSON"),  # deeper than either parser goes
    (b"\xff\xfe\x00binary", "not JSON"),
    ('{"id": "a"}', "id not an integer"),
    ('{"id": [1], "result": {}}', "id not an integer"),  # unhashable
    ('{"id": {"a": 1}}', "id not an integer"),
    ('{"id": 1.5, "result": {}}', "id not an integer"),
    ('{"id": true, "result": {}}', "id not an integer"),  # True == 1: must not answer id 1
    ('{"method": 5}', "method not a string"),
    ('{"method": ["Runtime.consoleAPICalled"], "params": {}}', "method not a string"),
    ("{}", "no method name"),
    ('{"params": {"a": 1}}', "no method name"),
    ('{"method": "Runtime.consoleAPICalled", "params": []}', "event params not an object"),
    ('{"method": "Runtime.consoleAPICalled", "params": "x"}', "event params not an object"),
    ('{"method": "Runtime.consoleAPICalled", "params": null}', "event params not an object"),
    ('{"sessionId": 3, "method": "Runtime.consoleAPICalled", "params": {}}',
     "sessionId not a string"),
    ('{"sessionId": [], "method": "Runtime.consoleAPICalled", "params": {}}',
     "sessionId not a string"),  # unhashable
]

# Replies whose id is a command in flight but whose shape is wrong, and what the error says.
MALFORMED_REPLIES: list[tuple[dict[str, Any], str]] = [
    ({"error": "x"}, "its error is a string, not an object"),
    ({"error": [1]}, "its error is an array, not an object"),
    ({"error": {"code": "-32000", "message": "m"}},
     "its error has code a string and message a string, not an integer and a string"),
    ({"error": {"code": -32000, "message": {"text": "m"}}},
     "its error has code an integer and message an object"),
    ({"result": 5}, "its result is an integer, not an object"),
    ({"result": []}, "its result is an array, not an object"),
    ({"result": None}, "its result is null, not an object"),
    ({"result": "ok"}, "its result is a string, not an object"),
]


class Browser:
    """The server side of one accepted websocket: what the test sends as the browser."""

    def __init__(self, ws: ServerConnection) -> None:
        self.ws = ws

    async def command(self) -> dict[str, Any]:
        """The next command the gateway sent (bounded)."""
        with anyio.fail_after(5):
            message: dict[str, Any] = json.loads(await self.ws.recv())
        return message

    async def answer(self, command: dict[str, Any], **reply: Any) -> None:
        await self.ws.send(json.dumps({"id": command["id"], **reply}))


@asynccontextmanager
async def connected() -> AsyncIterator[tuple[CdpConnection, Browser]]:
    """A CdpConnection to a loopback websocket server, its reader running."""
    accepted, accept = anyio.create_memory_object_stream[ServerConnection](1)
    done = anyio.Event()

    async def handler(ws: ServerConnection) -> None:
        await accepted.send(ws)
        await done.wait()

    async with serve(handler, "127.0.0.1", 0) as server:
        port = server.sockets[0].getsockname()[1]
        ws = await open_websocket(f"ws://127.0.0.1:{port}/devtools/browser/x", unix_path=None,
                                  target="t", timeout_s=5)
        cdp = CdpConnection(ws, name="t")
        with anyio.fail_after(30):
            async with anyio.create_task_group() as tg:
                tg.start_soon(cdp.run)
                browser = Browser(await accept.receive())
                try:
                    yield cdp, browser
                finally:
                    done.set()
                    await cdp.aclose()


async def events_flow(cdp: CdpConnection, browser: Browser) -> list[tuple[str, dict[str, Any]]]:
    """Send one good event after whatever was sent before; return it once the reader has
    delivered it — so every earlier frame has been read, and the reader is still alive."""
    got: list[tuple[str, dict[str, Any]]] = []
    arrived = anyio.Event()

    def listener(method: str, params: dict[str, Any]) -> None:
        got.append((method, params))
        arrived.set()

    remove = cdp.listen(SESSION, listener)
    try:
        await browser.ws.send(json.dumps({"method": "Runtime.consoleAPICalled",
                                          "sessionId": SESSION,
                                          "params": {"type": "log", "args": []}}))
        with anyio.fail_after(5):
            await arrived.wait()
    finally:
        remove()
    return got


async def test_every_unusable_frame_is_counted_dropped_and_logged_once_per_kind() -> None:
    delivered: list[tuple[str, dict[str, Any]]] = []
    async with connected() as (cdp, browser):
        cdp.listen(SESSION, lambda method, params: delivered.append((method, params)))
        cdp.listen(None, lambda method, params: delivered.append((method, params)))
        with capture_logs() as logs:
            for _ in range(2):
                for frame, _kind in UNUSABLE:
                    await browser.ws.send(frame)
            assert await events_flow(cdp, browser) == [
                ("Runtime.consoleAPICalled", {"type": "log", "args": []})]
        assert cdp.is_open
        expected: dict[str, int] = {}
        for _frame, kind in UNUSABLE:
            expected[kind] = expected.get(kind, 0) + 2
        assert cdp.dropped_frames == expected
        # Nothing unusable reached a listener (only the good event, once).
        assert delivered == [("Runtime.consoleAPICalled", {"type": "log", "args": []})]
        # The connection still carries commands.
        result: dict[str, Any] = {}

        async def call() -> None:
            result.update(await cdp.send("Browser.getVersion", timeout_s=5))

        async with anyio.create_task_group() as tg:
            tg.start_soon(call)
            await browser.answer(await browser.command(), result={"product": "Chrome/1"})
        assert result == {"product": "Chrome/1"}

    drops = [entry for entry in logs if entry["event"].startswith("dropped a CDP frame")]
    assert sorted(entry["kind"] for entry in drops) == sorted(expected)  # once per kind
    for entry in drops:
        assert entry["log_level"] == "warning"
        assert entry["target"] == "t"
        assert len(entry["frame"]) <= SAMPLE_CHARS + 1
    not_json = next(entry for entry in drops if entry["kind"] == "not JSON")
    assert not_json["frame"] == "not json"  # the first of its kind is the one logged


async def test_a_sample_is_bounded_and_printable() -> None:
    async with connected() as (cdp, browser):
        with capture_logs() as logs:
            await browser.ws.send("[\n" + "1,\n" * 10_000 + "1]")
            await browser.ws.send(b"\xff\x00" * 1000)
            await events_flow(cdp, browser)
    samples = {entry["kind"]: entry for entry in logs if "kind" in entry}
    array = samples["not a JSON object"]
    assert array["frame"] == ("[\\n" + "1,\\n" * 40)[:SAMPLE_CHARS] + "…"
    assert array["frame_length"] == 2 + 3 * 10_000 + 2
    binary = samples["not JSON"]
    assert binary["binary"] is True and binary["frame_length"] == 2000
    assert binary["frame"].isprintable() and binary["frame"].startswith("\\xff\\x00")


@pytest.mark.parametrize(("reply", "detail"), MALFORMED_REPLIES)
async def test_a_malformed_reply_fails_its_command_at_once(
    reply: dict[str, Any], detail: str
) -> None:
    async with connected() as (cdp, browser):
        failure: list[BaseException] = []

        async def call() -> None:
            try:
                await cdp.send("Runtime.evaluate", {"expression": "1+1"}, session_id=SESSION,
                               timeout_s=20)
            except MalformedReply as exc:
                failure.append(exc)

        with anyio.fail_after(5):  # far below the command's own 20 s timeout
            async with anyio.create_task_group() as tg:
                tg.start_soon(call)
                command = await browser.command()
                await browser.answer(command, **reply)
        [error] = failure
        assert str(error).startswith(
            "the browser sent a malformed reply to Runtime.evaluate on target 't' ("
            + detail)
        assert "whether the command took effect is unknown" in str(error)
        assert not isinstance(error, CdpError)  # not "Chrome refused": callers must not
        # read it as a stale node or a body Chrome no longer holds
        assert cdp.dropped_frames == {"malformed reply": 1}
        assert cdp.is_open
        await events_flow(cdp, browser)


async def test_a_well_formed_error_is_still_a_cdp_error() -> None:
    async with connected() as (cdp, browser):
        with anyio.fail_after(5):
            async with anyio.create_task_group() as tg:
                async def call() -> None:
                    with pytest.raises(CdpError) as caught:
                        await cdp.send("DOM.resolveNode", timeout_s=20)
                    assert str(caught.value) == "DOM.resolveNode failed: No node (CDP error -32000)"

                tg.start_soon(call)
                await browser.answer(await browser.command(),
                                     error={"code": -32000, "message": "No node"})
        assert cdp.dropped_frames == {}


async def test_unusable_frames_in_flight_leave_the_real_reply_to_answer() -> None:
    """Garbage between a command and its reply (ids of the wrong type, a reply to an id
    nobody waits for, events of the wrong shape) does not answer or fail the command."""
    async with connected() as (cdp, browser):
        result: dict[str, Any] = {}

        async def call() -> None:
            result.update(await cdp.send("Runtime.evaluate", session_id=SESSION, timeout_s=20))

        with anyio.fail_after(5):
            async with anyio.create_task_group() as tg:
                tg.start_soon(call)
                command = await browser.command()
                call_id = command["id"]
                for frame in (
                    json.dumps({"id": str(call_id), "result": {"wrong": 1}}),
                    json.dumps({"id": [call_id], "result": {"wrong": 2}}),
                    json.dumps({"id": call_id + 1000, "result": 5}),  # nobody waits for it
                    '{"id": true, "result": {"wrong": 3}}',
                    '{"method": "Runtime.consoleAPICalled", "sessionId": "' + SESSION
                    + '", "params": []}',
                    "[]", "}{", b"\x00",
                ):
                    await browser.ws.send(frame)
                await browser.answer(command, result={"result": {"value": 2}})
        assert result == {"result": {"value": 2}}
        assert cdp.dropped_frames == {"id not an integer": 3, "event params not an object": 1,
                                      "not a JSON object": 1, "not JSON": 2}


async def test_a_binary_frame_that_is_json_is_read_like_text() -> None:
    async with connected() as (cdp, browser):
        got: list[tuple[str, dict[str, Any]]] = []
        cdp.listen(SESSION, lambda method, params: got.append((method, params)))
        await browser.ws.send(json.dumps({"method": "Page.loadEventFired", "sessionId": SESSION,
                                          "params": {"timestamp": 1.5}}).encode())
        await events_flow(cdp, browser)
        assert got[0] == ("Page.loadEventFired", {"timestamp": 1.5})
        assert cdp.dropped_frames == {}


async def test_a_failing_listener_is_logged_and_the_others_still_run() -> None:
    async with connected() as (cdp, browser):
        def broken(method: str, params: dict[str, Any]) -> None:
            raise KeyError("args")

        cdp.listen(SESSION, broken)
        with capture_logs() as logs:
            await events_flow(cdp, browser)
        assert [entry["event"] for entry in logs] == ["event listener failed"]
        assert cdp.dropped_frames == {}  # the frame was fine; the listener was not
