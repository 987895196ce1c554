"""Page views with refs, and acting on them: browse, browse_view, browse_act."""

from __future__ import annotations

import functools
from typing import Annotated

from pydantic import Field

from gateway.output.files import resolve_read_path
from gateway.output.sizing import DEFAULT_MAX_CHARS
from gateway.page.act.actions import Action, StepResult, run_actions
from gateway.page.navigation import navigate_tab
from gateway.page.view.take import PageView, take

from .args import MaxChars, OptionalTab, TabArg, TargetArg, TimeoutArg, UrlArg
from .definition import TabCall, tab_tool
from .saving import allowed_dirs
from .tabs import WaitArg

__all__ = ["TOOLS"]


class ActResult(PageView):
    steps: list[StepResult]
    asked: int = Field(default=0, exclude=True)  # the steps in the batch, ran or not

    def shortfall(self) -> str | None:
        """The step that failed, if one did, and how many it kept from running
        (``FallsShort``): the batch stopped there, the view is the page as it is now."""
        failed = next((step for step in self.steps if not step.ok), None)
        if failed is None:
            return None
        ran, left = len(self.steps), self.asked - len(self.steps)
        after = f"; the {left} after it did not run" if left > 0 else ""
        now = ("What changed on the page since the last view follows" if self.changes
               else "The page as it is now follows, with fresh refs")
        return (f"step {ran} of {max(self.asked, ran)} ({failed.do}) failed: {failed.error}"
                f"{after}. {now}")

    def as_text(self) -> str:
        """The header, one line for the steps (why the failing one failed), the view."""
        steps = "; ".join(step.do if step.ok else f"{step.do} failed: {step.error}"
                          for step in self.steps)
        return "\n".join(filter(None, (self.header(), f"steps: {steps}", self.view)))


@tab_tool("Open a page as text", open_world=True, tab="for_url")
async def browse(
    on: TabCall,
    url: UrlArg,
    tab: OptionalTab = None,
    target: TargetArg = None,
    wait: WaitArg = "load",
    timeout_s: TimeoutArg = None,
    max_chars: MaxChars = DEFAULT_MAX_CHARS,
) -> PageView:
    """Open a URL (in `tab` or a new tab) as text, controls numbered #N for
    browse_act; cheaper than screenshots.
    """
    await navigate_tab(on, url, wait)
    return await take(on, max_chars, holder=on.gateway.client)


@tab_tool("View a page as text", read_only=True)
async def browse_view(
    on: TabCall,
    tab: TabArg,
    max_chars: MaxChars = DEFAULT_MAX_CHARS,
    find: Annotated[str | None, Field(
        description="Only lines matching text or /regex/.", max_length=200)] = None,
    within: Annotated[int | None, Field(
        description="Only the part holding this ref.", ge=1)] = None,
) -> PageView:
    """Read a tab again as text with refs (as browse)."""
    return await take(on, max_chars, find, within, holder=on.gateway.client)


@tab_tool("Act on a page", destructive=True, open_world=True)
async def browse_act(
    on: TabCall,
    tab: TabArg,
    actions: Annotated[list[Action], Field(
        description="In order; ref: #N of the latest view.",
        min_length=1, max_length=50)],
    timeout_s: TimeoutArg = None,
    max_chars: MaxChars = DEFAULT_MAX_CHARS,
) -> ActResult:
    """Click, type, press, select, hover, scroll, drag, upload, wait: real input on
    the latest view's refs, then what changed.
    """
    uploads = any(getattr(a, "do", None) == "upload" for a in actions)
    readable = functools.partial(
        resolve_read_path, allowed=await allowed_dirs(on.gateway) if uploads else [],
        allow_any=on.gateway.registry.config.allow_any_path)
    steps = await run_actions(on, list(actions), on.budget, readable)
    view = await take(on, max_chars, changes=True, holder=on.gateway.client)
    return ActResult(**view.model_dump(), steps=steps, asked=len(actions))


TOOLS = (browse, browse_view, browse_act)
