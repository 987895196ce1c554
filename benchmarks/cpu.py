"""CPU time by part while a measurement runs: where a call's CPU goes.

Throughput on a small machine is bounded by the CPU every process on a call's path
spends, not only the server's: the no-op tool's path is the benchmark's client and
the no-op server; a gateway call's path adds the remote hosts' sshd and Chrome (here
on the same cores). Reading each part's CPU per call tells how much of a throughput
gap the gateway could close by itself.

Each part is a set of processes read from ``/proc`` (user + system time): the client
is this process, a server one pid, a remote part every process of that name in the
topology's network namespaces.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

__all__ = ["CpuMeter", "in_namespaces", "process_cpu_s"]

_TICK_S = 1 / os.sysconf("SC_CLK_TCK")


def process_cpu_s(pid: int) -> float:
    """User + system CPU seconds of ``pid`` so far, its ended threads included (0 once
    it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:  # gone since it was listed
        return 0.0
    return (int(fields[11]) + int(fields[12])) * _TICK_S   # utime, stime


def in_namespaces(netns: Iterable[str], comm: Callable[[str], bool]) -> Callable[[], list[int]]:
    """Lister of the processes in the network namespaces ``netns`` whose command name
    (``/proc/PID/comm``) ``comm`` accepts, read afresh at each snapshot."""
    inodes = {os.stat(f"/run/netns/{name}").st_ino for name in netns}

    def pids() -> list[int]:
        found = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                inode = os.stat(f"/proc/{entry}/ns/net").st_ino
                name = Path(f"/proc/{entry}/comm").read_text().strip()
            except OSError:
                continue
            if inode in inodes and comm(name):
                found.append(int(entry))
        return found

    return pids


class CpuMeter:
    """CPU seconds spent by each part between ``start`` and ``stop``, summed over runs."""

    def __init__(self, parts: Mapping[str, Callable[[], list[int]]]) -> None:
        self._parts = parts
        self._begun: dict[str, float] = {}
        self.spent: dict[str, float] = dict.fromkeys(parts, 0.0)

    def _now(self) -> dict[str, float]:
        return {part: sum(process_cpu_s(pid) for pid in pids())
                for part, pids in self._parts.items()}

    def start(self) -> None:
        self._begun = self._now()

    def stop(self) -> None:
        for part, seconds in self._now().items():
            self.spent[part] += max(seconds - self._begun.get(part, 0.0), 0.0)
