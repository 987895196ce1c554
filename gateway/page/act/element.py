"""A ref's element in the page: found, checked, located, and given real input.

The ref must belong to the tab's current view and document (else
``StaleRef``); the element is resolved in the session that owns its frame
(object ids are per session), scrolled into view and checked for being
attached, visible, enabled and not covered at its click point (``prepare.js``:
a hit test in its own frame, through open shadow roots). Input is real CDP
input sent on the page's session at the element's position in top-level
coordinates — through same-origin frames by the page's own geometry, through
cross-site frames by each ``<iframe>`` owner's box in its parent
(``frame_point.js``).
"""

from __future__ import annotations

import contextlib
from typing import Any

import anyio

from gateway.browsers.session import TabSession
from gateway.errors import ActionFailed, CdpError, GatewayError, StaleRef
from gateway.page.act.keys import chord_events, parse_chord
from gateway.page.js import script
from gateway.page.view import RefElement, ViewState, current_view

__all__ = ["TabInput"]

_PREPARE_JS = script("prepare.js")
_FRAME_POINT_JS = script("frame_point.js")
_INPUT_PROBE_JS = script("input_probe.js")
_OVER_JS = "function () { return this.over; }"
ROUTING_WAIT_S = 2.0  # how long an out-of-process frame's element gets to be under the pointer
PROBE_S = 0.3         # how long one located point gets before it is located again
UNDO_S = 2.0  # how long turning a step's setting back may take (it is only clean-up)


class TabInput:
    """One batch's view of the tab: the state refs are checked against, and input."""

    def __init__(self, session: TabSession) -> None:
        self.session = session
        self.tab = session.tab

    async def call(self, method: str, params: dict[str, Any] | None = None,
                   session: str | None = None) -> dict[str, Any]:
        return await self.session.call(method, params, session=session)

    async def undo(self, method: str, params: dict[str, Any], session: str | None = None
                   ) -> None:
        """Turn back a setting a step made (an interception), best effort: bounded,
        finished even while the step is being cancelled, and never raising over the
        error (or cancellation) leaving the ``finally`` it runs in."""
        # A GatewayError here means the tab is gone, and its settings with it.
        with anyio.move_on_after(UNDO_S, shield=True), contextlib.suppress(GatewayError):
            await self.call(method, params, session)

    def ref(self, ref: int) -> tuple[ViewState, RefElement]:
        view = current_view(self.tab)
        if view is None:
            raise StaleRef(f"ref #{ref}: this tab has no view yet; call browse_view first")
        if view.loader_id != (self.tab.loader_id or view.loader_id):
            raise StaleRef(f"ref #{ref} is stale: the page navigated since the view was "
                           "taken; call browse_view for fresh refs")
        found = view.refs.get(ref)
        if found is None:
            raise StaleRef(f"ref #{ref} is not in the current view (its element is gone "
                           "from the page, or named otherwise now); call browse_view for "
                           "fresh refs")
        return view, found

    async def resolve(self, element: RefElement) -> str:
        try:
            result = await self.call("DOM.resolveNode", {"backendNodeId": element.backend_node_id},
                                     element.session)
        except CdpError:
            raise StaleRef(f'{element.role} "{element.name}" is no longer in the page; call '
                           "browse_view for fresh refs") from None
        return str(result["object"]["objectId"])

    async def on(self, element: RefElement, function: str, *args: Any) -> Any:
        """Call ``function`` with ``this`` = the element, in the element's own session."""
        object_id = await self.resolve(element)
        try:
            result = await self.call("Runtime.callFunctionOn", {
                "objectId": object_id, "functionDeclaration": function, "returnByValue": True,
                "awaitPromise": True, "arguments": [{"value": a} for a in args]},
                element.session)
        finally:
            await self.session.release(object_id, element.session)
        if "exceptionDetails" in result:
            raise ActionFailed(f"{element.role} \"{element.name}\": "
                               f"{result['exceptionDetails'].get('text', 'script error')}")
        return result.get("result", {}).get("value")

    async def locate(self, ref: int, hit_test: bool = True, scroll: bool = True
                     ) -> tuple[float, float, float, float]:
        """The element's centre in top-level coordinates and its size, after the checks
        (scrolled to the middle first unless ``scroll`` is False)."""
        view, element = self.ref(ref)
        where = _placed(element, ref, await self.on(element, _PREPARE_JS, hit_test, scroll))
        x, y = float(where["x"]), float(where["y"])
        frame = view.frames.get(element.frame_id)
        # Climb out of cross-site frames through each one's <iframe> in its parent.
        while frame is not None and frame.parent_frame_id is not None:
            parent = view.frames.get(frame.parent_frame_id)
            if parent is None or parent.session == frame.session:
                frame = parent
                continue
            owner = RefElement(parent.frame_id, parent.session, frame.owner_backend_node_id or 0,
                              "iframe", frame.url)
            up = _placed(element, ref, await self.on(owner, _FRAME_POINT_JS, x, y, hit_test))
            x, y = float(up["x"]), float(up["y"])
            frame = parent
        return x, y, float(where["width"]), float(where["height"])

    async def point(self, ref: int, hit_test: bool = True) -> tuple[float, float]:
        x, y, _, _ = await self.locate(ref, hit_test)
        return x, y

    async def mouse(self, kind: str, x: float, y: float, **extra: Any) -> None:
        await self.call("Input.dispatchMouseEvent", {"type": kind, "x": x, "y": y, **extra})

    async def hover(self, ref: int) -> tuple[float, float]:
        """Move the mouse onto the element and answer where it is. For an element in an
        out-of-process frame, until the frame reports the pointer on it (``_over``)."""
        _, element = self.ref(ref)
        if element.session == self.tab.session_id:
            x, y = await self.point(ref)
            await self.mouse("mouseMoved", x, y)
            return x, y
        deadline = anyio.current_time() + ROUTING_WAIT_S
        while True:
            x, y = await self.point(ref)
            if await self._over(element, x, y) or anyio.current_time() > deadline:
                return x, y  # past the wait the caller acts, and its own check tells

    async def _over(self, element: RefElement, x: float, y: float) -> bool:
        """Whether a mouse move to (x, y) lands on the element, within ``PROBE_S``.

        Two things move an out-of-process frame's element under a fixed point a moment
        after it was located: the browser routes input into the frame only once the frame
        is drawn (until then a move lands in the parent, so it is sent again), and the
        scroll its ``scrollIntoView`` asked of a cross-site parent lands asynchronously (a
        move that lands beside the element: locate again)."""
        object_id = await self.resolve(element)
        try:
            made = await self.call("Runtime.callFunctionOn", {
                "objectId": object_id, "functionDeclaration": _INPUT_PROBE_JS},
                element.session)
        finally:
            await self.session.release(object_id, element.session)
        probe = str(made["result"]["objectId"])
        try:
            give_up = anyio.current_time() + PROBE_S
            while True:
                await self.mouse("mouseMoved", x, y)
                seen = await self.call("Runtime.callFunctionOn", {
                    "objectId": probe, "functionDeclaration": _OVER_JS,
                    "returnByValue": True}, element.session)
                over = seen.get("result", {}).get("value")
                if over is not None or anyio.current_time() > give_up:
                    return bool(over)
                await anyio.sleep(0.05)
        finally:
            await self.session.release(probe, element.session)

    async def click(self, ref: int, button: str = "left", count: int = 1) -> None:
        x, y = await self.hover(ref)
        for n in range(1, count + 1):
            await self.mouse("mousePressed", x, y, button=button, clickCount=n)
            await self.mouse("mouseReleased", x, y, button=button, clickCount=n)

    async def press(self, chord: str) -> None:
        bits, key = parse_chord(chord)
        for event in chord_events(bits, key):
            await self.call("Input.dispatchKeyEvent", event)


def _placed(element: RefElement, ref: int, answer: Any) -> dict[str, Any]:
    """What an in-page script said of where the element is: ``{x, y, …}``, else
    ``ActionFailed`` — with the script's reason (hidden, disabled, covered), or, for an
    answer that is not a place at all (a page that redefined what the script relies on,
    a document torn down under it), what came back and what to do."""
    if isinstance(answer, dict) and "error" in answer:
        raise ActionFailed(f'{element.role} #{ref} "{element.name}" {answer["error"]}')
    if not (isinstance(answer, dict) and isinstance(answer.get("x"), int | float)
            and isinstance(answer.get("y"), int | float)):
        shown = repr(answer)[:80]
        raise ActionFailed(f'{element.role} #{ref} "{element.name}": the page did not say '
                           f"where the element is (its script answered {shown}); call "
                           "browse_view and try again")
    return answer
