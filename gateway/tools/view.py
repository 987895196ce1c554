"""Page views with refs, and acting on them: browse, browse_view, browse_act."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import gc
from collections.abc import Iterator
from typing import TYPE_CHECKING, Annotated

from pydantic import BaseModel, Field

from gateway.browsers.session import TabSession
from gateway.output.absent import absent
from gateway.output.files import resolve_read_path
from gateway.output.sizing import DEFAULT_MAX_CHARS, fit
from gateway.page.actions import Action, StepResult, run_actions
from gateway.page.element import TabInput
from gateway.page.navigation import navigate_tab
from gateway.page.snapshot import fetch_snapshot
from gateway.page.view import (
    ViewState,
    first_ref,
    line_matcher,
    narrow_view,
    remember_view,
    render_view,
    scopes_of,
)

from .args import MaxChars, OptionalTab, TabArg, TargetArg, TimeoutArg, UrlArg
from .definition import TabCall, tab_tool
from .saving import allowed_dirs
from .tabs import WaitArg

if TYPE_CHECKING:
    pass

__all__ = ["TOOLS"]


class PageView(BaseModel):
    tab: int
    target: str
    url: str
    view: str
    refs: int
    truncated: bool = absent(False)
    narrowed: str | None = absent()  # what find / within left of the view

    def header(self) -> str:
        """Which tab, and how many refs; the URL is the view's own first line."""
        cut = " (view truncated: raise max_chars)" if self.truncated else ""
        narrowed = f"; {self.narrowed}" if self.narrowed else ""
        return f"tab {self.tab} on {self.target} ({self.refs} refs{narrowed}){cut}"

    def as_text(self) -> str:
        """The view as plain text after a one-line header (``ReadsAsText``)."""
        return f"{self.header()}\n{self.view}"


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
        return (f"step {ran} of {max(self.asked, ran)} ({failed.do}) failed: {failed.error}"
                f"{after}. The page as it is now follows, with fresh refs")

    def as_text(self) -> str:
        """The header, one line for the steps (why the failing one failed), the view."""
        steps = "; ".join(step.do if step.ok else f"{step.do} failed: {step.error}"
                          for step in self.steps)
        return f"{self.header()}\nsteps: {steps}\n{self.view}"


async def _view(on: TabSession, max_chars: int, find: str | None = None,
                within: int | None = None) -> PageView:
    """Snapshot every frame, render, and make the new refs the tab's current ones.

    Refs count on across views of a tab, so a ref from an older view can never
    name an element of the new one. Hold ``tab.lock``. ``find`` / ``within`` narrow
    what is shown, not what is remembered: the refs kept are the whole view's.
    """
    tab = on.tab
    element = TabInput(on).ref(within)[1] if within is not None else None
    if find is not None:
        line_matcher(find)  # a bad regex is refused before any browser work
    with _collector_paused():
        snapshot, loader_id = await fetch_snapshot(on)
        first = first_ref(tab)
        rendered = render_view(snapshot, first_ref=first,
                               within=scopes_of(snapshot, element) if element is not None else ())
        # Refs need only where each frame hangs, not its tree: a news page's AX nodes
        # are ~4 MB of objects a tab would otherwise hold until its next view.
        frames = {f.frame_id: dataclasses.replace(f, nodes=(), attributes={})
                  for f in snapshot.frames}
        url = snapshot.url
        del snapshot  # the tree is freed here, before the collector is back on
    if tab.loader_id is None:
        tab.loader_id = loader_id
    remember_view(tab, ViewState(rendered.refs, loader_id, frames,
                                 next_ref=first + len(rendered.refs)))
    text, narrowed = narrow_view(rendered, find, within)
    fitted = fit(text, max_chars)
    return PageView(tab=tab.id, target=on.browser.name, url=url, view=fitted.value,
                    refs=len(rendered.refs), truncated=fitted.truncated, narrowed=narrowed)


_views_pausing = 0


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """The cyclic garbage collector held off while a view is fetched and rendered.

    A view parses ~15,000 containers of AX tree (a news page's ~600 kB of JSON) and
    drops them all when it is done; none is part of a cycle. Collected while they
    were made and read, they were scanned two or three times over (~2 ms of a view on
    a quiet machine); held off, their reference counts free them before any collection
    sees them. Views at once share one pause, and the collector comes back on when the
    last one ends; a collector someone else turned off (the start) is left to them.
    """
    global _views_pausing
    if _views_pausing == 0 and not gc.isenabled():
        yield
        return
    _views_pausing += 1
    gc.disable()
    try:
        yield
    finally:
        _views_pausing -= 1
        if _views_pausing == 0:
            gc.enable()


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
    return await _view(on, max_chars)

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
    """Read a tab again as text with fresh refs (as browse)."""
    return await _view(on, max_chars, find, within)

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
    the latest view's refs, then a fresh view.
    """
    uploads = any(getattr(a, "do", None) == "upload" for a in actions)
    readable = functools.partial(
        resolve_read_path, allowed=await allowed_dirs(on.gateway) if uploads else [],
        allow_any=on.gateway.registry.config.allow_any_path)
    steps = await run_actions(on, list(actions), on.budget, readable)
    view = await _view(on, max_chars)
    return ActResult(**view.model_dump(), steps=steps, asked=len(actions))


TOOLS = (browse, browse_view, browse_act)
