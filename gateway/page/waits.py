"""Waiting on a tab's events without ever swallowing a cancellation.

``Tab.expect`` hands out asyncio futures, and ``Tab.detach`` cancels them when
the page goes away. Awaiting such a future raises ``CancelledError`` both when
the tab detached and when the *caller* is being cancelled, and the two must not
be confused: catching it to mean "the tab went away" would eat a cancellation
(a tool call's timeout, a client's cancel), and the batch would go on running.
So the page layer never awaits those futures: ``finished`` waits until one is
done, by an anyio event, and the caller then asks the future what happened.

A wait that may last (a page's load, ``wait_for``) says how long it has waited, as
the call's progress (``Elapsed``): seconds of its timeout, from ``REPORT_AFTER_S``
on, so a wait that ends at once sends nothing.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import anyio

from gateway import progress
from gateway.browsers.tab import Tab

__all__ = ["QUIET_MAX_S", "QUIET_S", "REPORT_AFTER_S", "SETTLE_LOAD_S", "SETTLE_START_S",
           "Elapsed", "any_finished", "finished", "settle"]

SETTLE_START_S = 0.15   # how long an action gets to start a navigation
SETTLE_LOAD_S = 10.0    # how long a navigation it started gets to load
QUIET_S = 0.1           # network-quiet window after an action…
QUIET_MAX_S = 1.0       # …waited for at most this long (pages that poll never go quiet)
REPORT_AFTER_S = 1.0    # a wait shorter than this sends no progress
TICK_S = 0.5            # how often a long wait reports


class Elapsed:
    """The progress of one wait: ``tick()`` while waiting reports the seconds elapsed of
    ``timeout_s`` once ``REPORT_AFTER_S`` have passed; ``end()`` when it is over sends
    the final report, if any was sent."""

    def __init__(self, timeout_s: float, what: str) -> None:
        self.timeout_s, self.what = timeout_s, what
        self.start = anyio.current_time()
        self.reported = False
        progress.new_phase()  # after an upload's bytes in the same batch, say

    async def tick(self) -> None:
        elapsed = anyio.current_time() - self.start
        if elapsed >= REPORT_AFTER_S:
            self.reported = True
            await progress.report(elapsed, self.timeout_s, f"waiting for {self.what}: "
                                  f"{elapsed:.1f} of {self.timeout_s:g} s")

    async def end(self) -> None:
        if self.reported:
            elapsed = anyio.current_time() - self.start
            await progress.report(elapsed, elapsed, f"waited {elapsed:.1f} s for {self.what}",
                                  final=True)


async def finished(future: asyncio.Future[Any], timeout_s: float,
                   waiting_for: str | None = None) -> bool:
    """Whether ``future`` is done (a result, or cancelled by a detach) within ``timeout_s``;
    with ``waiting_for`` (what it is, for a message) a long wait reports its progress.

    Never cancels the future and never catches the caller's own cancellation.
    """
    return await any_finished((future,), timeout_s, waiting_for)


async def any_finished(futures: Sequence[asyncio.Future[Any]], timeout_s: float,
                       waiting_for: str | None = None) -> bool:
    """Whether one of ``futures`` is done within ``timeout_s`` (``finished`` for a wait
    that more than one event can end)."""
    if not any(f.done() for f in futures):
        done = anyio.Event()
        for future in futures:
            future.add_done_callback(lambda _: done.set())
        elapsed = Elapsed(timeout_s, waiting_for) if waiting_for is not None else None
        with anyio.move_on_after(timeout_s):
            while not done.is_set():
                with anyio.move_on_after(TICK_S if elapsed is not None else timeout_s):
                    await done.wait()
                if elapsed is not None:
                    await elapsed.tick()
        if elapsed is not None:
            await elapsed.end()
    return any(f.done() for f in futures)


async def settle(tab: Tab, started: asyncio.Future[Any], loaded: asyncio.Future[Any],
                 budget_s: float) -> None:
    """After an action: if it started a navigation, wait (bounded) for the new page to
    load; then for a short network-quiet window (no new request for ``QUIET_S``).

    A navigation that did not start, is still loading, or whose tab went away just
    ends the wait: the view then shows what is there.
    """
    if await finished(started, SETTLE_START_S) and not started.cancelled():
        await finished(loaded, min(budget_s, SETTLE_LOAD_S), "the new page to load")
    seen = tab.network.last_id
    with anyio.move_on_after(QUIET_MAX_S):
        while True:
            await anyio.sleep(QUIET_S)
            if tab.network.last_id == seen:
                return
            seen = tab.network.last_id
