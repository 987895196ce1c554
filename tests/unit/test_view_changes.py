"""Change sets of a view (``gateway.page.view.changes``) and the refs a re-render keeps
(``render_view(keep=…)``), on random texts and the captured trees (``fixtures/ax``):
the last view plus its change set is exactly the fresh view, every time."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from gateway.page.view import PageSnapshot, ViewState, render_view, snapshot_from_json
from gateway.page.view.changes import changes_between
from tests.view_changes import apply_changes

AX = Path(__file__).parents[2] / "fixtures" / "ax"
LINES = st.lists(st.sampled_from(["", "a", "b", "  button#1 \"Save\"", "## Head", "- x"]),
                 max_size=30)


def _snapshot(name: str) -> dict[str, Any]:
    return dict(json.loads((AX / f"{name}.json").read_text()))


def _keys(view: Any) -> dict[tuple[str, int, str, str], int]:
    return {(r.frame_id, r.backend_node_id, r.role, r.name): n for n, r in view.refs.items()}


@given(LINES, LINES)
def test_any_view_plus_its_changes_is_the_new_view(old: list[str], new: list[str]) -> None:
    before, after = "\n".join(old), "\n".join(new)
    changes = changes_between(before, after)
    assert apply_changes(before, changes.text) == after
    assert (changes.text == "") == (before == after)


def test_hunks_say_where_they_go_and_what_they_follow() -> None:
    old = "url: u\ntitle: t\n\n## Tickets\nbutton#3 \"Save\"\nstatus \"Saving\"\nfooter"
    new = "url: u\ntitle: t\n\n## Tickets\nbutton#3 \"Save\"\nstatus \"Saved\"\nfooter"
    changes = changes_between(old, new)
    assert changes.text == ('@@ -6,1 +6,1 @@ button#3 "Save"\n'
                            '-status "Saving"\n+status "Saved"')
    assert (changes.added, changes.removed, changes.lines) == (1, 1, 7)
    assert changes.summary() == ("changes since the last view: +1 -1 of 7 lines; "
                                 "browse_view for the whole")
    inserted = changes_between("a\nb", "a\nnew\nb")
    assert inserted.text == "@@ -1,0 +2,1 @@ a\n+new"
    assert changes_between("a", "a").summary() == "no change since the last view of 1 lines"


def test_a_re_render_of_the_same_document_keeps_every_ref() -> None:
    snapshot = snapshot_from_json(_snapshot("form"))
    first = render_view(snapshot)
    again = render_view(snapshot, first_ref=first.next_ref, keep=_keys(first))
    assert again.text == first.text and again.refs == first.refs
    assert again.next_ref == first.next_ref  # nothing new: no number spent


def test_an_element_gone_and_one_new_change_only_their_lines() -> None:
    data = _snapshot("form")
    first = render_view(snapshot_from_json(data))
    changed = copy.deepcopy(data)
    nodes = changed["frames"][0]["nodes"]
    [named] = [n for n in nodes if n.get("backendDOMNodeId") == first.refs[min(first.refs)]
               .backend_node_id]
    named["backendDOMNodeId"] = 10_000_000  # the same control, re-made by a script
    again = render_view(snapshot_from_json(changed), first_ref=first.next_ref,
                        keep=_keys(first))
    assert min(first.refs) not in again.refs  # its old ref is refused as stale
    assert max(again.refs) == first.next_ref  # the new element: a number never given
    changes = changes_between(first.text, again.text)
    assert changes.added == changes.removed == 1, changes.text
    assert f"#{first.next_ref}" in changes.text
    assert apply_changes(first.text, changes.text) == again.text


def test_refs_of_another_document_are_not_kept() -> None:
    snapshot: PageSnapshot = snapshot_from_json(_snapshot("form"))
    first = render_view(snapshot)
    fresh = render_view(snapshot, first_ref=first.next_ref)  # no keep: a navigation
    assert min(fresh.refs) == first.next_ref
    assert re.sub(r"#\d+", "#N", fresh.text) == re.sub(r"#\d+", "#N", first.text)


def test_an_element_relabelled_gets_a_new_ref() -> None:
    """An app that re-uses a row for another file: the old ref must not reach it."""
    data = _snapshot("form")
    first = render_view(snapshot_from_json(data))
    number, element = next((n, r) for n, r in first.refs.items() if r.name)
    changed = copy.deepcopy(data)
    [node] = [n for n in changed["frames"][0]["nodes"]
              if n.get("backendDOMNodeId") == element.backend_node_id
              and n.get("name", {}).get("value") == element.name]
    node["name"]["value"] = "Another file"
    again = render_view(snapshot_from_json(changed), first_ref=first.next_ref,
                        keep=_keys(first))
    assert number not in again.refs
    assert again.refs[first.next_ref].backend_node_id == element.backend_node_id
    assert again.refs[first.next_ref].name == "Another file"


def test_refs_of_a_frame_whose_document_changed_are_not_kept() -> None:
    """A cross-site iframe that navigated to another site: the frame keeps its id, the
    new renderer process numbers its nodes from the start again, so the same backend id,
    role and label may be another element — whose old ref must not reach it. The other
    frames, their documents the same, keep their refs."""
    data = _snapshot("frames")
    for frame in data["frames"]:
        frame["loader_id"] = f"L-{frame['frame_id']}"
    first = render_view(snapshot_from_json(data))
    state = ViewState(first.refs, "L-F0", {f.frame_id: f for f in
                                            snapshot_from_json(data).frames},
                      next_ref=first.next_ref)
    navigated = copy.deepcopy(data)
    navigated["frames"][4]["loader_id"] = "L-F4-next-site"  # F4: the out-of-process frame
    snapshot = snapshot_from_json(navigated)
    again = render_view(snapshot, first_ref=first.next_ref,
                        keep=state.keys({f.frame_id: f.loader_id for f in snapshot.frames}))
    moved = {n for n, r in first.refs.items() if r.frame_id == "F4"}
    assert moved and moved.isdisjoint(again.refs)  # each got a number never given
    assert {n: r for n, r in again.refs.items() if r.frame_id != "F4"} == {
        n: r for n, r in first.refs.items() if r.frame_id != "F4"}


def test_an_unnamed_link_that_holds_another_text_gets_a_new_ref() -> None:
    """A list that re-uses its rows (a search's results, a virtual list): the link Chrome
    names nothing, labelled in the view by the text it holds, now holds another result —
    another link, whose old ref must not reach it."""
    def node(node_id: str, role: str, kids: list[str], name: str = "") -> dict[str, Any]:
        return {"nodeId": node_id, "ignored": False, "backendDOMNodeId": int(node_id),
                "role": {"type": "role", "value": role},
                "name": {"type": "computedString", "value": name}, "childIds": kids}

    def page(result: str) -> PageSnapshot:
        link = node("2", "link", ["3"])
        link["properties"] = [{"name": "url", "value": {"type": "string",
                                                        "value": "http://d/r/"}}]
        nodes = [node("1", "RootWebArea", ["2"], "docs"), link,
                 node("3", "article", ["4"]), node("4", "StaticText", [], result)]
        return snapshot_from_json({"url": "http://d/", "title": "docs", "frames": [{
            "frame_id": "F", "parent_frame_id": None, "session": "main",
            "url": "http://d/", "owner_backend_node_id": None, "nodes": nodes}]})

    first = render_view(page("Workers: scripts off the main thread"))
    again = render_view(page("Service workers: offline pages"), first_ref=first.next_ref,
                        keep=_keys(first))
    assert '#2 "Service workers: offline pages"' in again.text, again.text
    assert 1 not in again.refs
