"""Give a tab to a person and take it back: ``handoff``.

For what an agent cannot do itself — a captcha, a second factor, a sign-in only the
user knows. The person gets the live page with control (``gateway.live``); while they
hold the tab, the agent's tools that would change it are refused at once (``tab_tool``,
enforced by ``gateway.mcp.calls``), so the agent cannot click under the person's
hand; a call that already runs on the tab is let finish before the URL is given (one
queued behind it is refused when its turn comes). The hold ends when the person presses
Done, after ``timeout_s``, or when the tab closes; ``wait: true`` waits for that,
with progress (the first report carries the URL, for a client that shows progress to
its user). The call log has a line for each hold and its end (``Live.hold``).
"""

from __future__ import annotations

import time
from typing import Annotated, Literal

import anyio
from pydantic import BaseModel, Field

from gateway.errors import GatewayError, NotAllowed, TabHeld
from gateway.output.absent import absent
from gateway.progress import report

from .args import TabArg, TimeoutArg
from .definition import TabCall, tab_tool

__all__ = ["DEFAULT_HOLD_S", "TOOLS"]

DEFAULT_HOLD_S = 300.0
"""How long a person holds a tab when the agent names no ``timeout_s``: five minutes."""
REPORT_EVERY_S = 1.0
ENDING_S = 0.5


State = Literal["held", "done", "expired", "closed"]
ENDED: dict[str, State] = {"expired": "expired", "tab closed": "closed"}
"""A hold's end (``Hold.ended``) as the result's state; any other is "done"."""


class Handoff(BaseModel):
    tab: int
    url: str | None = absent()
    state: State
    left_s: float | None = absent()
    busy: str | None = absent()
    # A headed browser: the tab was brought to the front of its window, where a person
    # at that machine already is (the live page is there for one elsewhere).
    in_front: bool = absent(False)


@tab_tool("Hand a tab to a person", lock=False, while_held=True)
async def handoff(
    on: TabCall, tab: TabArg,
    reason: Annotated[str, Field(min_length=1, max_length=200,
                                 description="What they should do.")],
    wait: bool = False, timeout_s: TimeoutArg = None,
) -> Handoff:
    """Let the user act in a tab (captcha, sign-in, 2FA): gives a URL for them.
    Changes to the tab are refused till they press Done or timeout_s (300) passes;
    wait: true waits."""
    if on.gateway.live is None:
        raise NotAllowed("this gateway was built without a live page")
    if on.gateway.registry.config.read_only:
        raise NotAllowed("handoff gives a person control of a tab, which a read-only "
                         "gateway does not; restart it without --read-only")
    hold, url = await on.gateway.live.handoff(on.tab, reason, timeout_s or DEFAULT_HOLD_S)
    in_front = await _to_front(on)
    busy = None
    with anyio.move_on_after(on.budget) as waited:  # a call running on the tab ends
        async with on.tab.lock:
            pass
    if waited.cancelled_caught:
        busy = (f"a call on tab {on.tab.id} was still running after {on.budget:g} s; "
                "it may act while the person does")
    if wait:
        start = time.monotonic()
        # The hold's own end is written by its task a moment after ``until``.
        bound = min(hold.until - start + ENDING_S, timeout_s or DEFAULT_HOLD_S)
        with anyio.move_on_after(bound):
            waiting = f"waiting for a person on tab {on.tab.id} {TabHeld.asked(reason)}"
            message = f"{waiting}: open {url}"
            while not hold.released.is_set():
                await report(time.monotonic() - start, bound, message)
                message = waiting
                with anyio.move_on_after(REPORT_EVERY_S):
                    await hold.released.wait()
    if hold.ended is None:
        left = max(hold.until - time.monotonic(), 0)
        return Handoff(tab=on.tab.id, url=url, state="held", left_s=round(left, 1),
                       busy=busy, in_front=in_front)
    return Handoff(tab=on.tab.id, state=ENDED.get(hold.ended or "", "done"), busy=busy,
                   in_front=in_front)


async def _to_front(on: TabCall) -> bool:
    """Bring the tab to the front of its window when the browser has windows (it is not
    headless): a person at that machine sees it at once. Best effort — the live page is
    the way in either way."""
    if on.browser.headless:
        return False
    try:
        await on.browser_call("Target.activateTarget", {"targetId": on.tab.target_id},
                              timeout_s=min(on.budget, 5.0))
    except GatewayError:
        return False
    return True


TOOLS = (handoff,)
