"""Page views with refs, and acting on them: browse, browse_view, browse_act."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

from pydantic import BaseModel, Field

from gateway.output.sizing import DEFAULT_MAX_CHARS, fit
from gateway.page.actions import Action, StepResult, run_actions
from gateway.page.navigation import navigate_tab
from gateway.page.snapshot import fetch_snapshot
from gateway.page.view import ViewState, render_view

from .args import MaxChars, TabArg, TargetArg, TimeoutArg
from .tabs import UrlArg, WaitArg

if TYPE_CHECKING:
    from gateway.browsers.browser import Browser
    from gateway.browsers.registry import Registry
    from gateway.browsers.tab import Tab
    from gateway.server.app import ToolRegistrar

__all__ = ["register"]


class PageView(BaseModel):
    tab: int
    target: str
    url: str
    view: str
    refs: int
    truncated: bool = False


class ActResult(PageView):
    steps: list[StepResult]


async def _view(t: Browser, page: Tab, max_chars: int) -> PageView:
    """Snapshot every frame, render, and make the new refs the tab's current ones.

    Refs count on across views of a tab, so a ref from an older view can never
    name an element of the new one. Hold ``page.lock``.
    """
    snapshot, loader_id = await fetch_snapshot(t, page)
    rendered = render_view(snapshot, first_ref=page.next_ref)
    page.next_ref += len(rendered.refs)
    if page.loader_id is None:
        page.loader_id = loader_id
    page.view = ViewState(rendered.refs, loader_id, {f.frame_id: f for f in snapshot.frames})
    fitted = fit(rendered.text, max_chars)
    return PageView(tab=page.id, target=t.name, url=snapshot.url, view=fitted.value,
                    refs=len(rendered.refs), truncated=fitted.truncated)


def register(mcp: ToolRegistrar, gateway: Registry) -> None:
    @mcp.tool()
    async def browse(
        url: UrlArg,
        tab: Annotated[int | None, Field(description="Tab to load the URL in; omit for a new "
                                                     "tab.", ge=1)] = None,
        target: TargetArg = None,
        wait: WaitArg = "load",
        timeout_s: TimeoutArg = None,
        max_chars: MaxChars = DEFAULT_MAX_CHARS,
    ) -> PageView:
        """Open a URL and return the page as text: headings, text, links with their
        targets, and every control numbered (`role#N "name"`).

        Act on the numbers with browse_act. This is the cheap way to read a page;
        use screenshot only when the layout itself matters.
        """
        t, page, url = await gateway.tab_for_url(tab, target, url)
        async with page.lock:
            await navigate_tab(t, page, url, wait, timeout_s or t.config.command_timeout_s)
            return await _view(t, page, max_chars)

    @mcp.tool(read_only=True)
    async def browse_view(tab: TabArg, target: TargetArg = None,
                          max_chars: MaxChars = DEFAULT_MAX_CHARS) -> PageView:
        """The current page of a tab as text with numbered refs (see browse).

        Every call issues new ref numbers; refs of earlier views stop working.
        """
        t, page = await gateway.tab(tab, target)
        async with page.lock:
            return await _view(t, page, max_chars)

    @mcp.tool()
    async def browse_act(
        tab: TabArg,
        actions: Annotated[list[Action], Field(
            description="Steps to run in order, e.g. [{\"do\": \"type\", \"ref\": 12, "
                        "\"text\": \"hello\", \"submit\": true}]. Actions: click (ref, "
                        "button?, count?), type (ref, text, clear?, submit?), press (key: "
                        "Enter / Control+A / Shift+Tab), select (ref, value or label), "
                        "check / uncheck (ref), hover (ref), scroll (ref, or to: top|bottom, "
                        "or by: pixels), wait_for (text / text_gone / ref_gone / url, "
                        "timeout).", min_length=1, max_length=50)],
        target: TargetArg = None,
        timeout_s: TimeoutArg = None,
        max_chars: MaxChars = DEFAULT_MAX_CHARS,
    ) -> ActResult:
        """Act on refs from the current view with real mouse and keyboard input, then
        return a fresh view.

        Stops at the first step that fails (element hidden, disabled, covered, or a
        stale ref) and says why. Refs are valid only for the latest view of the tab.
        """
        t, page = await gateway.tab(tab, target)
        budget = timeout_s or t.config.command_timeout_s
        async with page.lock:
            steps = await run_actions(t, page, list(actions), budget)
            view = await _view(t, page, max_chars)
        return ActResult(**view.model_dump(), steps=steps)
