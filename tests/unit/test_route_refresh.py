"""``Fetch`` kept in step with a tab's routes (``PageTracker.refresh_routes``,
``route_added``) and paused requests answered (``interception.send_answer``), against a
fake browser connection that can fail or hold a command: a session that went is passed
over, one the tab still has is not; a route whose ``Fetch.enable`` failed is taken out
again; two refreshes racing leave every session as the routes are; and a route notes
only real refusals, not a request or session that went."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from gateway.browsers.interception import send_answer
from gateway.browsers.pages import PageTracker
from gateway.browsers.uploads import Uploads
from gateway.config import TargetConfig
from gateway.errors import CdpError, CdpTimeout, GatewayError
from gateway.tabs.routes import Route, pattern_matcher
from gateway.tabs.tab import Tab, TabIds
from tests.unit.fakes import FakeCdp

pytestmark = pytest.mark.anyio

def _last(cdp: FakeCdp, session: str) -> str:
    """The ``Fetch`` command the session got last: the state it is in."""
    return [m for m, s in cdp.sessions() if s == session and m.startswith("Fetch.")][-1]


def _tracked(cdp: FakeCdp, tg: anyio.abc.TaskGroup) -> tuple[PageTracker, Tab]:
    """A tracker serving ``cdp``, and a tab with its page session S1 and a frame's F1."""
    pages = PageTracker("t", TargetConfig(name="t", ssh=None, cdp=None), TabIds(),
                        Uploads(None))  # type: ignore[arg-type]
    pages.serve(cdp, tg)  # type: ignore[arg-type]
    tab = pages.track({"targetId": "T1"})
    pages.bind(cdp, tab, "S1")  # type: ignore[arg-type]
    pages.bind(cdp, tab, "F1", frame_id="FRAME")  # type: ignore[arg-type]
    return pages, tab


def _route(action: str = "block") -> Route:
    return Route("**", action, pattern_matcher("**"))  # type: ignore[arg-type]


async def test_a_frame_that_went_is_passed_over_one_still_there_is_not() -> None:
    tab: Tab | None = None
    went: list[str] = []

    def fail_frame(method: str, session: str | None) -> None:
        if session == "F1" and tab is not None:
            if not went:  # it detached as the command went
                went.append(tab.frame_sessions.pop("FRAME"))
                raise CdpError(method, -32001, "Session with given id not found.")
            raise CdpTimeout(method, 1.0)

    cdp = FakeCdp(hook=fail_frame)
    async with anyio.create_task_group() as tg:
        pages, tab = _tracked(cdp, tg)
        tab.routes.add(_route())
        await pages.refresh_routes([tab], 5)  # the frame went: nothing to say
        assert cdp.sessions() == [("Fetch.enable", "S1"), ("Fetch.enable", "F1")]
        pages.bind(cdp, tab, "F1", frame_id="FRAME")  # type: ignore[arg-type]
        with pytest.raises(CdpTimeout):  # still the tab's: its routes would not reach it
            await pages.refresh_routes([tab], 5)


async def test_a_route_the_page_cannot_take_is_taken_out_again() -> None:
    def refuse(method: str, session: str | None) -> None:
        if (method, session) == ("Fetch.enable", "S1"):
            raise CdpError(method, -32000, "Internal error")

    cdp = FakeCdp(hook=refuse)
    async with anyio.create_task_group() as tg:
        pages, tab = _tracked(cdp, tg)
        kept, new = _route(), _route()
        tab.routes.add(new)
        with pytest.raises(GatewayError, match="Internal error"):
            await pages.route_added(tab.routes, new, [tab], 5)
        assert tab.routes.routes == []  # a retry makes one route, not two
        await anyio.wait_all_tasks_blocked()
        assert _last(cdp, "S1") == "Fetch.disable" and _last(cdp, "F1") == "Fetch.disable"
        cdp.hook = None
        tab.routes.add(kept)
        await pages.route_added(tab.routes, kept, [tab], 5)
        assert tab.routes.routes == [kept] and _last(cdp, "F1") == "Fetch.enable"


async def test_racing_refreshes_leave_every_session_as_the_routes_are() -> None:
    """A refresh that enabled the page's session and waits for its answer while the
    route is removed and a second refresh runs must not enable the frame after it."""
    held, release = anyio.Event(), anyio.Event()

    def hold_first(method: str, session: str | None) -> Any:
        if (method, session) == ("Fetch.enable", "S1") and not held.is_set():
            held.set()
            return release.wait()
        return None

    cdp = FakeCdp(hook=hold_first)
    async with anyio.create_task_group() as tg:
        pages, tab = _tracked(cdp, tg)
        route = _route()
        tab.routes.add(route)
        tg.start_soon(pages.refresh_routes, [tab], 5)
        await held.wait()
        tab.routes.remove(route.id)
        tg.start_soon(pages.refresh_routes, [tab], 5)
        await anyio.wait_all_tasks_blocked()
        release.set()
    assert (_last(cdp, "S1"), _last(cdp, "F1")) == ("Fetch.disable", "Fetch.disable")


@pytest.mark.parametrize(("error", "session", "noted", "failed"), [
    (CdpError("Fetch.continueRequest", -32602, "Unsafe header: Content-Length"), "S1",
     "Unsafe header", True),
    (CdpError("Fetch.continueRequest", -32602, "Invalid InterceptionId."), "S1", None, False),
    (CdpError("Fetch.continueRequest", -32001, "Session with given id not found."), "S1",
     None, False),
    (CdpError("Fetch.continueRequest", -32000, "Internal error"), "GONE", None, False),
    (CdpTimeout("Fetch.continueRequest", 10), "S1", None, True),
])
async def test_a_route_notes_only_what_chrome_refused(error: GatewayError, session: str,
                                                      noted: str | None,
                                                      failed: bool) -> None:
    def refuse(method: str, _session: str | None) -> None:
        if method == "Fetch.continueRequest":
            raise error

    cdp = FakeCdp(hook=refuse)
    async with anyio.create_task_group() as tg:
        _, tab = _tracked(cdp, tg)
        route = _route("continue")
        await send_answer(cdp, tab, session, route,  # type: ignore[arg-type]
                          "Fetch.continueRequest", {"requestId": "r1"})
    assert (route.error is None) == (noted is None)
    assert noted is None or noted in str(route.error)
    assert (("Fetch.failRequest", session) in cdp.sessions()) is failed
