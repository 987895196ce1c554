"""What anyio leaves out of asyncio, in anyio's terms: ``gather``, ``alongside`` and
``OneShot``.

``gather`` is the structured version of ``asyncio.gather``: the first failure
cancels the rest and is raised *as itself*, and no task outlives the call. A bare
task group would wrap the failure in an ``ExceptionGroup``, and a ``GatewayError``
(say, "tab 3 has an open alert dialog") would then reach the client as an internal
error instead of its own message.

``OneShot`` is what an asyncio future was used for — a CDP reply, a tab's next
event: a value (or an error) set once by a callback, awaited by a task. Awaiting a
cancelled asyncio future raises ``CancelledError``, the very exception of the
waiter's *own* cancellation, so "the tab went away" and "the call was cancelled"
looked alike and a wait had to take care not to swallow the second. A ``OneShot``
that will get no value is ``dropped``, a state the waiter reads; ``wait`` raises
nothing but the waiter's own cancellation, and its timeout is a plain ``False``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, Generic, TypeVar

import anyio

__all__ = ["OneShot", "alongside", "first", "gather"]

T = TypeVar("T")


async def gather(*awaitables: Awaitable[T]) -> list[T]:
    results: list[T | None] = [None] * len(awaitables)
    failures: list[Exception] = []

    async with anyio.create_task_group() as tg:
        async def run(index: int, awaitable: Awaitable[T]) -> None:
            try:
                results[index] = await awaitable
            except Exception as exc:  # kept to be raised bare; cancellation passes
                failures.append(exc)
                tg.cancel_scope.cancel()

        for index, awaitable in enumerate(awaitables):
            tg.start_soon(run, index, awaitable)
    if failures:
        raise failures[0]
    return results  # type: ignore[return-value]


class OneShot(Generic[T]):
    """A value or an error that arrives once (the first ``set``/``fail``/``drop`` wins).

    ``on_done`` is called once when it ends, however it ends (a tab forgets its waiter).
    """

    __slots__ = ("_arrived", "_error", "_on_done", "_value", "dropped")

    def __init__(self, on_done: Callable[[], None] | None = None) -> None:
        self._arrived = anyio.Event()
        self._on_done = on_done
        self._value: T | None = None
        self._error: BaseException | None = None
        self.dropped = False  # ended without a value: nobody will set it (a tab gone)

    @property
    def done(self) -> bool:
        return self._arrived.is_set()

    def set(self, value: T) -> None:
        if not self.done:
            self._value = value
            self._end()

    def fail(self, error: BaseException) -> None:
        """``result()`` raises ``error``."""
        if not self.done:
            self._error = error
            self._end()

    def drop(self) -> None:
        """No value will come (or nobody wants it any more)."""
        if not self.done:
            self.dropped = True
            self._end()

    def _end(self) -> None:
        self._arrived.set()
        if self._on_done is not None:
            self._on_done()

    @property
    def arrived(self) -> bool:
        """Ended with a value or an error (not dropped, not pending)."""
        return self.done and not self.dropped

    def result(self) -> T:
        """The value, or the error it ended with raised; only once ``arrived``."""
        if self._error is not None:
            raise self._error
        if not self.arrived:
            raise RuntimeError("OneShot.result() before a value arrived")
        return self._value  # type: ignore[return-value]

    async def wait(self, timeout_s: float) -> bool:
        """Whether it ended (``arrived`` or ``dropped``) within ``timeout_s``."""
        if not self.done:
            with anyio.move_on_after(timeout_s):
                await self._arrived.wait()
        return self.done


async def first(shots: tuple[OneShot[T], ...], timeout_s: float) -> bool:
    """Whether one of ``shots`` ended within ``timeout_s`` (waits on several)."""
    if len(shots) == 1:
        return await shots[0].wait(timeout_s)
    if not any(shot.done for shot in shots):
        async with anyio.create_task_group() as tg:
            async def wait(shot: OneShot[T]) -> None:
                if await shot.wait(timeout_s):
                    tg.cancel_scope.cancel()

            for shot in shots:
                tg.start_soon(wait, shot)
    return any(shot.done for shot in shots)


async def alongside(companion: Callable[[], Coroutine[Any, Any, None]],
                    work: Callable[[], Awaitable[Any]]) -> None:
    """Await ``work()`` with ``companion()`` running beside it until it ends (a progress
    reporter, a responder to events); a failure of ``work`` is raised as itself, as in
    ``gather``. The companion is cancelled when ``work`` ends; it should not fail."""
    failure: Exception | None = None
    async with anyio.create_task_group() as tg:
        tg.start_soon(companion)
        try:
            await work()
        except Exception as exc:
            failure = exc
        finally:
            tg.cancel_scope.cancel()
    if failure is not None:
        raise failure
