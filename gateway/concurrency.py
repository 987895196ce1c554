"""``gather``: run awaitables together in a task group and keep their results in order.

anyio has no gather; this is the structured version of ``asyncio.gather``: the
first failure cancels the rest and is raised *as itself*, and no task outlives
the call. A bare task group would wrap the failure in an ``ExceptionGroup``, and
a ``GatewayError`` (say, "tab 3 has an open alert dialog") would then reach the
client as an internal error instead of its own message.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import TypeVar

import anyio

__all__ = ["gather"]

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
