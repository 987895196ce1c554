"""Waiting on tab events (gateway.page.waits): a cancellation is never swallowed.

``settle`` runs after every browse_act step. Its wait for a navigation used to
catch ``CancelledError`` to mean "the tab detached", which also ate the
caller's own cancellation: a batch cancelled during that wait went on to its
next step. These tests cancel the wait the way ``task.cancel()`` does (once,
edge-triggered — as ``asyncio.timeout`` and a cancelled task deliver it) and
check the task ends cancelled; and check a detach still just ends the wait.
"""

from __future__ import annotations

import asyncio

import anyio
import pytest

from gateway.browsers.tab import Tab
from gateway.page.waits import SETTLE_START_S, finished, settle


def _tab() -> Tab:
    return Tab(1, "local", "TARGET-1")


@pytest.mark.anyio
async def test_cancelling_settle_mid_wait_cancels_it() -> None:
    tab = _tab()
    started = tab.expect("Page.frameStartedNavigating")
    loaded = tab.expect("Page.loadEventFired")
    settling = asyncio.get_running_loop().create_task(settle(tab, started, loaded, 10.0))
    await anyio.sleep(SETTLE_START_S / 3)  # inside the wait for a navigation to start
    settling.cancel()
    with pytest.raises(asyncio.CancelledError):
        await settling
    assert settling.cancelled()
    assert not started.cancelled() and not loaded.cancelled()  # the tab's futures are its own


@pytest.mark.anyio
async def test_cancelling_the_load_wait_cancels_it() -> None:
    tab = _tab()
    started = tab.expect("Page.frameStartedNavigating")
    loaded = tab.expect("Page.loadEventFired")
    settling = asyncio.get_running_loop().create_task(settle(tab, started, loaded, 10.0))
    await anyio.sleep(0.01)
    tab.on_event("Page.frameStartedNavigating", {"frameId": "TARGET-1"})
    await anyio.sleep(0.05)  # now waiting up to 10 s for the load
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
        await anyio.sleep(0.05)
        tab.detach()  # cancels the load future: the page went away
    assert loaded.cancelled()
    assert anyio.current_time() - begin < 3.0  # not the 10 s load budget


@pytest.mark.anyio
async def test_finished_times_out_without_touching_the_future() -> None:
    tab = _tab()
    future = tab.expect("Page.loadEventFired")
    assert await finished(future, 0.05) is False
    assert not future.done()
    tab.on_event("Page.loadEventFired", {})
    assert await finished(future, 0.05) is True
    assert future.result()[0] == "Page.loadEventFired"
