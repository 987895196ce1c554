"""A person's hold on a tab (``handoff``): live-view state, kept in the tab's slot.

While a hold lasts the agent's tools that change the tab are refused (``TabHeld``);
the live page's control link made for it sends the person's input; Done, its time
running out, the tab closing or the gateway exiting ends it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import anyio

from gateway.tabs.tab import Slot, Tab

__all__ = ["HOLD", "Hold", "held"]


@dataclass
class Hold:
    """A person holds the tab: the agent's tools that change it are refused until
    ``released`` is set (the person pressed Done) or ``until`` (monotonic) passes."""

    reason: str
    until: float
    released: anyio.Event = field(default_factory=anyio.Event)
    # once released: "done" (the person), "expired", "tab closed" or "gateway exiting"
    ended: str | None = None

    def active(self) -> bool:
        return not self.released.is_set() and time.monotonic() < self.until

    def end(self, how: str) -> bool:
        """End the hold now, for ``how`` (as "expired" once ``until`` passed); False when
        it had ended already or ends otherwise."""
        if self.released.is_set():
            return False
        self.ended = how if time.monotonic() < self.until else "expired"
        self.released.set()
        return self.ended == how


HOLD: Slot[Hold] = Slot("hold", gone=lambda hold, _: hold.end("tab closed"))
"""The tab's hold, from ``handoff`` until it ends; a person cannot act on a tab gone."""


def held(tab: Tab) -> Hold | None:
    """The person's hold on ``tab``, while it lasts."""
    hold = tab.peek(HOLD)
    return hold if hold is not None and hold.active() else None
