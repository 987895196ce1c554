"""A tab's console: messages, exceptions and browser log entries."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, Field

from gateway.output.absent import absent
from gateway.tabs.console_flood import FLOOD_RATE

from .args import DEFAULT_LIMIT, LimitArg, SinceArg, TabArg
from .definition import TabCall, tab_tool

__all__ = ["TOOLS"]

Level = Literal["error", "warning", "info", "debug"]


class ConsoleMessage(BaseModel):
    id: int
    level: str
    text: str
    source: str
    url: str | None = absent()
    time: str
    navigation: int
    stack: str | None = absent()


class ConsoleMessages(BaseModel):
    tab: int
    target: str
    messages: list[ConsoleMessage]
    last_id: int
    navigation: int
    dropped: int = absent(0)
    note: str | None = absent()


@tab_tool("Read console messages", read_only=True, lock=False)
async def console_messages(
    on: TabCall,
    tab: TabArg,
    level: Annotated[Level | list[Level] | None,
                     Field(description="Only these levels.")] = None,
    since: SinceArg = None,
    limit: LimitArg = DEFAULT_LIMIT,
) -> ConsoleMessages:
    """A tab's console messages and uncaught errors (with stacks); poll with
    since=<last_id>."""
    levels: set[str] | None = (
        {level} if isinstance(level, str) else set(level) if level else None)
    log = on.tab.console
    entries = log.query(levels, since, limit)
    note = (f"{log.dropped} older messages were dropped (buffer of {log.capacity})"
            if log.dropped else None)
    if log.sampled:
        note = ((f"at least {note}; " if note else "")
                + f"the page logged over {FLOOD_RATE:,} messages a second, so the gateway "
                "sampled its console once a second and did not see every message")
    return ConsoleMessages(
        tab=on.tab.id, target=on.browser.name, last_id=log.last_id, navigation=log.navigation,
        dropped=log.dropped, note=note,
        messages=[ConsoleMessage(id=e.id, level=e.level, text=e.text, source=e.source,
                                 url=e.url, time=e.time, navigation=e.navigation,
                                 stack=e.stack) for e in entries])


TOOLS = (console_messages,)
