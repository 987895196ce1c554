"""Progress of the current call, for a client that asked to hear it.

A long call (a trace's seconds, a heap snapshot's bytes, an upload's bytes, a wait)
says how far it is with ``await report(done, total, message)`` wherever the work
happens, in any layer. The server binds a sender for each call (``reporting``);
with none bound — a call the client gave no ``progressToken``, an in-process call,
a unit test — ``report`` does nothing. Clients show progress (Claude Code, VS Code)
and may treat it as a sign the call is alive, so it is sent a few times a second
at most, always the last step, and never holds the work up: a client that does not
read its notifications costs a call at most ``SEND_TIMEOUT_S`` per report, and a
failed send is dropped.

The protocol wants a call's progress to grow, but one call may go through steps of
their own units (a batch's upload in bytes, then a wait in seconds): a step that
counts from zero again calls ``new_phase()`` first, and its counts (and total) go on
from the last value sent, so it is heard; the message says what is counted. A count
that just goes on in another unit (a snapshot's objects, then its bytes) needs none.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

import anyio
import structlog

__all__ = ["MIN_INTERVAL_S", "Sender", "new_phase", "report", "reporting"]

log = structlog.get_logger("gateway.progress")

Sender = Callable[[float, float | None, str | None], Awaitable[None]]
"""Sends one progress notification: (progress, total, message)."""

MIN_INTERVAL_S = 0.25
"""At most four notifications a second: enough to see a call move."""
SEND_TIMEOUT_S = 1.0


@dataclass
class _Call:
    send: Sender
    last_sent: float = float("-inf")  # when (monotonic)
    base: float = 0.0  # what the phases before this one count for
    last_value: float = float("-inf")  # what was last sent


_current: ContextVar[_Call | None] = ContextVar("gateway_progress", default=None)


@contextmanager
def reporting(send: Sender) -> Iterator[None]:
    """Within this block (the current task and those it starts), ``report`` uses ``send``."""
    token = _current.set(_Call(send))
    try:
        yield
    finally:
        _current.reset(token)


def new_phase() -> None:
    """The current call starts counting from zero again (another step of a batch): its
    next reports go on from the last value sent."""
    call = _current.get()
    if call is not None:
        call.base = max(call.last_value, 0.0)


async def report(done: float, total: float | None = None, message: str | None = None, *,
                 final: bool = False) -> None:
    """Say how far the current call is; dropped when too soon after the last report
    (unless ``final``) or when ``done`` did not grow."""
    call = _current.get()
    if call is None:
        return
    value = call.base + done
    now = time.monotonic()
    if value <= call.last_value or (not final and now - call.last_sent < MIN_INTERVAL_S):
        return
    call.last_sent, call.last_value = now, value
    try:
        with anyio.move_on_after(SEND_TIMEOUT_S):
            await call.send(value, None if total is None else call.base + total, message)
    except Exception as exc:  # a notification is advisory: the work goes on
        log.debug("progress not sent", error=str(exc))
