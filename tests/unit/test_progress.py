"""``gateway.progress``: reports reach the bound sender, a few a second at most, the
last one always; with no sender bound, or a sender that fails or hangs, the work
goes on."""

from __future__ import annotations

import anyio
import pytest

from gateway import progress

pytestmark = pytest.mark.anyio


class Clock:
    """``progress``'s clock, moved by the test: whether a report is "too soon" must not
    depend on how fast a loaded machine runs the test."""

    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    fake = Clock()
    monkeypatch.setattr(progress, "time", fake)
    return fake


async def test_without_a_sender_report_does_nothing(clock: Clock) -> None:
    """No sender bound: no error, and no trace left — a call that binds one right after
    hears its very first report (a report nobody heard counts as nothing sent)."""
    await progress.report(5, 10, "nobody listens", final=True)
    sent: list[float] = []

    async def send(done: float, total: float | None, message: str | None) -> None:
        sent.append(done)

    with progress.reporting(send):
        await progress.report(1, 10)
    assert sent == [1]


async def test_reports_are_throttled_and_the_final_one_always_sent(clock: Clock) -> None:
    sent: list[tuple[float, float | None, str | None]] = []

    async def send(done: float, total: float | None, message: str | None) -> None:
        sent.append((done, total, message))

    with progress.reporting(send):
        for done in range(1, 11):
            await progress.report(done, 10, f"{done}/10")
            clock.now += progress.MIN_INTERVAL_S / 10  # all ten within one interval
        await progress.report(10, 10, "done", final=True)
        await progress.report(10, 10, "again", final=True)  # done did not grow: dropped
    assert sent == [(1, 10, "1/10"), (10, 10, "done")]
    await progress.report(12, 12)  # outside the block: nothing is bound any more
    assert len(sent) == 2


async def test_spaced_reports_each_go_out(clock: Clock) -> None:
    sent: list[float] = []

    async def send(done: float, total: float | None, message: str | None) -> None:
        sent.append(done)

    with progress.reporting(send):
        for done in (1, 2, 3):
            await progress.report(done)
            clock.now += progress.MIN_INTERVAL_S
    assert sent == [1, 2, 3]


async def test_a_failing_or_hung_sender_does_not_hold_the_work() -> None:
    async def broken(done: float, total: float | None, message: str | None) -> None:
        raise OSError("client gone")

    async def hung(done: float, total: float | None, message: str | None) -> None:
        await anyio.sleep_forever()

    with progress.reporting(broken):
        await progress.report(1, final=True)
    with anyio.fail_after(progress.SEND_TIMEOUT_S + 2), progress.reporting(hung):
        await progress.report(1, final=True)


async def test_a_new_phase_counts_on_from_the_last_value_sent() -> None:
    """A batch's upload (bytes) then a wait (seconds): the wait is heard, and progress
    still grows, as the protocol wants."""
    sent: list[tuple[float, float | None]] = []

    async def send(done: float, total: float | None, message: str | None) -> None:
        sent.append((done, total))

    with progress.reporting(send):
        await progress.report(1000, 1000, final=True)
        await progress.report(1.5, 10)  # seconds after bytes, same phase: not above 1000
        progress.new_phase()
        await progress.report(1.5, 10, final=True)
        await progress.report(2.5, 2.5, final=True)
    assert sent == [(1000, 1000), (1001.5, 1010), (1002.5, 1002.5)]
