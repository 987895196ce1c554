"""Acting on refs from a page view with real input: click, type, press, select, …

``upload`` and ``drag`` have modules of their own (``gateway.page.act.upload``,
``gateway.page.act.drag``).

Each step acts on a ref's element through ``gateway.page.act.element.TabInput`` (which
checks the ref and the element first) and the batch stops at the first step
that fails. After a step the page is given a short, bounded chance to settle
(``gateway.page.waits.settle``): if it started a navigation, the load is awaited.
A cancelled batch is cancelled, never reported as a failed step.
"""

from __future__ import annotations

from typing import Any

import anyio
from pydantic import BaseModel

from gateway.browsers.session import TabSession
from gateway.errors import ActionFailed, GatewayError, StaleRef
from gateway.page.act.drag import drag
from gateway.page.act.element import TabInput
from gateway.page.act.models import (
    Action,
    Check,
    Click,
    Drag,
    Hover,
    Press,
    Scroll,
    Select,
    StepResult,
    Type,
    Upload,
    WaitFor,
)
from gateway.page.act.upload import Readables, upload
from gateway.page.js import call, script
from gateway.page.waits import Elapsed, settle

__all__ = ["Action", "Readables", "StepResult", "element_box", "run_actions"]

CHECK_SETTLE_S = 1.0    # how long a check/uncheck click gets to change the state
_STATE_JS = script("state.js")
_FOCUS_JS = script("focus.js")
_SELECT_JS = script("select.js")
_GONE_JS = script("gone.js")


async def _run_one(tab_input: TabInput, action: BaseModel, readable: Readables,
                   budget_s: float) -> None:
    if isinstance(action, Click):
        await tab_input.click(action.ref, action.button, action.count)
    elif isinstance(action, Type):
        _, element = tab_input.ref(action.ref)
        await tab_input.point(action.ref, hit_test=False)
        state = await tab_input.on(element, _STATE_JS)
        if state.get("readOnly"):
            raise ActionFailed(f'{element.role} #{action.ref} "{element.name}" is read-only')
        if not await tab_input.on(element, _FOCUS_JS, action.clear):
            await tab_input.click(action.ref)
        if action.text:
            await tab_input.call("Input.insertText", {"text": action.text})
        elif action.clear:
            await tab_input.press("Delete")
        if action.submit:
            await tab_input.press("Enter")
    elif isinstance(action, Press):
        await tab_input.press(action.key)
    elif isinstance(action, Select):
        _, element = tab_input.ref(action.ref)
        await tab_input.point(action.ref, hit_test=False)
        done = await tab_input.on(element, _SELECT_JS, action.value, action.label)
        if "error" in done:
            raise ActionFailed(f'{element.role} #{action.ref} "{element.name}" {done["error"]}')
    elif isinstance(action, Check):
        _, element = tab_input.ref(action.ref)
        want = action.do == "check"
        if (await tab_input.on(element, _STATE_JS))["checked"] != want:
            await tab_input.click(action.ref)
            # A click routed into a cross-site frame lands asynchronously: on a busy
            # machine the state may change a moment after the input call returned.
            deadline = anyio.current_time() + CHECK_SETTLE_S
            while (await tab_input.on(element, _STATE_JS))["checked"] != want:
                if anyio.current_time() > deadline:
                    raise ActionFailed(f'{element.role} #{action.ref} "{element.name}": '
                                       f"clicking did not {action.do} it")
                await anyio.sleep(0.05)
    elif isinstance(action, Hover):
        await tab_input.hover(action.ref)
    elif isinstance(action, Scroll):
        await _scroll(tab_input, action)
    elif isinstance(action, WaitFor):
        await _wait_for(tab_input, action)
    elif isinstance(action, Upload):
        await upload(tab_input, action, readable, budget_s)
    elif isinstance(action, Drag):
        await drag(tab_input, action)


async def _scroll(tab_input: TabInput, action: Scroll) -> None:
    if action.ref is not None:
        await tab_input.point(action.ref, hit_test=False)
    elif action.to is not None:
        await tab_input.call("Runtime.evaluate", {"expression": call("scroll_to.js", action.to)})
    else:
        metrics = await tab_input.call("Page.getLayoutMetrics")
        view = metrics["cssLayoutViewport"]
        await tab_input.mouse("mouseWheel", view["clientWidth"] / 2, view["clientHeight"] / 2,
                         deltaX=0, deltaY=action.by)


async def _page_has_text(tab_input: TabInput, wanted: str) -> bool:
    """Whether any frame of the tab — the ones the view shows — contains ``wanted``."""
    expression = call("has_text.js", wanted)
    for session in (tab_input.tab.session_id, *tab_input.tab.frame_sessions.values()):
        found = await tab_input.call("Runtime.evaluate", {"expression": expression,
                                                     "returnByValue": True}, session)
        if found.get("result", {}).get("value"):
            return True
    return False


async def _wait_for(tab_input: TabInput, action: WaitFor) -> None:
    element = tab_input.ref(action.ref_gone)[1] if action.ref_gone is not None else None
    deadline = anyio.current_time() + action.timeout
    what = (f"text {action.text!r} to appear" if action.text is not None else
            f"text {action.text_gone!r} to go away" if action.text_gone is not None else
            f"ref #{action.ref_gone} to go away" if action.ref_gone is not None else
            f"the URL to contain {action.url!r}")
    elapsed = Elapsed(action.timeout, what[:80])
    while True:
        if action.url is not None:
            done = action.url in tab_input.tab.url
        elif element is not None:
            try:
                done = bool(await tab_input.on(element, _GONE_JS))
            except StaleRef:
                done = True
        else:
            wanted = action.text if action.text is not None else action.text_gone
            present = await _page_has_text(tab_input, str(wanted))
            done = present if action.text is not None else not present
        if done or anyio.current_time() >= deadline:
            await elapsed.end()
            if done:
                return
            raise ActionFailed(f"timed out after {action.timeout:g} s waiting for {what}")
        await elapsed.tick()
        await anyio.sleep(0.1)


async def element_box(session: TabSession, ref: int) -> tuple[float, float, float, float]:
    """A ref's element scrolled into view: (left, top, width, height) in the top-level
    viewport's CSS pixels. Hold ``tab.lock``."""
    x, y, width, height = await TabInput(session).locate(ref, hit_test=False)
    return x - width / 2, y - height / 2, width, height


async def run_actions(session: TabSession, actions: list[Any], budget_s: float,
                      readable: Readables) -> list[StepResult]:
    """Run the batch in order, stopping at the first failure; ``readable`` checks the
    paths of ``upload`` steps. Hold ``tab.lock``."""
    tab, tab_input = session.tab, TabInput(session)
    steps: list[StepResult] = []
    for action in actions:
        started = session.expect("Page.frameStartedNavigating", "Page.frameStartedLoading")
        loaded = session.expect("Page.loadEventFired")
        try:
            await _run_one(tab_input, action, readable, budget_s)
            await settle(tab, started, loaded, budget_s)
        except GatewayError as exc:
            steps.append(StepResult(do=action.do, ok=False, error=str(exc)))
            return steps
        finally:
            started.drop()
            loaded.drop()
        steps.append(StepResult(do=action.do, ok=True))
    return steps
