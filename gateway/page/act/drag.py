"""``drag``: press on a ref, move in steps, release on another ref (or by an offset).

One gesture serves both kinds of page code. Pointer-event code (sortable lists,
sliders, drop zones built on pointerdown/move/up) sees the mouse move in
``DRAG_STEPS`` steps with the button held. HTML5 drag and drop cannot be driven
by mouse events alone — Chromium would hand the drag to the OS — so, as
Puppeteer does, drags are intercepted (``Input.setInterceptDrags``): when the
page starts one, Chromium reports ``Input.dragIntercepted`` with the drag's
data, and the rest of the path is sent as ``Input.dispatchDragEvent``
(dragEnter, dragOver…, drop), so dragstart/dragover/drop handlers all run. The
target point is read after the source was scrolled into view, without
scrolling again, so both points are of one and the same scroll position.
"""

from __future__ import annotations

from typing import Any

from gateway.errors import ActionFailed
from gateway.page.act.element import TabInput
from gateway.page.act.models import Drag
from gateway.page.js import script

__all__ = ["DRAG_START_S", "DRAG_STEPS", "drag"]

DRAG_STEPS = 10       # mouse moves from source to target
DRAG_START_S = 2.0    # how long a draggable source gets to start its HTML5 drag
_DRAGGABLE_JS = script("draggable.js")


async def drag(tab_input: TabInput, action: Drag) -> None:
    _, source = tab_input.ref(action.ref)
    x0, y0 = await tab_input.point(action.ref)
    if action.to is not None:
        x1, y1, _, _ = await tab_input.locate(action.to, hit_test=False, scroll=False)
    else:
        x1, y1 = x0 + action.by[0], y0 + action.by[1]  # type: ignore[index]
    view = (await tab_input.call("Page.getLayoutMetrics"))["cssLayoutViewport"]
    if not (0 <= x1 < view["clientWidth"] and 0 <= y1 < view["clientHeight"]):
        raise ActionFailed(f"the drag would end off screen at ({x1:.0f}, {y1:.0f}) with #"
                           f"{action.ref} in view ({view['clientWidth']}x"
                           f"{view['clientHeight']}); drag in shorter hops")
    draggable = bool(await tab_input.on(source, _DRAGGABLE_JS))
    await tab_input.call("Input.setInterceptDrags", {"enabled": True})
    intercepted = tab_input.tab.expect("Input.dragIntercepted")
    x, y, held = x0, y0, False
    try:
        await tab_input.mouse("mouseMoved", x0, y0)
        await tab_input.mouse("mousePressed", x0, y0, button="left", buttons=1, clickCount=1)
        held = True
        data: dict[str, Any] | None = None
        for step in range(1, DRAG_STEPS + 1):
            x, y = x0 + (x1 - x0) * step / DRAG_STEPS, y0 + (y1 - y0) * step / DRAG_STEPS
            if data is not None:
                await _drag_event(tab_input, "dragOver", x, y, data)
                continue
            await tab_input.mouse("mouseMoved", x, y, button="left", buttons=1)
            if intercepted.arrived:
                data = intercepted.result()[1]["data"]
                await _drag_event(tab_input, "dragEnter", x, y, data)
        if data is None and draggable and await intercepted.wait(DRAG_START_S) \
                and intercepted.arrived:
            data = intercepted.result()[1]["data"]  # the drag started late: enter at the end
            await _drag_event(tab_input, "dragEnter", x1, y1, data)
            await _drag_event(tab_input, "dragOver", x1, y1, data)
        if data is not None:
            await _drag_event(tab_input, "drop", x1, y1, data)
        await tab_input.mouse("mouseReleased", x1, y1, button="left", buttons=0, clickCount=1)
        held = False
    finally:
        intercepted.drop()
        if held:  # failed halfway: a button left down would make every later click a drag
            await tab_input.undo("Input.dispatchMouseEvent", {
                "type": "mouseReleased", "x": x, "y": y, "button": "left", "buttons": 0,
                "clickCount": 1})
        await tab_input.undo("Input.setInterceptDrags", {"enabled": False})


async def _drag_event(tab_input: TabInput, kind: str, x: float, y: float,
                      data: dict[str, Any]) -> None:
    await tab_input.call("Input.dispatchDragEvent", {"type": kind, "x": x, "y": y, "data": data})
