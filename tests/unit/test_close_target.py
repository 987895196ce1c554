"""Closing a page (``PageTracker.close``, behind close_tab and storage_state's scratch
tab) replayed on what Chromium really sends (``fixtures/events/close_target.jsonl``,
written by ``fixtures/capture_events.py``): the page's last ``targetInfoChanged`` comes
*after* Chrome answers ``Target.closeTarget``. Tracked, it listed the closed page again
under a new tab id until its ``targetDestroyed`` — the phantom tab a test saw in
list_tabs right after ``storage_state`` load. The close answers only once Chrome has
destroyed the page, and the page is never listed in between."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest

from gateway.browsers.pages import PageTracker
from gateway.browsers.uploads import Uploads
from gateway.config import TargetConfig
from gateway.tabs.tab import TabIds
from tests.unit.cdp_events import EVENTS
from tests.unit.fakes import FakeCdp

pytestmark = pytest.mark.anyio

def _captured() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The close's events before Chrome's answer and after it."""
    with (EVENTS / "close_target.jsonl").open() as f:
        lines = [json.loads(line) for line in f]
    at = next(i for i, line in enumerate(lines) if line.get("reply") == "Target.closeTarget")
    return lines[:at], lines[at + 1:]


def _deliver(cdp: FakeCdp, event: dict[str, Any]) -> None:
    """A captured browser-level event, handed to the tracker's listener."""
    cdp.emit(event["method"], event["params"])


async def test_a_closed_page_is_gone_when_the_close_answers_and_never_listed_again() -> None:
    before, after = _captured()
    destroyed = next(e for e in after if e["method"] == "Target.targetDestroyed")
    target_id = destroyed["params"]["targetId"]
    cdp, tab_ids = FakeCdp(), TabIds()
    pages = PageTracker("t", TargetConfig(name="t", ssh=None, cdp=None), tab_ids,
                        Uploads(None))  # type: ignore[arg-type]
    listed: list[set[str]] = []  # the tracker's pages after each event Chrome sent late
    delivered: list[str] = []

    async with anyio.create_task_group() as tg:
        pages.serve(cdp, tg)  # type: ignore[arg-type]
        tab = pages.track({"targetId": target_id, "type": "page", "url": "about:blank"})

        async def late_events() -> None:
            for event in after:
                await anyio.lowlevel.checkpoint()
                _deliver(cdp, event)
                delivered.append(event["method"])
                listed.append(set(pages.tabs))

        async def close_target(method: str, params: dict[str, Any]) -> dict[str, Any]:
            assert (method, params) == ("Target.closeTarget", {"targetId": target_id})
            for event in before:
                _deliver(cdp, event)
            tg.start_soon(late_events)
            return {}

        await pages.close(tab, "was closed by close_tab", close_target, 5.0)
        assert "Target.targetDestroyed" in delivered  # answered once Chrome destroyed it
        assert target_id not in pages.tabs and tab.retired

    assert delivered == [e["method"] for e in after]
    assert all(target_id not in now for now in listed), listed
    assert next(tab_ids._next_id) == tab.id + 1  # no id spent on a phantom of the page


def _tracker() -> PageTracker:
    return PageTracker("t", TargetConfig(name="t", ssh=None, cdp=None), TabIds(),
                       Uploads(None))  # type: ignore[arg-type]


async def test_a_close_chrome_never_confirms_is_bounded() -> None:
    cdp = FakeCdp()
    pages = _tracker()
    async with anyio.create_task_group() as tg:
        pages.serve(cdp, tg)  # type: ignore[arg-type]
        tab = pages.track({"targetId": "T1", "type": "page"})

        async def accepted(_method: str, _params: dict[str, Any]) -> dict[str, Any]:
            return {}

        with anyio.fail_after(5):
            await pages.close(tab, "was closed by close_tab", accepted, 0.05)
        assert "T1" not in pages.tabs
        _deliver(cdp, {"method": "Target.targetInfoChanged",
                     "params": {"targetInfo": {"targetId": "T1", "type": "page"}}})
        assert "T1" not in pages.tabs  # still not listed again: its destroy is to come


async def test_a_call_cut_off_by_the_close_says_close_tab_closed_it() -> None:
    """Chrome may detach the page before it answers ``closeTarget``: what was in flight on
    the tab fails saying close_tab closed it, not that the page went away by itself."""
    cdp = FakeCdp()
    pages = _tracker()
    async with anyio.create_task_group() as tg:
        pages.serve(cdp, tg)  # type: ignore[arg-type]
        tab = pages.track({"targetId": "T1", "type": "page"})
        pages.bind(cdp, tab, "S1")  # type: ignore[arg-type]

        async def detached_first(_method: str, _params: dict[str, Any]) -> dict[str, Any]:
            _deliver(cdp, {"method": "Target.detachedFromTarget",
                         "params": {"sessionId": "S1", "targetId": "T1"}})
            return {}

        await pages.close(tab, "was closed by close_tab", detached_first, 0.05)
    assert cdp.failed and all("was closed by close_tab" in why for _, why in cdp.failed), \
        cdp.failed
