"""``find`` and ``within`` (gateway.page.view.focus) on accessibility trees captured from
real Chromium (fixtures/ax): what is kept, what places it, and that the refs — the
whole view's — are untouched."""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path

import pytest

from gateway.errors import InvalidArgument, StaleRef
from gateway.page.view import (
    PageSnapshot,
    RefElement,
    View,
    find_lines,
    narrow_view,
    render_view,
    scopes_of,
    snapshot_from_json,
)

FIXTURES = Path(__file__).parents[2] / "fixtures" / "ax"
PAGES = ("news", "form", "landmarks", "frames", "tables", "shadow")


@cache
def snapshot(page: str) -> PageSnapshot:
    return snapshot_from_json(json.loads((FIXTURES / f"{page}.json").read_text()))


def body(view: View) -> str:
    return view.text.partition("\n\n")[2]


def test_find_keeps_matching_lines_under_their_heading_and_landmark() -> None:
    found = find_lines(body(render_view(snapshot("landmarks"))), "juveniles are")
    assert found.matched == 1
    assert found.text.split("\n") == [
        "main", "  article", "    # The European Robin", "    ## Identification",
        "    ### Juveniles", "    Juveniles are spotted brown and white."]


def test_find_keeps_enclosing_list_items_and_drops_siblings() -> None:
    found = find_lines(body(render_view(snapshot("landmarks"))), "Finches")
    lines = found.text.split("\n")
    assert lines == ['header', '  nav "Primary"', '    - #4 "Birds"->/birds/',
                     '      - #5 "Finches"->/birds/finches/']


@pytest.mark.parametrize("page", PAGES)
def test_every_found_line_is_a_line_of_the_view_in_order(page: str) -> None:
    lines = body(render_view(snapshot(page))).split("\n")
    found = find_lines("\n".join(lines), "/#[0-9]+/")
    kept = found.text.split("\n") if found.text else []
    it = iter(lines)
    assert all(line in it for line in kept)  # a subsequence: order and text unchanged
    assert found.total == sum(1 for line in lines if line.strip())
    assert found.matched == sum(1 for line in lines if re.search("#[0-9]+", line))


def test_find_is_case_insensitive_text_and_regex_is_re2() -> None:
    text = body(render_view(snapshot("form")))
    assert find_lines(text, "NEWSLETTER").matched == 1
    assert find_lines(text, "/^ *checkbox#2[4-6] /").matched == 3
    assert find_lines(text, "/(?i)NEWSLETTER/").matched == 1
    with pytest.raises(InvalidArgument, match="RE2"):
        find_lines(text, r"/(a)\1/")  # a backreference: RE2 has none


def test_no_match_leaves_no_lines() -> None:
    found = find_lines(body(render_view(snapshot("news"))), "no such text anywhere 8371")
    assert (found.text, found.matched) == ("", 0)
    assert found.total > 50


def test_narrowed_view_keeps_url_and_title_and_says_what_was_left() -> None:
    view = render_view(snapshot("form"))
    text, said = narrow_view(view, "volume", None)
    assert text.startswith(view.text.partition("\n\n")[0] + "\n\n")
    assert "slider#12 \"Volume\"" in text
    assert said is not None and said.startswith("1 of ") and "'volume'" in said
    assert narrow_view(view, None, None) == (view.text, None)


def ref_of(view: View, name: str) -> tuple[int, RefElement]:
    return next((n, t) for n, t in view.refs.items() if t.name == name)


def test_within_a_plain_control_is_the_part_around_it() -> None:
    snap = snapshot("form")
    view = render_view(snap)
    number, target = ref_of(view, "Free")
    scoped = render_view(snap, within=scopes_of(snap, target))
    assert scoped.refs == view.refs  # refs count over the whole page either way
    assert scoped.part_role == "group"  # a fieldset
    assert scoped.part is not None
    assert scoped.part.split("\n")[0] == 'group "Plan"'
    assert f"radio#{number} \"Free\"" in scoped.part
    assert "Volume" not in scoped.part


def test_within_a_control_that_holds_others_is_that_control() -> None:
    snap = snapshot("form")
    view = render_view(snap)
    _, target = ref_of(view, "Topics")
    scoped = render_view(snap, within=scopes_of(snap, target))
    assert scoped.part_role == "listbox"
    assert scoped.part is not None and scoped.part.startswith("listbox#18 \"Topics\" {#19")
    assert "\n" not in scoped.part


def test_within_a_control_in_a_table_is_its_table() -> None:
    snap = snapshot("tables")
    view = render_view(snap)
    in_table = [(n, t) for n, t in view.refs.items()
                if any(f"#{n} " in line and line.startswith("|")
                       for line in body(view).split("\n"))]
    assert in_table, "the tables fixture has a control in a table cell"
    number, target = in_table[0]
    scoped = render_view(snap, within=scopes_of(snap, target))
    assert scoped.part is not None and scoped.part_role in ("table", "grid", "treegrid")
    assert f"#{number} " in scoped.part
    assert all(line.startswith("|") or not line.startswith(" ")
               for line in scoped.part.split("\n"))


def test_within_an_element_gone_from_the_page_is_a_stale_ref() -> None:
    snap = snapshot("form")
    _, target = ref_of(render_view(snap), "Free")
    gone = RefElement(target.frame_id, target.session, 999_999_999, target.role, target.name)
    with pytest.raises(StaleRef, match="no longer in the page"):
        scopes_of(snap, gone)


@pytest.mark.parametrize("page", PAGES)
def test_within_every_ref_prints_its_line(page: str) -> None:
    snap = snapshot(page)
    view = render_view(snap)
    for number, target in view.refs.items():
        scoped = render_view(snap, within=scopes_of(snap, target))
        assert scoped.refs == view.refs
        assert scoped.part is not None, (page, number)
        assert re.search(f"#{number}[ ,}}]", scoped.part), (page, number, scoped.part)
