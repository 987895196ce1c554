"""A drag that fails halfway lets go of the mouse.

The button is pressed at the start of the gesture; if a step after that fails (the
tab_input stops answering, the tab goes), the tab_input must not be left with the left button
held — every later click and hover on that tab would be a drag.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from gateway.concurrency import OneShot
from gateway.errors import CdpTimeout
from gateway.page.act.drag import drag
from gateway.page.act.models import Drag

pytestmark = pytest.mark.anyio


class FakeTabInput:
    """Just what ``drag`` asks of a tab_input; mouse moves fail after ``fail_after`` of them."""

    def __init__(self, fail_after: int) -> None:
        self.sent: list[tuple[str, dict[str, Any]]] = []
        self.fail_after = fail_after
        self.tab = SimpleNamespace(expect=lambda *_: OneShot())

    def ref(self, ref: int) -> tuple[None, Any]:
        return None, SimpleNamespace(session=None)

    async def point(self, ref: int) -> tuple[float, float]:
        return 10.0, 10.0

    async def on(self, target: Any, js: str) -> bool:
        return False

    async def call(self, method: str, params: dict[str, Any] | None = None,
                   session: str | None = None) -> dict[str, Any]:
        self.sent.append((method, dict(params or {})))
        if method == "Page.getLayoutMetrics":
            return {"cssLayoutViewport": {"clientWidth": 800, "clientHeight": 600}}
        return {}

    async def mouse(self, kind: str, x: float, y: float, **extra: Any) -> None:
        moves = sum(1 for m, p in self.sent if p.get("type") == "mouseMoved")
        if kind == "mouseMoved" and moves >= self.fail_after:
            raise CdpTimeout("Input.dispatchMouseEvent", 1, "")
        await self.call("Input.dispatchMouseEvent", {"type": kind, "x": x, "y": y, **extra})

    async def undo(self, method: str, params: dict[str, Any], session: str | None = None
                   ) -> None:
        await self.call(method, params, session)


def mouse_events(tab_input: FakeTabInput) -> list[str]:
    return [p["type"] for m, p in tab_input.sent if m == "Input.dispatchMouseEvent"]


async def test_a_drag_that_fails_after_the_press_releases_the_button() -> None:
    tab_input = FakeTabInput(fail_after=4)
    with pytest.raises(CdpTimeout):
        await drag(tab_input, Drag(do="drag", ref=1, by=[50, 0]))  # type: ignore[arg-type]
    events = mouse_events(tab_input)
    assert events[1] == "mousePressed" and events[-1] == "mouseReleased", events
    assert ("Input.setInterceptDrags", {"enabled": False}) in tab_input.sent


async def test_a_drag_that_fails_before_the_press_sends_no_release() -> None:
    tab_input = FakeTabInput(fail_after=0)
    with pytest.raises(CdpTimeout):
        await drag(tab_input, Drag(do="drag", ref=1, by=[50, 0]))  # type: ignore[arg-type]
    assert mouse_events(tab_input) == []


async def test_a_drag_that_succeeds_releases_once() -> None:
    tab_input = FakeTabInput(fail_after=100)
    await drag(tab_input, Drag(do="drag", ref=1, by=[50, 0]))  # type: ignore[arg-type]
    assert mouse_events(tab_input).count("mouseReleased") == 1
