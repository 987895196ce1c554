"""``gather``: run awaitables together in a task group and keep their results in order.

anyio has no gather; this is the structured version of ``asyncio.gather``: the
first failure cancels the rest and is raised, and no task outlives the call.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import TypeVar

import anyio

__all__ = ["gather"]

T = TypeVar("T")


async def gather(*awaitables: Awaitable[T]) -> list[T]:
    results: list[T | None] = [None] * len(awaitables)

    async def run(index: int, awaitable: Awaitable[T]) -> None:
        results[index] = await awaitable

    async with anyio.create_task_group() as tg:
        for index, awaitable in enumerate(awaitables):
            tg.start_soon(run, index, awaitable)
    return results  # type: ignore[return-value]
