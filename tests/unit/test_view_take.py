"""Taking a tab's view (``gateway.page.view.take``) on the shared fake connection, which
answers with a captured tree (``fixtures/ax/form.json``) as Chrome would: the change set
an act gets is taken against the whole view that same client holds, so "what it holds +
the changes" is the fresh view — never against a view another client of the gateway was
handed of the same tab."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from gateway.browsers.session import TabSession
from gateway.page.view.take import take
from gateway.tabs.tab import Tab
from tests.unit.fakes import FakeCdp, TabBrowser
from tests.view_changes import apply_changes

pytestmark = pytest.mark.anyio

FORM: dict[str, Any] = json.loads(
    (Path(__file__).parents[2] / "fixtures" / "ax" / "form.json").read_text())


class Page:
    """The form page as its session answers it; ``say`` changes one text of it."""

    def __init__(self) -> None:
        self.nodes: list[dict[str, Any]] = copy.deepcopy(FORM["frames"][0]["nodes"])
        self.cdp = FakeCdp({
            "Page.getFrameTree": {"frameTree": {"frame": {
                "id": "F0", "loaderId": "L1", "url": FORM["url"]}}},
            "Accessibility.getFullAXTree": lambda params, session: {"nodes": self.nodes}})
        tab = Tab(7, "devvm", "F0")
        tab.session_id, tab.loader_id = "S1", "L1"
        self.session = TabSession(TabBrowser(self.cdp), 10.0, tab)  # type: ignore[arg-type]

    def say(self, text: str) -> None:
        texts = [n for n in self.nodes if n.get("role", {}).get("value") == "StaticText"
                 and n.get("name", {}).get("value")]
        texts[0]["name"]["value"] = text


async def test_an_act_after_the_same_clients_view_gets_what_changed() -> None:
    page = Page()
    held = (await take(page.session, 100_000, holder="A")).view
    page.say("Saved")
    act = await take(page.session, 100_000, changes=True, holder="A")
    fresh = await take(page.session, 100_000, holder="A")
    assert act.changes is not None and "Saved" in act.view
    assert apply_changes(held, act.view) == fresh.view


async def test_an_act_after_another_clients_view_gets_the_whole_view() -> None:
    """Client A holds its view; client B views the tab after the page changed; A's act
    must not answer with changes against B's view, which A never saw."""
    page = Page()
    held_by_a = (await take(page.session, 100_000, holder="A")).view
    page.say("Saving")
    await take(page.session, 100_000, holder="B")
    page.say("Saved")
    act = await take(page.session, 100_000, changes=True, holder="A")
    fresh = await take(page.session, 100_000, holder="A")
    assert act.changes is None, (
        f"a change set against B's view: A would hold {apply_changes(held_by_a, act.view)!r}")
    assert act.view == fresh.view
