"""A heap snapshot's progress (``gateway.page.profile.heap``): Chrome's own count of objects
while it builds the snapshot, then the bytes received — always below what the final
report will say, as progress must grow — at most a few reports a second; and the
helper that runs the command beside the reporter raises the command's failure as
itself, leaving nothing running."""

from __future__ import annotations

import io

import anyio
import pytest

from gateway import progress
from gateway.concurrency import alongside
from gateway.errors import CdpTimeout
from gateway.page.profile.heap import _Sink

pytestmark = pytest.mark.anyio

Sent = list[tuple[float, float | None, str | None]]


def _hearing(sent: Sent) -> progress.Sender:
    async def send(done: float, total: float | None, message: str | None) -> None:
        sent.append((done, total, message))
    return send


async def _step() -> None:
    await anyio.sleep(progress.MIN_INTERVAL_S * 1.5)  # past the reporter's pause


async def test_objects_then_bytes_received_each_below_the_final(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(progress, "MIN_INTERVAL_S", 0.02)
    file = io.BytesIO()
    sink, sent = _Sink(file, limit=1 << 20), []
    with progress.reporting(_hearing(sent)):
        async with anyio.create_task_group() as tg:
            tg.start_soon(sink.report_progress)
            for done in (0, 5000, 10000):
                sink.on_event("HeapProfiler.reportHeapSnapshotProgress",
                              {"done": done, "total": 10000})
                await _step()
            sink.on_event("HeapProfiler.reportHeapSnapshotProgress",
                          {"done": 10000, "total": 10000, "finished": True})
            for piece in range(4):
                sink.on_event("HeapProfiler.addHeapSnapshotChunk",
                              {"chunk": str(piece) * 30000})
                await _step()
            tg.cancel_scope.cancel()
    assert file.getvalue() == b"".join(str(n).encode() * 30000 for n in range(4))
    assert sent[:3] == [(0, 10000, "heap snapshot: 0 of 10,000 objects"),
                        (5000, 10000, "heap snapshot: 5,000 of 10,000 objects"),
                        (10000, 10000, "heap snapshot: 10,000 of 10,000 objects")], sent
    received = sent[3:]
    # the bytes before the latest chunk (the first, 0, is not above 10,000: dropped)
    assert [done for done, _, _ in received] == [30000, 60000, 90000], sent
    assert all(total is None and done < sink.written for done, total, _ in received)
    assert received[0][2] == "receiving the snapshot: 0.0 MB"


async def test_reports_come_a_few_a_second_at_most() -> None:
    sink, sent = _Sink(io.BytesIO(), limit=1 << 30), []
    with progress.reporting(_hearing(sent)):
        async with anyio.create_task_group() as tg:
            tg.start_soon(sink.report_progress)
            for done in range(1, 401):  # Chrome reports every few thousand objects
                sink.on_event("HeapProfiler.reportHeapSnapshotProgress",
                              {"done": done, "total": 400})
                await anyio.sleep(0.002)
            tg.cancel_scope.cancel()
    assert 1 <= len(sent) <= 8, sent  # about a second of events


async def test_past_the_limit_nothing_more_is_written() -> None:
    sink = _Sink(io.BytesIO(), limit=100)
    for _ in range(3):
        sink.on_event("HeapProfiler.addHeapSnapshotChunk", {"chunk": "x" * 40})
    assert sink.over and sink.written == 80 and sink.chunks == 2


async def test_the_command_failure_is_raised_as_itself_and_the_reporter_stopped() -> None:
    stopped = anyio.Event()

    async def companion() -> None:
        try:
            await anyio.sleep_forever()
        finally:
            stopped.set()

    async def failing() -> None:
        await anyio.sleep(0.01)
        raise CdpTimeout("HeapProfiler.takeHeapSnapshot", 1.0)

    with pytest.raises(CdpTimeout):
        await alongside(companion, failing)
    assert stopped.is_set()

    async def answering() -> dict[str, str]:
        return {}

    with anyio.fail_after(1):
        await alongside(companion, answering)
