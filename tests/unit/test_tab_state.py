"""A tab's owned state (``Slot``) and its one subscription mechanism (``Tab.subscribe``).

The tabs come from a real ``TabIds``; the events reach them as Chrome's do, through a
real ``PageTracker`` bound to the shared fake connection (``tests.unit.fakes``): a
session's listener hands each event to its tab, which dispatches it to its subscribers.
"""

from __future__ import annotations

from typing import Any

import anyio
import anyio.abc
import pytest

from gateway.browsers.pages import PageTracker
from gateway.browsers.uploads import Uploads
from gateway.config import TargetConfig
from gateway.live.hold import HOLD, Hold, held
from gateway.page.emulation import EMULATION, emulating, overrides_sent
from gateway.page.view.state import ViewState, current_view, first_ref, remember_view
from gateway.tabs.tab import Slot, Tab, TabIds
from tests.unit.fakes import FakeCdp

pytestmark = pytest.mark.anyio

Seen = list[tuple[str, dict[str, Any]]]


def _tracker(tab_ids: TabIds | None = None) -> PageTracker:
    return PageTracker("t", TargetConfig(name="t", ssh=None, cdp=None), tab_ids or TabIds(),
                       Uploads(None))  # type: ignore[arg-type]


def _bound(cdp: FakeCdp, tg: anyio.abc.TaskGroup, *targets: str) -> tuple[PageTracker, list[Tab]]:
    """A tracker serving ``cdp`` and a tab per target, each on its page session S-<target>."""
    pages = _tracker()
    pages.serve(cdp, tg)  # type: ignore[arg-type]
    tabs = []
    for target in targets:
        tab = pages.track({"targetId": target})
        pages.bind(cdp, tab, f"S-{target}")  # type: ignore[arg-type]
        tabs.append(tab)
    return pages, tabs


def _into(seen: Seen) -> Any:
    return lambda method, params: seen.append((method, params))


# ------------------------------------------------------------------ slots

def test_a_slot_is_made_once_per_tab_and_never_shared() -> None:
    tabs = TabIds()
    one, two = tabs.add("t", "T1"), tabs.add("t", "T2")
    notes: Slot[list[str]] = Slot("notes", list)
    assert one.peek(notes) is None and one.peek(notes) is None, "peeking makes nothing"
    one.state(notes).append("one's")
    assert one.state(notes) is one.state(notes) == ["one's"]
    assert two.state(notes) == [] and two.state(notes) is not one.state(notes)


def test_a_slot_without_a_maker_has_only_what_was_put() -> None:
    tab = TabIds().add("t", "T1")
    marker: Slot[str] = Slot("marker")
    with pytest.raises(KeyError, match="marker"):
        tab.state(marker)
    tab.put(marker, "x")
    assert tab.state(marker) == tab.peek(marker) == "x"
    tab.clear(marker)
    assert tab.peek(marker) is None


def test_a_tab_that_goes_drops_its_state_and_tells_each_slot_once() -> None:
    tabs = TabIds()
    gone, kept = tabs.add("t", "T1"), tabs.add("t", "T2")
    told: list[tuple[str, str]] = []
    watched: Slot[str] = Slot("watched", gone=lambda value, why: told.append((value, why)))
    gone.put(watched, "gone's")
    kept.put(watched, "kept's")
    tabs.remove(gone, "was closed")
    tabs.remove(gone, "was closed")  # a second retire (its destroy came late) tells nobody
    assert told == [("gone's", "was closed")]
    assert gone.peek(watched) is None and kept.peek(watched) == "kept's"


def test_each_layers_state_stays_with_its_own_tab() -> None:
    """The view's refs, the emulation and the hold are each one tab's: another tab of
    the same browser sees none of them."""
    tabs = TabIds()
    one, two = tabs.add("t", "T1"), tabs.add("t", "T2")
    remember_view(one, ViewState({}, "L1", {}, next_ref=8))
    one.state(EMULATION).state = {"locale": "de-DE"}
    one.put(HOLD, Hold("sign in", 2e9))
    assert (current_view(one) is not None, first_ref(one), emulating(one)) == (
        True, 8, {"locale": "de-DE"})
    assert held(one) is not None
    assert (current_view(two), first_ref(two), emulating(two), held(two)) == (None, 1, {}, None)
    assert two.peek(EMULATION) is None, "reading another tab's emulation made none"


async def test_a_new_session_gets_the_state_s_session_commands_again() -> None:
    """What a slot's value stands for on the session (an emulation's overrides) is
    sent to the tab's next session, and only to that tab's."""
    cdp = FakeCdp()
    async with anyio.create_task_group() as tg:
        pages, (tab, other) = _bound(cdp, tg, "T1", "T2")
        tab.state(EMULATION).overrides = {
            "Emulation.setLocaleOverride": {"locale": "de-DE"}}
        assert overrides_sent(tab) == {"Emulation.setLocaleOverride": {"locale": "de-DE"}}
        pages.bind(cdp, tab, "S-new")  # type: ignore[arg-type]
        pages.bind(cdp, other, "S-other")  # type: ignore[arg-type]
        await pages.prepare(cdp, tab, "S-new", False)  # type: ignore[arg-type]
        await pages.prepare(cdp, other, "S-other", False)  # type: ignore[arg-type]
    sent = [(c.params, c.session_id) for c in cdp.commands
            if c.method == "Emulation.setLocaleOverride"]
    assert sent == [({"locale": "de-DE"}, "S-new")]


# ------------------------------------------------------------------ subscriptions

async def test_each_subscriber_gets_each_of_its_events_once_in_order() -> None:
    cdp = FakeCdp()
    async with anyio.create_task_group() as tg:
        _, (tab, other) = _bound(cdp, tg, "T1", "T2")
        order: list[str] = []
        frames: Seen = []
        page: Seen = []
        tab.subscribe("Page.screencastFrame", lambda m, p: (order.append("method"),
                                                           frames.append((m, p))))
        tab.subscribe("Page.", lambda m, p: (order.append("domain"), page.append((m, p))))
        other_seen: Seen = []
        other.subscribe("Page.", _into(other_seen))
        cdp.emit("Page.screencastFrame", {"sessionId": 1}, "S-T1")
        cdp.emit("Network.dataReceived", {"requestId": "r"}, "S-T1")
        cdp.emit("Page.screencastFrame", {"sessionId": 2}, "S-T1")
        cdp.emit("Page.frameResized", {}, "S-T1")
        tg.cancel_scope.cancel()
    assert frames == [("Page.screencastFrame", {"sessionId": 1}),
                      ("Page.screencastFrame", {"sessionId": 2})]
    assert [m for m, _ in page] == ["Page.screencastFrame", "Page.screencastFrame",
                                    "Page.frameResized"]
    assert order == ["method", "domain", "method", "domain", "domain"], "as they subscribed"
    assert other_seen == [], "another tab's events are its own"


async def test_a_removed_subscriber_hears_no_more_and_the_rest_keep_theirs() -> None:
    cdp = FakeCdp()
    async with anyio.create_task_group() as tg:
        _, (tab,) = _bound(cdp, tg, "T1")
        first: Seen = []
        second: Seen = []
        listener = _into(first)
        remove_one = tab.subscribe("Page.frameResized", listener)
        tab.subscribe("Page.frameResized", listener)  # the same listener twice: twice
        tab.subscribe("Page.frameResized", _into(second))
        cdp.emit("Page.frameResized", {"n": 1}, "S-T1")
        remove_one()
        remove_one()  # a remover twice removes one subscription only
        cdp.emit("Page.frameResized", {"n": 2}, "S-T1")
        tg.cancel_scope.cancel()
    assert [p["n"] for _, p in first] == [1, 1, 2]
    assert [p["n"] for _, p in second] == [1, 2]


async def test_the_console_log_keeps_an_unparsed_frame_only_while_alone() -> None:
    """The lazy console path (``Tab.take_frame``): a console frame is kept unparsed only
    while the console log is its one subscriber, and again once the others left."""
    tab = TabIds().add("t", "T1")
    frame = '{"method":"Runtime.consoleAPICalled","params":{}}'
    assert tab.take_frame("Runtime.consoleAPICalled", frame)
    remove = tab.subscribe("Runtime.", lambda m, p: None)
    assert not tab.take_frame("Runtime.consoleAPICalled", frame), "a domain listener too"
    remove()
    arrival = tab.expect("Runtime.consoleAPICalled")
    assert not tab.take_frame("Runtime.consoleAPICalled", frame)
    arrival.drop()
    assert tab.take_frame("Runtime.consoleAPICalled", frame)
    assert not tab.take_frame("Page.frameResized", frame), "not the console's: parsed"


async def test_a_waiter_takes_the_first_event_it_wants_and_then_unsubscribes() -> None:
    cdp = FakeCdp()
    async with anyio.create_task_group() as tg:
        _, (tab,) = _bound(cdp, tg, "T1")
        arrival = tab.expect("Page.loadEventFired", "Page.frameStoppedLoading",
                             where=lambda p: p.get("ok") is True)
        cdp.emit("Page.loadEventFired", {"ok": False}, "S-T1")
        assert not arrival.done
        cdp.emit("Page.frameStoppedLoading", {"ok": True}, "S-T1")
        cdp.emit("Page.loadEventFired", {"ok": True}, "S-T1")
        assert arrival.done and arrival.result() == ("Page.frameStoppedLoading", {"ok": True})
        assert tab._routes.get("Page.loadEventFired") == (tab._on_loaded,), "gone"
        tg.cancel_scope.cancel()


async def test_page_downloads_and_dialogs_reach_the_tracker_through_the_tab() -> None:
    cdp = FakeCdp()
    downloaded: list[tuple[str, int]] = []
    async with anyio.create_task_group() as tg:
        pages, (tab, other) = _bound(cdp, tg, "T1", "T2")
        pages.downloaded = lambda method, params, t: downloaded.append((method, t.id))
        cdp.emit("Page.downloadWillBegin", {"guid": "g"}, "S-T1")
        cdp.emit("Page.downloadProgress", {"guid": "g"}, "S-T1")
        cdp.emit("Page.javascriptDialogOpening", {"type": "alert", "message": "hi"}, "S-T1")
        tg.cancel_scope.cancel()
    assert downloaded == [("Page.downloadWillBegin", tab.id), ("Page.downloadProgress", tab.id)]
    assert tab.dialog == {"type": "alert", "message": "hi"} and other.dialog is None
    assert [session for session, _ in cdp.failed] == ["S-T1"], "in flight there fails now"


async def test_the_grant_goes_with_the_last_tab_whose_state_emulated_a_position() -> None:
    """The tracker reads what a retired tab emulated before its state is dropped: the
    default context's geolocation grant is withdrawn with the last such tab, not before."""
    cdp = FakeCdp()
    position = {"Emulation.setGeolocationOverride": {"latitude": 1, "longitude": 2}}
    async with anyio.create_task_group() as tg:
        pages, (one, two) = _bound(cdp, tg, "T1", "T2")
        one.state(EMULATION).overrides = dict(position)
        two.state(EMULATION).overrides = dict(position)
        pages.retire(one, "was closed")
        await anyio.sleep(0)
        assert "Browser.resetPermissions" not in cdp.methods(), "the other still emulates one"
        pages.retire(two, "was closed")
        with anyio.fail_after(5):
            while "Browser.resetPermissions" not in cdp.methods():
                await anyio.sleep(0)
        tg.cancel_scope.cancel()
    assert one.peek(EMULATION) is None and two.peek(EMULATION) is None
