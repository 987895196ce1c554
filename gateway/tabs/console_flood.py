"""A tab flooding its console: its console events shed at the source, sampled, and its
dropped count then said to be a lower bound.

Measured with ``benchmarks/flood_phase.py`` (Chromium 156, two shared cores), a page
logging ~10,000 messages a second: every message crossed Chrome's browser process, sshd,
the SSH link and the gateway's event loop. A call on another tab of that browser took
37-39x its quiet time (12 → 454-470 ms); a raw CDP client on a websocket of its own,
outside the gateway, slowed from 1.6 to 12-31 ms on a quiet machine and from 3.3 to
355 ms on a loaded one. A websocket per busy tab could at best bring the gateway's call
down to that client's figure, and only where a second connection is allowed. With the
flooding tab's ``Runtime`` domain off (below), the same flood slowed the other tab's
call 1.6-2.2x and the raw client 3-5x, and the page logged at its full rate.

So when a tab's own session takes more than ``FLOOD_RATE`` console messages a second
(``FloodMeter``), ``FloodGuard`` clears what V8 keeps of its console
(``Runtime.discardConsoleEntries``) and turns its ``Runtime`` off (``Runtime.disable``);
every ``SAMPLE_S`` it turns it on again: V8 replays what it kept meanwhile — its newest
1,000 console messages and exceptions — before it answers, and those go into the console
like any other. Then clear and off again, unless the sample shows the flood is over
(under ``QUIET_RATE`` a second): ``Runtime`` stays on. A message logged between the
clear and the off comes live and is replayed too: while sampling, an event no newer
than the newest seen (its ``timestamp``) is that replay, and is not kept twice. What V8
pushed out of its own store is never seen, so the console's dropped count is from then
on a lower bound, and says so (``ConsoleLog.sampled``).

Only commands on the gateway's own session: no second connection (a hosted pool, a
WebDriver session or a person's browser, which asks for each one, would refuse or ask),
and other clients' sessions of the page keep their console events. What the clear
costs them: V8's stored history, which a client that enables ``Runtime`` later replays.
"""

from __future__ import annotations

import math
import time
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import structlog

from gateway.cdp.frames import FrameTaker
from gateway.errors import GatewayError
from gateway.tabs.console_log import ConsoleLog

__all__ = ["FLOOD_RATE", "QUIET_RATE", "REPLAYED", "SAMPLE_S", "FloodGuard", "FloodMeter",
           "timestamp"]

log = structlog.get_logger("gateway.target")

FLOOD_RATE = 2_000
"""Console messages a second from which a tab floods (a busy page logs tens)."""
QUIET_RATE = 500
"""Below this many a second in a sample, the flood is over (the gap: no flapping)."""
SAMPLE_S = 1.0
"""How often a flooding tab's console is sampled."""
WINDOW_S = 0.5
"""The meter's window: FLOOD_RATE * WINDOW_S messages within it are a flood."""

REPLAYED = frozenset({"Runtime.consoleAPICalled", "Runtime.exceptionThrown"})
"""What V8 keeps of a console and replays on ``Runtime.enable`` (their timestamps are
ms since the epoch; a page or network event's are seconds of another clock)."""

Send = Callable[[str], Awaitable[dict[str, Any]]]
"""A command without params on the tab's session."""


class FloodMeter:
    """Counts a session's console messages; ``count`` says when they come at more than
    ``rate`` a second. The clock is read once every ``rate * window_s`` messages, so a
    message costs an addition."""

    def __init__(self, rate: int = FLOOD_RATE, window_s: float = WINDOW_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._limit = max(1, int(rate * window_s))
        self._window_s = window_s
        self._clock = clock
        self._count = 0
        self._since = clock()

    def count(self) -> bool:
        """One message more; True when the last ``rate * window_s`` came within the window."""
        self._count += 1
        if self._count < self._limit:
            return False
        now = self._clock()
        flooding = now - self._since <= self._window_s
        self._count, self._since = 0, now
        return flooding


class FloodGuard:
    """One tab session's flood watch: meters the console frames its tab takes and, once
    they flood, sheds and samples them (``run``) until the flood is over or the session
    goes (``live`` false), in ``tasks``. One sampler at a time."""

    def __init__(self, console: ConsoleLog, send: Send, live: Callable[[], bool],
                 tasks: anyio.abc.TaskGroup, *,
                 meter: FloodMeter | None = None, sample_s: float = SAMPLE_S) -> None:
        self._console = console
        self._send = send
        self._live = live
        self._tasks = tasks
        self._meter = meter or FloodMeter()
        self._sample_s = sample_s
        self.shedding = False
        self._newest_ms = -math.inf  # the newest event's timestamp seen while shedding

    def watch(self, take: FrameTaker) -> FrameTaker:
        """``take``, with each console frame it takes counted."""

        def taken(method: str, frame: str) -> bool:
            if self.shedding and method in REPLAYED:
                when = timestamp(frame)
                if when is not None:
                    if when <= self._newest_ms:
                        return True  # seen live already: V8's replay of it
                    self._newest_ms = when
            if not take(method, frame):
                return False
            if self._meter.count() and not self.shedding:
                self.shedding = True
                self._tasks.start_soon(self.run)
            return True

        return taken

    async def run(self) -> None:
        """Shed and sample until the flood is over (``Runtime`` left on) or the session
        went. A command that fails on a live session (a dialog holds the page) is tried
        again at the next sample: ``Runtime`` must not stay off."""
        self.shedding = self._console.sampled = True
        log.info("console flood: sampling the tab's console", rate=FLOOD_RATE,
                 sample_s=self._sample_s)
        off = False
        try:
            while self._live():
                if not off:
                    off = await self._commands("Runtime.discardConsoleEntries",
                                               "Runtime.disable")
                await anyio.sleep(self._sample_s)
                before = self._console.seen
                if not await self._commands("Runtime.enable"):
                    continue  # still off: the replay comes at the next try
                off = False
                if self._console.seen - before < QUIET_RATE * self._sample_s:
                    return
        finally:
            self.shedding = False
            self._newest_ms = -math.inf

    async def _commands(self, *methods: str) -> bool:
        """Send ``methods`` in turn; False when one failed (logged)."""
        for method in methods:
            try:
                await self._send(method)
            except GatewayError as exc:
                log.debug("console flood command failed", method=method, error=str(exc))
                return False
        return True


_TIMESTAMP = '"timestamp":'


def timestamp(frame: str) -> float | None:
    """A console event's ``timestamp`` (ms), read off its frame's text; None without one.

    The last ``"timestamp":`` of the text is the event's own: inside a JSON string every
    quote is escaped, and nothing else in a console or exception event has that key."""
    at = frame.rfind(_TIMESTAMP)
    if at < 0:
        return None
    start = at + len(_TIMESTAMP)
    end = start
    while end < len(frame) and frame[end] not in ",}":
        end += 1
    try:
        return float(frame[start:end])
    except ValueError:
        return None
