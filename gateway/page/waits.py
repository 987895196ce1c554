"""How the page layer waits for a tab's events: long waits say so, and ``settle``.

A wait that may last (a page's load, ``wait_for``) says how long it has waited, as
the call's progress (``Elapsed``): seconds of its timeout, from ``REPORT_AFTER_S``
on, so a wait that ends at once sends nothing. A short wait with nothing to report
is just ``Arrival.wait``. Neither ever swallows the caller's cancellation: the
tab's session going away *drops* the arrival, a state the caller reads afterwards.
"""

from __future__ import annotations

import anyio

from gateway import progress
from gateway.concurrency import first
from gateway.tabs.tab import Arrival, Tab

__all__ = ["QUIET_MAX_S", "QUIET_S", "REPORT_AFTER_S", "SETTLE_LOAD_S", "SETTLE_START_S",
           "Elapsed", "finished", "settle"]

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


async def finished(arrivals: tuple[Arrival, ...], timeout_s: float, waiting_for: str) -> bool:
    """Whether one of ``arrivals`` ended (came, or was dropped as its tab went away) within
    ``timeout_s``; a long wait reports its progress, naming what it is ``waiting_for``."""
    if not any(a.done for a in arrivals):
        elapsed = Elapsed(timeout_s, waiting_for)
        with anyio.move_on_after(timeout_s):
            while not await first(arrivals, TICK_S):
                await elapsed.tick()
        await elapsed.end()
    return any(a.done for a in arrivals)


async def settle(tab: Tab, started: Arrival, loaded: Arrival, budget_s: float) -> None:
    """After an action: if it started a navigation, wait (bounded) for the new page to
    load; then for a short network-quiet window (no new request for ``QUIET_S``).

    A navigation that did not start, is still loading, or whose tab went away just
    ends the wait: the view then shows what is there.
    """
    if await started.wait(SETTLE_START_S) and started.arrived:
        await finished((loaded,), min(budget_s, SETTLE_LOAD_S), "the new page to load")
    seen = tab.network.last_id
    with anyio.move_on_after(QUIET_MAX_S):
        while True:
            await anyio.sleep(QUIET_S)
            if tab.network.last_id == seen:
                return
            seen = tab.network.last_id
