"""What a tab records, bounded twice: the ring under the console and network logs (pure).

A page can log without end, so a tab keeps at most ``capacity`` entries (the
oldest go first, and how many went is counted so the agent is told) and only
those of its last ``KEEP_NAVIGATIONS`` main-frame navigations — each entry
carries the navigation it belongs to. Ids count on for the tab's whole life,
so ``since=<last_id>`` polling never sees an entry twice.
"""

from __future__ import annotations

import itertools
from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, Protocol, TypeVar

__all__ = ["KEEP_NAVIGATIONS", "Entry", "EpochRing"]

KEEP_NAVIGATIONS = 3


class Entry(Protocol):
    @property
    def id(self) -> int: ...

    @property
    def navigation(self) -> int: ...


E = TypeVar("E", bound=Entry)


class EpochRing(Generic[E]):
    """Entries by id, oldest first; subclasses make them from events."""

    def __init__(self, capacity: int = 1000) -> None:
        self.capacity = capacity
        self.dropped = 0
        self.navigation = 0
        self._entries: OrderedDict[int, E] = OrderedDict()
        self._ids = itertools.count(1)

    def _next_id(self) -> int:
        return next(self._ids)

    def _keep(self, entry: E) -> None:
        """Add ``entry`` (its id from ``_next_id``), dropping the oldest when full."""
        if len(self._entries) >= self.capacity:
            self._forget(next(iter(self._entries.values())))
            self.dropped += 1
        self._entries[entry.id] = entry

    def _forget(self, entry: E) -> None:
        """Take ``entry`` out; a subclass that indexes entries otherwise extends this."""
        self._entries.pop(entry.id, None)

    def navigated(self) -> None:
        """A main-frame navigation: start a new epoch, forget epochs beyond the kept ones."""
        self.navigation += 1
        oldest = self.navigation - KEEP_NAVIGATIONS + 1
        while self._entries:
            first = next(iter(self._entries.values()))
            if first.navigation >= oldest:
                break
            self._forget(first)

    def get(self, entry_id: int) -> E | None:
        return self._entries.get(entry_id)

    def _select(self, keep: Callable[[E], bool], since: int | None, limit: int) -> list[E]:
        """The newest ``limit`` entries after ``since`` for which ``keep`` holds, oldest
        first."""
        picked = [e for e in self._entries.values()
                  if (since is None or e.id > since) and keep(e)]
        return picked[-limit:] if limit else []

    @property
    def last_id(self) -> int:
        return next(reversed(self._entries)) if self._entries else 0
