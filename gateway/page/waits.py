"""Waiting on a tab's events without ever swallowing a cancellation.

``Tab.expect`` hands out asyncio futures, and ``Tab.detach`` cancels them when
the page goes away. Awaiting such a future raises ``CancelledError`` both when
the tab detached and when the *caller* is being cancelled, and the two must not
be confused: catching it to mean "the tab went away" would eat a cancellation
(a tool call's timeout, a client's cancel), and the batch would go on running.
So the page layer never awaits those futures: ``finished`` waits until one is
done, by an anyio event, and the caller then asks the future what happened.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import anyio

from gateway.browsers.tab import Tab

__all__ = ["QUIET_MAX_S", "QUIET_S", "SETTLE_LOAD_S", "SETTLE_START_S", "any_finished",
           "finished", "settle"]

SETTLE_START_S = 0.15   # how long an action gets to start a navigation
SETTLE_LOAD_S = 10.0    # how long a navigation it started gets to load
QUIET_S = 0.1           # network-quiet window after an action…
QUIET_MAX_S = 1.0       # …waited for at most this long (pages that poll never go quiet)


async def finished(future: asyncio.Future[Any], timeout_s: float) -> bool:
    """Whether ``future`` is done (a result, or cancelled by a detach) within ``timeout_s``.

    Never cancels the future and never catches the caller's own cancellation.
    """
    return await any_finished((future,), timeout_s)


async def any_finished(futures: Sequence[asyncio.Future[Any]], timeout_s: float) -> bool:
    """Whether one of ``futures`` is done within ``timeout_s`` (``finished`` for a wait
    that more than one event can end)."""
    if not any(f.done() for f in futures):
        done = anyio.Event()
        for future in futures:
            future.add_done_callback(lambda _: done.set())
        with anyio.move_on_after(timeout_s):
            await done.wait()
    return any(f.done() for f in futures)


async def settle(tab: Tab, started: asyncio.Future[Any], loaded: asyncio.Future[Any],
                 budget_s: float) -> None:
    """After an action: if it started a navigation, wait (bounded) for the new page to
    load; then for a short network-quiet window (no new request for ``QUIET_S``).

    A navigation that did not start, is still loading, or whose tab went away just
    ends the wait: the view then shows what is there.
    """
    if await finished(started, SETTLE_START_S) and not started.cancelled():
        await finished(loaded, min(budget_s, SETTLE_LOAD_S))
    seen = tab.network.last_id
    with anyio.move_on_after(QUIET_MAX_S):
        while True:
            await anyio.sleep(QUIET_S)
            if tab.network.last_id == seen:
                return
            seen = tab.network.last_id
