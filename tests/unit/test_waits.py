"""Waiting on tab events (gateway.page.waits, ``Arrival``): a cancellation is never swallowed.

``settle`` runs after every browse_act step. Its wait for a navigation used to
catch ``CancelledError`` to mean "the tab detached", which also ate the
caller's own cancellation: a batch cancelled during that wait went on to its
next step. These tests cancel the wait the way ``task.cancel()`` does (once,
edge-triggered — as a timeout or a cancelled task delivers it) and check the
task ends cancelled; and check a detach (the arrival dropped) still just ends the
wait. A long wait reports its seconds as the call's progress; a short one nothing.
"""

from __future__ import annotations

import asyncio

import anyio
import pytest

from gateway import progress
from gateway.page import waits
from gateway.page.waits import finished, settle
from gateway.tabs.tab import Tab


def _tab() -> Tab:
    return Tab(1, "local", "TARGET-1")


@pytest.mark.anyio
async def test_cancelling_settle_mid_wait_cancels_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(waits, "SETTLE_START_S", 60.0)  # still waiting however slow the test
    tab = _tab()
    started = tab.expect("Page.frameStartedNavigating")
    loaded = tab.expect("Page.loadEventFired")
    settling = asyncio.get_running_loop().create_task(settle(tab, started, loaded, 10.0))
    await anyio.wait_all_tasks_blocked()  # inside the wait for a navigation to start
    settling.cancel()
    with pytest.raises(asyncio.CancelledError):
        await settling
    assert settling.cancelled()
    assert not started.done and not loaded.done  # the arrivals are the tab's own


@pytest.mark.anyio
async def test_cancelling_the_load_wait_cancels_it() -> None:
    tab = _tab()
    started = tab.expect("Page.frameStartedNavigating")
    loaded = tab.expect("Page.loadEventFired")
    settling = asyncio.get_running_loop().create_task(settle(tab, started, loaded, 10.0))
    await anyio.wait_all_tasks_blocked()
    tab.on_event("Page.frameStartedNavigating", {"frameId": "TARGET-1"})
    await anyio.wait_all_tasks_blocked()  # now waiting up to 10 s for the load
    settling.cancel()
    with pytest.raises(asyncio.CancelledError):
        await settling


@pytest.mark.anyio
async def test_a_detach_during_settle_ends_the_wait_quietly() -> None:
    tab = _tab()
    started = tab.expect("Page.frameStartedNavigating")
    loaded = tab.expect("Page.loadEventFired")
    tab.on_event("Page.frameStartedNavigating", {"frameId": "TARGET-1"})
    begin = anyio.current_time()
    async with anyio.create_task_group() as tg:
        tg.start_soon(settle, tab, started, loaded, 10.0)
        await anyio.wait_all_tasks_blocked()
        tab.detach()  # drops the load's arrival: the page went away
    assert loaded.dropped
    assert anyio.current_time() - begin < 3.0  # not the 10 s load budget


@pytest.mark.anyio
async def test_finished_times_out_without_touching_the_arrival() -> None:
    tab = _tab()
    future = tab.expect("Page.loadEventFired")
    assert await finished((future,), 0.05, "x") is False
    assert not future.done
    tab.on_event("Page.loadEventFired", {})
    assert await finished((future,), 0.05, "x") is True
    assert future.result()[0] == "Page.loadEventFired"


Sent = list[tuple[float, float | None, str | None]]


def _hearing(sent: Sent) -> progress.Sender:
    async def send(done: float, total: float | None, message: str | None) -> None:
        sent.append((done, total, message))
    return send


@pytest.mark.anyio
async def test_a_long_wait_reports_seconds_of_its_timeout_then_a_final_report(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(waits, "REPORT_AFTER_S", 0.2)
    monkeypatch.setattr(waits, "TICK_S", 0.1)
    monkeypatch.setattr(progress, "MIN_INTERVAL_S", 0.0)
    tab, sent = _tab(), []
    future = tab.expect("Page.loadEventFired")
    with progress.reporting(_hearing(sent)):
        async with anyio.create_task_group() as tg:
            tg.start_soon(finished, (future,), 5.0, "'load' of the page")
            await anyio.sleep(0.65)
            tab.on_event("Page.loadEventFired", {})
    ticks, final = sent[:-1], sent[-1]
    # From 0.2 s on, every 0.1 s, until 0.65 s: at most 5; a loaded machine ticks late,
    # so fewer (the load comes after at least 0.65 s, and nothing ticks after it).
    assert 1 <= len(ticks) <= 6, sent
    assert all(total == 5.0 and 0.2 <= done <= final[0] for done, total, _ in ticks), sent
    assert ticks[0][2] == f"waiting for 'load' of the page: {ticks[0][0]:.1f} of 5 s", sent
    assert [done for done, _, _ in sent] == sorted({done for done, _, _ in sent}), sent
    assert final[0] == final[1] and 0.65 <= final[0] < 5.0, final
    assert final[2] == f"waited {final[0]:.1f} s for 'load' of the page"


@pytest.mark.anyio
async def test_a_short_wait_or_an_unnamed_one_reports_nothing(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(waits, "REPORT_AFTER_S", 0.3)
    monkeypatch.setattr(waits, "TICK_S", 0.05)
    tab, sent = _tab(), []
    quick = tab.expect("Page.loadEventFired")
    with progress.reporting(_hearing(sent)):
        async with anyio.create_task_group() as tg:
            tg.start_soon(finished, (quick,), 5.0, "'load' of the page")
            await anyio.wait_all_tasks_blocked()  # waiting, well before REPORT_AFTER_S
            tab.on_event("Page.loadEventFired", {})
        assert await tab.expect("Page.loadEventFired").wait(0.5) is False  # no progress
        assert await finished((tab.expect("Page.loadEventFired"),), 0.1, "x") is False
    assert sent == []


@pytest.mark.anyio
async def test_a_wait_that_times_out_ends_with_its_final_report(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(waits, "REPORT_AFTER_S", 0.0)
    monkeypatch.setattr(waits, "TICK_S", 0.1)
    tab, sent = _tab(), []
    with progress.reporting(_hearing(sent)):
        assert await finished((tab.expect("Page.loadEventFired"),), 0.35, "x") is False
    assert sent and sent[-1][0] == sent[-1][1] and sent[-1][0] >= 0.35, sent
