"""Acting on refs from a page view with real input: click, type, press, select, …

Every action goes through the same steps: the ref must belong to the tab's
current view and document (else ``StaleRef``), the element is resolved in the
session that owns its frame (object ids are per session), scrolled into view
and checked for being attached, visible, enabled and not covered at its click
point (a hit test in its own frame, through open shadow roots). Only then are
real CDP input events sent on the page's session at the element's position in
top-level coordinates — through same-origin frames by the page's own geometry,
through cross-site frames by each ``<iframe>`` owner's box in its parent.

After an action the page is given a short, bounded chance to settle: if the
action started a navigation, the load is awaited.
"""

from __future__ import annotations

import asyncio
import time
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field

from gateway.browsers.browser import Browser
from gateway.browsers.tab import Tab
from gateway.errors import ActionFailed, CdpError, GatewayError, StaleRef
from gateway.page.js import call, script
from gateway.page.keys import chord_events, parse_chord
from gateway.page.view import RefTarget, ViewState, current_view

__all__ = ["Action", "StepResult", "element_box", "run_actions"]

Ref = Annotated[int, Field(description="A ref (#N) from the current view.", ge=1)]
SETTLE_START_S = 0.15   # how long an action gets to start a navigation
SETTLE_LOAD_S = 10.0    # how long a navigation it started gets to load
QUIET_S = 0.1           # network-quiet window after an action…
QUIET_MAX_S = 1.0       # …waited for at most this long (pages that poll never go quiet)
CHECK_SETTLE_S = 1.0    # how long a check/uncheck click gets to change the state

_PREPARE_JS = script("prepare.js")
_FRAME_POINT_JS = script("frame_point.js")
_STATE_JS = script("state.js")
_FOCUS_JS = script("focus.js")
_SELECT_JS = script("select.js")
_GONE_JS = script("gone.js")


class Click(BaseModel):
    do: Literal["click"]
    ref: Ref
    button: Literal["left", "right", "middle"] = "left"
    count: Annotated[int, Field(ge=1, le=3)] = 1


class Type(BaseModel):
    do: Literal["type"]
    ref: Ref
    text: Annotated[str, Field(max_length=1_000_000)]
    clear: bool = False
    submit: bool = False


class Press(BaseModel):
    do: Literal["press"]
    key: Annotated[str, Field(description="A key or chord: Enter, Tab, Control+A, Shift+Tab.",
                              max_length=64)]


class Select(BaseModel):
    do: Literal["select"]
    ref: Ref
    value: str | None = None
    label: str | None = None


class Check(BaseModel):
    do: Literal["check", "uncheck"]
    ref: Ref


class Hover(BaseModel):
    do: Literal["hover"]
    ref: Ref


class Scroll(BaseModel):
    do: Literal["scroll"]
    ref: Ref | None = None
    to: Literal["top", "bottom"] | None = None
    by: Annotated[int | None, Field(description="Pixels down (negative: up).", ge=-100_000,
                                    le=100_000)] = None


class WaitFor(BaseModel):
    do: Literal["wait_for"]
    text: str | None = None
    text_gone: str | None = None
    ref_gone: Ref | None = None
    url: str | None = None
    timeout: Annotated[float, Field(gt=0, le=120)] = 10.0


Action = Annotated[Click | Type | Press | Select | Check | Hover | Scroll | WaitFor,
                   Field(discriminator="do")]


class StepResult(BaseModel):
    do: str
    ok: bool
    error: str | None = None


class _Page:
    """One batch's view of the tab: the state refs are checked against, and input."""

    def __init__(self, target: Browser, tab: Tab) -> None:
        self.target = target
        self.tab = tab

    async def call(self, method: str, params: dict[str, Any] | None = None,
                   session: str | None = None) -> dict[str, Any]:
        return await self.target.tab_call(self.tab, method, params, session=session)

    def ref(self, ref: int) -> tuple[ViewState, RefTarget]:
        view = current_view(self.tab)
        if view is None:
            raise StaleRef(f"ref #{ref}: this tab has no view yet; call browse_view first")
        if view.loader_id != (self.tab.loader_id or view.loader_id):
            raise StaleRef(f"ref #{ref} is stale: the page navigated since the view was "
                           "taken; call browse_view for fresh refs")
        found = view.refs.get(ref)
        if found is None:
            raise StaleRef(f"ref #{ref} is not in the current view (refs of older views are "
                           "not valid); call browse_view for fresh refs")
        return view, found

    async def resolve(self, target: RefTarget) -> str:
        try:
            result = await self.call("DOM.resolveNode", {"backendNodeId": target.backend_node_id},
                                     target.session)
        except CdpError:
            raise StaleRef(f'{target.role} "{target.name}" is no longer in the page; call '
                           "browse_view for fresh refs") from None
        return str(result["object"]["objectId"])

    async def on(self, target: RefTarget, function: str, *args: Any) -> Any:
        """Call ``function`` with ``this`` = the element, in the element's own session."""
        object_id = await self.resolve(target)
        try:
            result = await self.call("Runtime.callFunctionOn", {
                "objectId": object_id, "functionDeclaration": function, "returnByValue": True,
                "awaitPromise": True, "arguments": [{"value": a} for a in args]},
                target.session)
        finally:
            cdp = await self.target.connection()
            await cdp.notify("Runtime.releaseObject", {"objectId": object_id},
                             session_id=target.session)
        if "exceptionDetails" in result:
            raise ActionFailed(f"{target.role} \"{target.name}\": "
                               f"{result['exceptionDetails'].get('text', 'script error')}")
        return result.get("result", {}).get("value")

    async def locate(self, ref: int, hit_test: bool = True) -> tuple[float, float, float, float]:
        """The element's centre in top-level coordinates and its size, after the checks."""
        view, target = self.ref(ref)
        where = await self.on(target, _PREPARE_JS, hit_test)
        if "error" in where:
            raise ActionFailed(f'{target.role} #{ref} "{target.name}" {where["error"]}')
        x, y = float(where["x"]), float(where["y"])
        frame = view.frames.get(target.frame_id)
        # Climb out of cross-site frames through each one's <iframe> in its parent.
        while frame is not None and frame.parent_frame_id is not None:
            parent = view.frames.get(frame.parent_frame_id)
            if parent is None or parent.session == frame.session:
                frame = parent
                continue
            owner = RefTarget(parent.frame_id, parent.session, frame.owner_backend_node_id or 0,
                              "iframe", frame.url)
            up = await self.on(owner, _FRAME_POINT_JS, x, y, hit_test)
            if "error" in up:
                raise ActionFailed(f'{target.role} #{ref} "{target.name}" {up["error"]}')
            x, y = float(up["x"]), float(up["y"])
            frame = parent
        return x, y, float(where["width"]), float(where["height"])

    async def point(self, ref: int, hit_test: bool = True) -> tuple[float, float]:
        x, y, _, _ = await self.locate(ref, hit_test)
        return x, y

    async def mouse(self, kind: str, x: float, y: float, **extra: Any) -> None:
        await self.call("Input.dispatchMouseEvent", {"type": kind, "x": x, "y": y, **extra})

    async def click(self, ref: int, button: str = "left", count: int = 1) -> None:
        x, y = await self.point(ref)
        await self.mouse("mouseMoved", x, y)
        for n in range(1, count + 1):
            await self.mouse("mousePressed", x, y, button=button, clickCount=n)
            await self.mouse("mouseReleased", x, y, button=button, clickCount=n)

    async def press(self, chord: str) -> None:
        bits, key = parse_chord(chord)
        for event in chord_events(bits, key):
            await self.call("Input.dispatchKeyEvent", event)

    async def settle(self, started: asyncio.Future[Any], loaded: asyncio.Future[Any],
                     budget_s: float) -> None:
        """If the action started a navigation, wait (bounded) for the new page to load;
        then for a short network-quiet window (no new request for ``QUIET_S``)."""
        try:
            async with asyncio.timeout(SETTLE_START_S):
                await asyncio.shield(started)
            async with asyncio.timeout(min(budget_s, SETTLE_LOAD_S)):
                await asyncio.shield(loaded)
        except (TimeoutError, asyncio.CancelledError):
            pass  # nothing started, or still loading: the view shows what is there
        deadline = time.monotonic() + QUIET_MAX_S
        seen = self.tab.network.last_id
        while time.monotonic() < deadline:
            await asyncio.sleep(QUIET_S)
            if self.tab.network.last_id == seen:
                return
            seen = self.tab.network.last_id


async def _run_one(page: _Page, action: BaseModel) -> None:
    if isinstance(action, Click):
        await page.click(action.ref, action.button, action.count)
    elif isinstance(action, Type):
        _, target = page.ref(action.ref)
        await page.point(action.ref, hit_test=False)
        state = await page.on(target, _STATE_JS)
        if state.get("readOnly"):
            raise ActionFailed(f'{target.role} #{action.ref} "{target.name}" is read-only')
        if not await page.on(target, _FOCUS_JS, action.clear):
            await page.click(action.ref)
        if action.text:
            await page.call("Input.insertText", {"text": action.text})
        elif action.clear:
            await page.press("Delete")
        if action.submit:
            await page.press("Enter")
    elif isinstance(action, Press):
        await page.press(action.key)
    elif isinstance(action, Select):
        if (action.value is None) == (action.label is None):
            raise ActionFailed("select needs exactly one of value or label")
        _, target = page.ref(action.ref)
        await page.point(action.ref, hit_test=False)
        done = await page.on(target, _SELECT_JS, action.value, action.label)
        if "error" in done:
            raise ActionFailed(f'{target.role} #{action.ref} "{target.name}" {done["error"]}')
    elif isinstance(action, Check):
        _, target = page.ref(action.ref)
        want = action.do == "check"
        if (await page.on(target, _STATE_JS))["checked"] != want:
            await page.click(action.ref)
            # A click routed into a cross-site frame lands asynchronously: on a busy
            # machine the state may change a moment after the input call returned.
            deadline = time.monotonic() + CHECK_SETTLE_S
            while (await page.on(target, _STATE_JS))["checked"] != want:
                if time.monotonic() > deadline:
                    raise ActionFailed(f'{target.role} #{action.ref} "{target.name}": '
                                       f"clicking did not {action.do} it")
                await asyncio.sleep(0.05)
    elif isinstance(action, Hover):
        x, y = await page.point(action.ref)
        await page.mouse("mouseMoved", x, y)
    elif isinstance(action, Scroll):
        await _scroll(page, action)
    elif isinstance(action, WaitFor):
        await _wait_for(page, action)


async def _scroll(page: _Page, action: Scroll) -> None:
    chosen = [x is not None for x in (action.ref, action.to, action.by)]
    if sum(chosen) != 1:
        raise ActionFailed("scroll needs exactly one of ref, to or by")
    if action.ref is not None:
        await page.point(action.ref, hit_test=False)
    elif action.to is not None:
        await page.call("Runtime.evaluate", {"expression": call("scroll_to.js", action.to)})
    else:
        metrics = await page.call("Page.getLayoutMetrics")
        view = metrics["cssLayoutViewport"]
        await page.mouse("mouseWheel", view["clientWidth"] / 2, view["clientHeight"] / 2,
                         deltaX=0, deltaY=action.by)


async def _page_has_text(page: _Page, wanted: str) -> bool:
    """Whether any frame of the tab — the ones the view shows — contains ``wanted``."""
    expression = call("has_text.js", wanted)
    for session in (page.tab.session_id, *page.tab.frame_sessions.values()):
        found = await page.call("Runtime.evaluate", {"expression": expression,
                                                     "returnByValue": True}, session)
        if found.get("result", {}).get("value"):
            return True
    return False


async def _wait_for(page: _Page, action: WaitFor) -> None:
    chosen = [x is not None for x in (action.text, action.text_gone, action.ref_gone, action.url)]
    if sum(chosen) != 1:
        raise ActionFailed("wait_for needs exactly one of text, text_gone, ref_gone or url")
    target = page.ref(action.ref_gone)[1] if action.ref_gone is not None else None
    deadline = time.monotonic() + action.timeout
    while True:
        if action.url is not None:
            done = action.url in page.tab.url
        elif target is not None:
            try:
                done = bool(await page.on(target, _GONE_JS))
            except StaleRef:
                done = True
        else:
            wanted = action.text if action.text is not None else action.text_gone
            present = await _page_has_text(page, str(wanted))
            done = present if action.text is not None else not present
        if done:
            return
        if time.monotonic() >= deadline:
            what = (f"text {action.text!r} to appear" if action.text is not None else
                    f"text {action.text_gone!r} to go away" if action.text_gone is not None else
                    f"ref #{action.ref_gone} to go away" if action.ref_gone is not None else
                    f"the URL to contain {action.url!r}")
            raise ActionFailed(f"timed out after {action.timeout:g} s waiting for {what}")
        await asyncio.sleep(0.1)


async def element_box(target: Browser, tab: Tab, ref: int) -> tuple[float, float, float, float]:
    """A ref's element scrolled into view: (left, top, width, height) in the top-level
    viewport's CSS pixels. Hold ``tab.lock``."""
    x, y, width, height = await _Page(target, tab).locate(ref, hit_test=False)
    return x - width / 2, y - height / 2, width, height


async def run_actions(target: Browser, tab: Tab, actions: list[Any],
                      budget_s: float) -> list[StepResult]:
    """Run the batch in order, stopping at the first failure. Hold ``tab.lock``."""
    page = _Page(target, tab)
    steps: list[StepResult] = []
    for action in actions:
        started = tab.expect("Page.frameStartedNavigating", "Page.frameStartedLoading")
        loaded = tab.expect("Page.loadEventFired")
        try:
            await _run_one(page, action)
            await page.settle(started, loaded, budget_s)
        except GatewayError as exc:
            steps.append(StepResult(do=action.do, ok=False, error=str(exc)))
            return steps
        finally:
            started.cancel()
            loaded.cancel()
        steps.append(StepResult(do=action.do, ok=True))
    return steps
