"""``OneShot`` (gateway.concurrency): a reply or an event that arrives once, in anyio terms.

What the asyncio futures it replaced got wrong is what is checked: a wait that ends
because nobody will answer (``drop``, a tab gone) is a state read afterwards, never
an exception that looks like the waiter's own cancellation; and the waiter's own
cancellation still ends it, however the value comes later.
"""

from __future__ import annotations

import anyio
import pytest

from gateway.concurrency import OneShot, first
from gateway.errors import CdpError

pytestmark = pytest.mark.anyio


async def test_a_value_set_wakes_the_waiter_and_the_first_outcome_wins() -> None:
    shot: OneShot[int] = OneShot()
    async with anyio.create_task_group() as tg:
        tg.start_soon(shot.wait, 10.0)
        await anyio.sleep(0)
        shot.set(1)
        shot.set(2)
        shot.drop()
    assert shot.arrived and not shot.dropped and shot.result() == 1


async def test_a_failure_is_raised_by_result() -> None:
    shot: OneShot[dict[str, object]] = OneShot()
    shot.fail(CdpError("Page.navigate", -32000, "no"))
    assert await shot.wait(0.0) and shot.arrived
    with pytest.raises(CdpError, match="no"):
        shot.result()


async def test_a_dropped_one_ends_the_wait_without_raising() -> None:
    shot: OneShot[int] = OneShot()
    async with anyio.create_task_group() as tg:
        async def wait() -> None:
            assert await shot.wait(10.0) is True

        tg.start_soon(wait)
        await anyio.sleep(0)
        shot.drop()
    assert shot.dropped and not shot.arrived
    with pytest.raises(RuntimeError):
        shot.result()


async def test_a_timeout_is_false_and_leaves_it_pending() -> None:
    shot: OneShot[int] = OneShot()
    assert await shot.wait(0.01) is False
    assert not shot.done
    shot.set(3)
    assert await shot.wait(0.01) is True


async def test_the_waiters_cancellation_is_not_swallowed() -> None:
    shot: OneShot[int] = OneShot()
    reached = []
    with anyio.CancelScope() as scope:
        async with anyio.create_task_group() as tg:
            async def wait() -> None:
                await shot.wait(10.0)
                reached.append("after the wait")  # a swallowed cancellation gets here

            tg.start_soon(wait)
            await anyio.sleep(0)
            scope.cancel()
    assert scope.cancelled_caught and reached == [] and not shot.done


async def test_on_done_runs_once_however_it_ends() -> None:
    for end in ("set", "fail", "drop"):
        calls: list[str] = []
        shot: OneShot[int] = OneShot(lambda: calls.append("done"))  # noqa: B023
        {"set": lambda: shot.set(1), "fail": lambda: shot.fail(ValueError()),  # noqa: B023
         "drop": shot.drop}[end]()
        shot.drop()
        assert calls == ["done"], end


async def test_first_ends_with_any_of_several() -> None:
    a: OneShot[int] = OneShot()
    b: OneShot[int] = OneShot()
    assert await first((a, b), 0.01) is False
    async with anyio.create_task_group() as tg:
        async def wait() -> None:
            assert await first((a, b), 10.0) is True

        tg.start_soon(wait)
        await anyio.sleep(0)
        b.set(2)
    assert not a.done and b.result() == 2
