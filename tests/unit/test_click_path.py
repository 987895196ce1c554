"""The click path (``gateway.page.act.element.TabInput``, ``gateway.page.act.actions``) on the
shared fake connection: a ref of the tab's current view is checked, resolved in its
session, located by ``prepare.js`` (scroll, visibility, enabled, hit test) and clicked with
real ``Input.dispatchMouseEvent`` at its centre; a batch stops at its first failing step.

The page's answers are written as Chrome sends them (CDP ``DOM.resolveNode`` answers
``{object: RemoteObject}``; ``Runtime.callFunctionOn`` with ``returnByValue`` answers
``{result: RemoteObject}`` whose ``value`` is what the function returned — here what
``prepare.js`` returns: ``{x, y, width, height}`` or ``{error}``).
"""

from __future__ import annotations

from typing import Any

import pytest

from gateway.browsers.session import TabSession
from gateway.errors import ActionFailed, CdpError, StaleRef
from gateway.page.act.actions import element_box, run_actions
from gateway.page.act.element import TabInput
from gateway.page.act.models import Click
from gateway.page.view import RefElement, ViewState
from gateway.page.view.state import remember_view
from gateway.tabs.tab import Tab
from tests.unit.fakes import FakeCdp, Sent, TabBrowser

pytestmark = pytest.mark.anyio

BUTTON = RefElement("T1", "S1", 42, "button", "Send")
RESOLVED = {"object": {"type": "object", "subtype": "node", "className": "HTMLButtonElement",
                       "description": "button#send", "objectId": "obj-42"}}
AT_CENTRE = {"x": 150, "y": 70, "width": 100, "height": 40}


def _page(prepared: dict[str, Any] | Exception = AT_CENTRE,
          resolved: dict[str, Any] | Exception = RESOLVED) -> tuple[TabSession, FakeCdp]:
    """A tab whose current view holds ref #3 (the button), on document L1."""
    cdp = FakeCdp({"DOM.resolveNode": resolved,
                   "Runtime.callFunctionOn": prepared if isinstance(prepared, Exception)
                   else {"result": {"type": "object", "value": prepared}}})
    tab = Tab(7, "devvm", "T1")
    tab.session_id, tab.loader_id = "S1", "L1"
    remember_view(tab, ViewState(refs={3: BUTTON}, loader_id="L1", frames={}, next_ref=4))
    return TabSession(TabBrowser(cdp), 10.0, tab), cdp  # type: ignore[arg-type]


def _mouse(cdp: FakeCdp) -> list[dict[str, Any]]:
    return [c.params for c in cdp.commands if c.method == "Input.dispatchMouseEvent"]


async def test_a_click_presses_and_releases_at_the_elements_centre() -> None:
    session, cdp = _page()
    await TabInput(session).click(3)
    assert cdp.commands[0] == Sent("DOM.resolveNode", {"backendNodeId": 42}, "S1")
    prepare = cdp.commands[1]
    assert (prepare.method, prepare.session_id) == ("Runtime.callFunctionOn", "S1")
    assert prepare.params["objectId"] == "obj-42"
    assert prepare.params["arguments"] == [{"value": True}, {"value": True}]  # hit test, scroll
    assert _mouse(cdp) == [
        {"type": "mouseMoved", "x": 150.0, "y": 70.0},
        {"type": "mousePressed", "x": 150.0, "y": 70.0, "button": "left", "clickCount": 1},
        {"type": "mouseReleased", "x": 150.0, "y": 70.0, "button": "left", "clickCount": 1}]
    assert all(c.session_id == "S1" for c in cdp.commands)
    assert cdp.notified == [Sent("Runtime.releaseObject", {"objectId": "obj-42"}, "S1")]


async def test_a_double_click_counts_up() -> None:
    session, cdp = _page()
    await TabInput(session).click(3, "right", 2)
    assert [(m["type"], m.get("clickCount"), m.get("button")) for m in _mouse(cdp)] == [
        ("mouseMoved", None, None), ("mousePressed", 1, "right"), ("mouseReleased", 1, "right"),
        ("mousePressed", 2, "right"), ("mouseReleased", 2, "right")]


async def test_a_ref_not_in_the_current_view_is_stale() -> None:
    session, cdp = _page()
    with pytest.raises(StaleRef, match=r"ref #9 is not in the current view.*call browse_view"):
        await TabInput(session).click(9)
    assert cdp.commands == []


async def test_a_ref_of_a_document_that_went_is_stale() -> None:
    session, cdp = _page()
    session.tab.loader_id = "L2"  # the page navigated after the view
    with pytest.raises(StaleRef, match=r"ref #3 is stale: the page navigated.*browse_view"):
        await TabInput(session).click(3)
    assert cdp.commands == []


async def test_a_tab_with_no_view_says_to_take_one() -> None:
    session, cdp = _page()
    other = TabSession(session.browser, 10.0, Tab(8, "devvm", "T2"))
    with pytest.raises(StaleRef, match="no view yet; call browse_view first"):
        await TabInput(other).click(3)
    assert cdp.commands == []


async def test_an_element_gone_from_the_page_is_stale() -> None:
    session, cdp = _page(resolved=CdpError("DOM.resolveNode", -32000,
                                           "No node with given id found"))
    with pytest.raises(StaleRef, match=r'button "Send" is no longer in the page; call '
                                       "browse_view"):
        await TabInput(session).click(3)
    assert _mouse(cdp) == []


@pytest.mark.parametrize("why", ["is covered by div#overlay at its centre", "is disabled"])
async def test_an_element_that_cannot_take_the_click_fails_the_action(why: str) -> None:
    session, cdp = _page({"error": why})
    with pytest.raises(ActionFailed, match=f'button #3 "Send" {why}'):
        await TabInput(session).click(3)
    assert _mouse(cdp) == []
    assert cdp.notified == [Sent("Runtime.releaseObject", {"objectId": "obj-42"}, "S1")]


@pytest.mark.parametrize("answer", [None, {}, {"x": "150", "y": 70}, [150, 70]])
async def test_a_page_whose_script_does_not_place_the_element_fails_the_action(
        answer: Any) -> None:
    """An answer that is no place (undefined, an empty object, a string coordinate) is
    the action's failure, said with what came back — not a gateway crash."""
    session, cdp = _page()
    cdp.answers["Runtime.callFunctionOn"] = {"result": {"type": "object", "value": answer}}
    with pytest.raises(ActionFailed, match=r'button #3 "Send": the page did not say where '
                       r"the element is .*; call browse_view"):
        await TabInput(session).click(3)
    assert _mouse(cdp) == []


async def test_element_box_is_the_box_around_the_centre_without_a_hit_test() -> None:
    session, cdp = _page()
    assert await element_box(session, 3) == (100.0, 50.0, 100.0, 40.0)
    assert cdp.commands[1].params["arguments"] == [{"value": False}, {"value": True}]
    assert _mouse(cdp) == []


async def test_a_batch_stops_at_its_first_failing_step() -> None:
    session, cdp = _page()
    steps = await run_actions(session, [Click(do="click", ref=3), Click(do="click", ref=9),
                                        Click(do="click", ref=3)], 10.0, None)
    assert [(s.do, s.ok) for s in steps] == [("click", True), ("click", False)]
    assert steps[0].error is None
    assert steps[1].error is not None and "ref #9 is not in the current view" in steps[1].error
    assert [m["type"] for m in _mouse(cdp)].count("mousePressed") == 1  # the third never ran
