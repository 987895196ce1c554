"""``browsers = "all"``: a host scanned for browsers, each one a target while it lives.

Every ``scan_interval_s`` one exec of the scan script (``scan``) lists the
browser processes on the host. A browser seen for the first time becomes a
target of its own, named from the configured name and a number that is never
reused (``ci-1``, ``ci-2``, …), with its own supervisor and tabs — attached at
once, so the console and network of a test that has only just begun are
there. One that cannot be attached to is a target too, ``down`` with the
reason and the fix. A browser that exits is removed: its tab ids fail with
"… (pid 4242), which exited", and it stays in ``list_targets`` as ``gone`` for
a while. A process is known by its pid *and* start time, so a reused pid is a
new browser. A failed scan is logged and retried at the next interval; it
never removes anything.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass

import structlog

from gateway.config import TargetConfig
from gateway.discovery.scan import SCAN_TIMEOUT_S, Candidate, classify, parse_scan, scan_script
from gateway.discovery.strategy import Scanned
from gateway.errors import HostError
from gateway.fleet.group import GroupTargets, HostGroup
from gateway.hosts.base import Host

__all__ = ["STARTING_GRACE_S", "HostScan"]

log = structlog.get_logger("gateway.scan")

# A port 0 browser writes its DevToolsActivePort a moment after it starts: wait this
# long for the file before listing the browser as one that has none.
STARTING_GRACE_S = 10.0


@dataclass
class _Member:
    name: str
    strategy: Scanned


class HostScan(HostGroup):
    """The browsers of one host, followed for one configured target."""

    def __init__(self, config: TargetConfig, host: Host, targets: GroupTargets) -> None:
        super().__init__(config, host, targets)
        self.scans = 0
        self.last_scan_ms: float | None = None
        self.truncated = False
        self._members: dict[tuple[int, str | None], _Member] = {}
        self._starting: dict[tuple[int, str | None], float] = {}  # first seen, no file yet
        self._numbers = itertools.count(1)

    @property
    def members(self) -> list[str]:
        """Names of the browsers found and still running, oldest first."""
        return [m.name for m in self._members.values()]

    def attachable(self) -> list[str]:
        return [m.name for m in self._members.values() if m.strategy.candidate.problem is None]

    def nothing_found(self) -> str:
        """Why no browser can be chosen (the registry's error for this group's name)."""
        others = (f"; not attachable: {', '.join(self.members)} (list_targets says why)"
                  if self.members else "")
        return (f"no debuggable browser found on {self.host.label}{others}; start one with "
                "--remote-debugging-port=0 and a --user-data-dir")

    async def look(self) -> None:
        start = time.perf_counter()
        try:
            await self.host.connect()
            output = await self.host.run(scan_script(), SCAN_TIMEOUT_S)
        except HostError as exc:
            self._set("down", f"scanning {self.host.label} for browsers failed: {exc.reason}; "
                      "retrying")
            return
        scan = parse_scan(output)
        self.last_scan_ms = (time.perf_counter() - start) * 1000
        self.scans += 1
        self.truncated = scan.truncated
        seen: set[tuple[int, str | None]] = set()
        for process in scan.processes:
            key = (process.pid, process.started)
            seen.add(key)
            self._follow(key, classify(process, scan.uid))
        self._starting = {k: t for k, t in self._starting.items() if k in seen}
        for key in [k for k in self._members if k not in seen]:
            member = self._members.pop(key)
            log.info("browser exited", target=member.name, pid=key[0])
            await self._targets.remove(member.name, "exited")
        self._set("up", None)

    def _follow(self, key: tuple[int, str | None], candidate: Candidate) -> None:
        member = self._members.get(key)
        if member is None and candidate.starting:
            first_seen = self._starting.setdefault(key, time.monotonic())
            if time.monotonic() - first_seen < STARTING_GRACE_S:
                return  # listed once its file is there (or the grace is over)
        if member is None:
            name = f"{self.name}-{next(self._numbers)}"
            while self._targets.taken(name):  # a share may have that name already
                name = f"{self.name}-{next(self._numbers)}"
            member = _Member(name, Scanned(candidate))
            self._members[key] = member
            found = self.config.model_copy(update={"name": name, "browsers": "one"})
            self._targets.add_found(found, member.strategy, self.name)
            log.info("browser found", target=name, pid=candidate.pid, program=candidate.program,
                     port=candidate.active_port, started_by=candidate.started_by,
                     problem=candidate.problem)
        elif member.strategy.candidate != candidate:
            member.strategy.candidate = candidate
            self._targets.update_found(member.name)
