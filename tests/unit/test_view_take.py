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
    """A page as its session answers it (the form page unless told); ``say`` changes one
    text of it (the first, or the one saying ``old``)."""

    def __init__(self, nodes: list[dict[str, Any]] = FORM["frames"][0]["nodes"]) -> None:
        self.nodes: list[dict[str, Any]] = copy.deepcopy(nodes)
        self.cdp = FakeCdp({
            "Page.getFrameTree": {"frameTree": {"frame": {
                "id": "F0", "loaderId": "L1", "url": FORM["url"]}}},
            "Accessibility.getFullAXTree": lambda params, session: {"nodes": self.nodes}})
        tab = Tab(7, "devvm", "F0")
        tab.session_id, tab.loader_id = "S1", "L1"
        self.session = TabSession(TabBrowser(self.cdp), 10.0, tab)  # type: ignore[arg-type]

    def say(self, text: str, old: str | None = None) -> None:
        texts = [n for n in self.nodes if n.get("role", {}).get("value") == "StaticText"
                 and n.get("name", {}).get("value") and old in (None, n["name"]["value"])]
        texts[0]["name"]["value"] = text


def _node(node_id: int, role: str, kids: list[int], name: str = "") -> dict[str, Any]:
    return {"nodeId": str(node_id), "ignored": False, "backendDOMNodeId": node_id,
            "role": {"type": "role", "value": role},
            "name": {"type": "computedString", "value": name},
            "childIds": [str(kid) for kid in kids]}


def _long_list(items: int) -> list[dict[str, Any]]:
    """A page of one list, ``file 0`` … : more items than a view shows."""
    return [_node(1, "RootWebArea", [2], "files"), _node(2, "list", [10 + i for i in range(items)]),
            *(_node(10 + i, "listitem", [1000 + i]) for i in range(items)),
            *(_node(1000 + i, "StaticText", [], f"file {i}") for i in range(items))]


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


async def test_a_change_in_rows_the_view_leaves_out_is_said_in_the_header() -> None:
    """An act on a row found by ``find`` in a long list: the rows left out of the view
    (``compact``) are in no hunk, so "no change" alone would tell the model its act did
    nothing."""
    page = Page(_long_list(40))
    held = (await take(page.session, 100_000)).view
    assert "more items like these" in held and "file 35" not in held
    page.say("file 35 (selected)", old="file 35")
    act = await take(page.session, 100_000, changes=True)
    assert act.view == "" and act.changes is not None
    assert act.changes.endswith("rows left out of it changed: browse_view find shows them")
    again = await take(page.session, 100_000, changes=True)  # nothing changed since
    assert again.changes == f"no change since the last view of {len(held.splitlines())} lines"
