"""A group: one configured target that stands for the browsers found on its host.

``browsers = "all"`` (``host_scan.HostScan``: the browser processes there) and
``shared = true`` (``share_watch.ShareWatch``: the shares there) are both a look at
the host every ``look_interval_s`` that adds a target per browser found and removes
the ones gone, through the registry (``GroupTargets``). What they share lives here:
the state the group's ``list_targets`` row shows, waiting for the first look, and
the loop. A look that fails is the group's state, never an exception: it is retried
at the next interval.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Literal, Protocol

import anyio
import structlog

from gateway.config import TargetConfig
from gateway.discovery.strategy import Strategy
from gateway.hosts.base import Host

__all__ = ["LOOK_TIMEOUT_S", "GroupState", "GroupTargets", "HostGroup"]

log = structlog.get_logger("gateway.group")

LOOK_TIMEOUT_S = 5.0  # one look at the host: an exec of a small script
GroupState = Literal["connecting", "up", "down"]


class GroupTargets(Protocol):
    """What a group needs from the registry (which implements it)."""

    def add_found(self, target: TargetConfig, strategy: Strategy, group: str) -> None: ...

    def taken(self, name: str) -> bool: ...

    def update_found(self, name: str) -> None: ...

    async def remove(self, name: str, why: str = "was removed") -> None: ...


class HostGroup(ABC):
    """The looking loop and the state of one group; subclasses say what a look is."""

    def __init__(self, config: TargetConfig, host: Host, targets: GroupTargets) -> None:
        self.config = config
        self.name = config.name
        self.host = host
        self._targets = targets
        self.state: GroupState = "connecting"
        self.error: str | None = None
        self.skipped: list[str] = []  # what the last look could not make a target of, why
        self._changed = anyio.Event()

    @property
    @abstractmethod
    def members(self) -> list[str]:
        """Target names of the browsers found, oldest first."""

    @abstractmethod
    def attachable(self) -> list[str]:
        """The members a call naming the group may be given."""

    @abstractmethod
    def nothing_found(self) -> str:
        """Why no member can be chosen (the registry's error for the group's name)."""

    @abstractmethod
    async def look(self) -> None:
        """Look at the host once and follow what changed."""

    async def settled(self) -> None:
        """Wait (bounded) for the first look to finish."""
        with anyio.move_on_after(self.config.reconnect.connect_timeout_s + LOOK_TIMEOUT_S):
            while self.state == "connecting":
                await self._changed.wait()

    async def run(self) -> None:
        """Look, follow, wait — until cancelled (the registry lets it go)."""
        while True:
            await self.look()
            await anyio.sleep(self.config.look_interval_s)

    def _set(self, state: GroupState, error: str | None) -> None:
        if state != self.state or error != self.error:
            log.info("group state", target=self.name, state=state, error=error)
        self.state, self.error = state, error
        self._changed.set()
        self._changed = anyio.Event()
