"""gateway.page.view on accessibility trees captured from real Chromium (fixtures/ax).

Golden tests pin the whole rendering of each fixture page, refs included, in
``tests/unit/golden/<page>.txt``. After a deliberate change to the format, or a
fresh capture (``.venv/bin/python fixtures/capture_ax.py``), regenerate them and
read the diff before committing::

    CSGW_UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/unit/test_view.py

The other tests state the rules on their own, so a golden regenerated in a
hurry cannot hide a broken rule; the fuzz tests feed broken trees that must
never make the renderer raise.
"""

from __future__ import annotations

import copy
import json
import re
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gateway.page.view import (
    URL_MAX,
    FrameSnapshot,
    PageSnapshot,
    RefElement,
    View,
    attribute_requests,
    render_view,
    snapshot_from_json,
)
from tests.golden import assert_golden

ROOT = Path(__file__).parents[2]
FIXTURES = ROOT / "fixtures" / "ax"
GOLDEN = Path(__file__).parent / "golden"
PAGES = ("news", "form", "landmarks", "frames", "tables", "shadow", "items")
NEWS_MAX_CHARS = 12_000

REF = re.compile(r"(?:^|(?<=[\s(|{,]))(?:[a-z]+)?#(\d+)(?= )", re.MULTILINE)
"""A ref in view text: ``button#3 ``, ``#7 "`` (a link), ``{#12 `` (an option)."""


@cache
def load(page: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / f"{page}.json").read_text())
    return data


def view_of(page: str) -> View:
    return render_view(snapshot_from_json(load(page)))


def golden_text(view: View) -> str:
    refs = "\n".join(f"#{n} {r.frame_id} {r.session} {r.backend_node_id} {r.role} "
                     f"{json.dumps(r.name, ensure_ascii=False)}" for n, r in view.refs.items())
    return f"{view.text}\n\n--- refs ---\n{refs}\n"


def ax_nodes(page: str, role: str) -> list[tuple[str, dict[str, Any]]]:
    """(frame_id, node) of every non-ignored node with ``role`` in a fixture."""
    return [(f["frame_id"], n) for f in load(page)["frames"] for n in f["nodes"]
            if n["role"]["value"] == role and not n.get("ignored")]


def line_of(view: View, needle: str) -> str:
    lines = [line for line in view.text.splitlines() if needle in line]
    assert len(lines) == 1, (needle, lines)
    return lines[0].strip()


# --- Goldens -----------------------------------------------------------------------------

@pytest.mark.parametrize("page", PAGES)
def test_golden(page: str) -> None:
    actual = golden_text(view_of(page))
    assert_golden(GOLDEN / f"{page}.txt", actual)


# --- Rules that hold on every page -------------------------------------------------------

@pytest.mark.parametrize("page", PAGES)
def test_refs_count_from_one_in_document_order(page: str) -> None:
    view = view_of(page)
    numbers = [int(n) for n in REF.findall(view.text)]
    assert numbers == list(range(1, len(numbers) + 1))
    assert list(view.refs) == numbers


@pytest.mark.parametrize("page", PAGES)
def test_each_ref_names_a_node_of_its_frame(page: str) -> None:
    frames = {f["frame_id"]: f for f in load(page)["frames"]}
    for ref in view_of(page).refs.values():
        frame = frames[ref.frame_id]
        assert ref.session == frame["session"]
        assert any(n.get("backendDOMNodeId") == ref.backend_node_id for n in frame["nodes"])


@pytest.mark.parametrize("page", PAGES)
def test_header_lines(page: str) -> None:
    data = load(page)
    first, second = view_of(page).text.splitlines()[:2]
    assert first == f"url: {data['url']}"
    assert second == f"title: {data['title']}"


@pytest.mark.parametrize("page", PAGES)
def test_every_visible_control_has_a_ref(page: str) -> None:
    """Links, buttons and fields Chrome did not ignore all come back as refs."""
    printed = {(r.frame_id, r.backend_node_id) for r in view_of(page).refs.values()}
    checked = 0
    for role in ("link", "button", "textbox", "checkbox", "radio", "combobox", "slider"):
        for frame_id, node in ax_nodes(page, role):
            if not inside_control(page, frame_id, node):
                assert (frame_id, node["backendDOMNodeId"]) in printed, (role, node["nodeId"])
                checked += 1
    assert checked >= 6


def inside_control(page: str, frame_id: str, node: dict[str, Any]) -> bool:
    """Whether an ancestor is itself a control (a date field's inner spin buttons)."""
    frame = next(f for f in load(page)["frames"] if f["frame_id"] == frame_id)
    by_id = {n["nodeId"]: n for n in frame["nodes"]}
    parent = by_id.get(node.get("parentId", ""))
    while parent is not None:
        if parent["role"]["value"] in ("Date", "InputTime", "combobox", "textbox"):
            return True
        parent = by_id.get(parent.get("parentId", ""))
    return False


# --- The news page: size, and every link with its destination ----------------------------

def test_news_view_fits_the_budget() -> None:
    assert len(view_of("news").text) <= NEWS_MAX_CHARS


def test_news_every_link_has_a_ref_and_a_destination() -> None:
    view = view_of("news")
    links = ax_nodes("news", "link")
    assert len(links) > 200
    link_refs = [n for n, r in view.refs.items() if r.role == "link"]
    assert sorted(view.refs[n].backend_node_id for n in link_refs) == sorted(
        n["backendDOMNodeId"] for _, n in links)
    for number in link_refs:
        shown = rf'(?:^|(?<=[\s(|]))#{number} (?:"(?:[^"\\]|\\.)*"|\[[^\]]+\])->\S'
        assert re.search(shown, view.text, re.MULTILINE), number


def test_news_destinations_are_short_and_exact() -> None:
    text = view_of("news").text
    assert '"lmarsh"->/user?id=lmarsh ' in text  # same origin: the path only
    assert '"More"->/news.html?p=2' in text
    assert "->https://github.com/lmarsh/sqlite-vecx " in text  # elsewhere: the full URL
    assert "->mailto:hn@ycombinator.com" in text
    assert "http://127.0.0.1:8000/" not in text.split("\n", 1)[1]  # own origin never spelled out


def test_news_layout_table_prints_a_line_per_row() -> None:
    """Chrome calls the 30-story table a data table (it has 20+ rows); it has no header,
    its rows differ in length, so it prints as lines, not as a pipe grid."""
    view = view_of("news")
    assert line_of(view, '"Rust 2027 edition roadmap"').startswith("3. #")
    assert not any(line.startswith("|") for line in view.text.splitlines())


def test_unnamed_controls_are_labelled_from_what_there_is() -> None:
    view = view_of("news")
    assert line_of(view, "/vote?id=46100041&").startswith('1. #11 "upvote"->')  # child's title
    assert line_of(view, "Search:") == "Search: textbox#223 [name=q]"  # name attribute
    assert view.text.splitlines()[3] == "#1 [unnamed]->https://news.ycombinator.com/"


# --- The form: values, options, ranges and flags -----------------------------------------

@pytest.mark.parametrize("expected", [
    'textbox#1 "Full name *" = "Ada Lovelace" (required)',
    'textbox#3 "Password" = "••••••••••••••"',
    'textbox#4 "Short bio" = "Mathematician. Wrote the first program.\\nLikes | pipes | and '
    '\\"quotes\\"."',
    'textbox#6 "Phone" = "+44 20 7946 0000" (readonly)',
    'textbox#7 "Member ID" = "M-1815" (disabled)',
    "textbox#8 [name=nickname]",
    "textbox#9 [id=middle-name]",
    'spinbutton#11 "Items per page" = 20 [10..100]',
    'slider#12 "Volume" = 7 [0..11]',
    'date#13 "Start date" = "2026-12-01"',
    'combobox#17 "Language" {English, *Français, Deutsch, 日本語, हिन्दी}',
    'listbox#18 "Topics" {#19 *Mathematics, #20 Physics, #21 *Poetry, #22 Sculpture (disabled)}'
    " (multiple)",
    'checkbox#24 "Send me the newsletter" (checked)',
    'checkbox#25 "Join the beta programme"',
    'checkbox#27 "Locked option" (checked, disabled)',
    'checkbox#28 "Select all notifications" (mixed)',
    'radio#30 "Pro" (checked)',
    'switch#34 "On" (checked)',
    'textbox#36 "Notes" = "Remember to back up the notebook."',  # contenteditable
    'listbox#37 "Favourite fruit" {#38 Apple, #39 *Banana, #40 Cherry (disabled)}',
    'combobox#41 "City" = "Lo" (expanded)',
    'progressbar "Upload progress" = 70 [0..100]',
    'summary#48 "Advanced options" (collapsed)',
    'button#56 "Bold" (pressed)',
    'button#58 "Close settings"',  # a symbol-only name gives way to the title
    'tab#61 "General" (selected)',
    'menuitemcheckbox#65 "Word wrap" (checked)',
    'treeitem#68 "src" (selected, expanded)',
])
def test_form_controls(expected: str) -> None:
    assert any(line.strip() == expected or line.strip().endswith(" " + expected)
               for line in view_of("form").text.splitlines()), expected


def test_form_labels_are_not_repeated_beside_their_fields() -> None:
    text = view_of("form").text
    assert "Full name *" in text and text.count("Full name *") == 1
    assert text.count("Favourite fruit") == 1
    assert "Profile\n" not in text  # the legend is the group's label line
    assert 'group "Profile"' in text


def test_form_hidden_input_is_absent() -> None:
    assert "s3cr3t-token" not in view_of("form").text


def test_option_refs_point_at_options() -> None:
    banana = next(n for _, n in ax_nodes("form", "option") if n["name"]["value"] == "Banana")
    assert view_of("form").refs[39] == RefElement("F0", "main", banana["backendDOMNodeId"],
                                                 "option", "Banana")


# --- Tables ------------------------------------------------------------------------------

def test_tables_are_markdown_grids() -> None:
    lines = view_of("tables").text.splitlines()
    head = lines.index('table "Open pull requests"')
    assert lines[head + 1] == "| # | Title | Author | Status | Actions |"
    assert lines[head + 2] == "| --- | --- | --- | --- | --- |"
    assert lines[head + 3].startswith('| 1042 | #1 "Fix \\| escaping in the CSV exporter"->/pr/')
    assert lines[head + 3].endswith('| button#2 "Merge" button#3 "Close" |')
    assert lines[head + 5].startswith("| 1047 |")  # the empty row between is dropped


def test_table_without_headers_has_no_separator() -> None:
    lines = view_of("tables").text.splitlines()
    first = lines.index("| linux | x86_64 \\| arm64 | ok |")
    assert lines[first + 1] == "| macos | arm64 | ok |"
    assert lines[first + 2] == '| windows | x86_64 | #9 "failed"->/builds/881 |'
    assert lines[first + 3] == ""  # the row of blank cells is dropped


def test_grid_cells_keep_their_refs() -> None:
    view = view_of("tables")
    row = line_of(view, "Notes for week 48")
    assert row == ('| 48 | #11 "Mia"->/people/mia | textbox#12 "Notes for week 48" = '
                   '"swap with raj?" |')
    assert view.refs[12].role == "textbox"


# --- Frames ------------------------------------------------------------------------------

def test_cross_site_frame_is_read_where_it_sits() -> None:
    view = view_of("frames")
    text = view.text
    assert (text.index("Payment is handled") < text.index('frame "Payment provider" '
            "http://localhost:8000/frame-cross.html") < text.index("## Help"))
    pay = next(n for n, r in view.refs.items() if r.name == "Pay £40.50")
    assert view.refs[pay].session == "oopif-1" and view.refs[pay].role == "button"
    assert f'  button#{pay} "Pay £40.50"' in text.splitlines()


def test_frame_inside_cross_site_frame() -> None:
    view = view_of("frames")
    assert '  frame "3-D Secure" http://localhost:8000/frame-nested.html' in view.text
    assert '    Verified by your bank. button#11 "Verify"' in view.text.splitlines()
    assert view.refs[11].session == "oopif-1"
    assert view.refs[11].frame_id != view.refs[8].frame_id


def test_same_origin_frames_belong_to_the_main_session() -> None:
    view = view_of("frames")
    assert 'frame "Order summary" /frame-same.html' in view.text
    assert 'frame "Note" about:srcdoc' in view.text
    apply = next(r for r in view.refs.values() if r.name == "Apply")
    assert apply.session == "main" and apply.frame_id == "F1"
    assert view.refs[10].name == "FAQ" and '#10 "FAQ"->#faq' in view.text  # its own document


def test_hidden_frame_is_absent() -> None:
    assert "Hidden frame" not in view_of("frames").text
    assert view_of("frames").text.count("Your order") == 1


def test_frames_without_a_known_owner_follow_their_parent() -> None:
    data = copy.deepcopy(load("frames"))
    for frame in data["frames"]:
        frame["owner_backend_node_id"] = None
    text = render_view(snapshot_from_json(data)).text
    assert text.index("## Help") < text.index('frame "Pay securely"')


def test_named_iframe_without_content_is_still_listed() -> None:
    data = copy.deepcopy(load("frames"))
    data["frames"] = [f for f in data["frames"] if f["session"] == "main"]
    assert 'frame "Payment provider" (no content)' in render_view(
        snapshot_from_json(data)).text


# --- Shadow DOM and landmarks ------------------------------------------------------------

def test_shadow_dom_controls_have_refs() -> None:
    view = view_of("shadow")
    names = {r.name: r.role for r in view.refs.values()}
    assert names["Follow ada"] == "button" and names["Follow grace"] == "button"
    assert names["Search components"] == "searchbox"
    assert names["Clear search"] == "button"  # nested shadow root, named by its title
    assert names["Secret field"] == "textbox"  # a closed root too
    assert 'radio#12 "3 stars" (checked)' in view.text


# --- Items a script made clickable (a file list) ------------------------------------------

def item_line(page: str, name: str) -> str:
    view = view_of(page)
    number = next(n for n, r in view.refs.items() if r.name == name)
    return line_of(view, f"item#{number} ")


def author_named(page: str) -> list[dict[str, Any]]:
    """Non-ignored nodes whose name Chrome took from an aria-label or a title attribute."""
    found = []
    for _, node in ax_nodes(page, "listitem") + ax_nodes(page, "generic"):
        used = [s for s in node["name"].get("sources", ())
                if "value" in s and not s.get("superseded")]
        if used and used[0]["type"] == "attribute" and used[0]["attribute"] in (
                "aria-label", "title"):
            found.append(node)
    return found


def test_items_named_by_their_author_get_refs() -> None:
    """A file list's items carry a title or an aria-label and no control's role; each
    gets a ref (role ``item``) on the very node Chrome named, so a click lands on it."""
    view = view_of("items")
    items = {r.name: r.backend_node_id for r in view.refs.values() if r.role == "item"}
    named = {node["name"]["value"]: node["backendDOMNodeId"] for node in author_named("items")}
    assert items == {name: backend for name, backend in named.items() if name != "Folder data"}
    assert set(items) == {"Home folder", "Name: draft.txt Size: 69 B Modified: 2026-11-29 21:58",
                          "Name: notes.md Size: 1 KB", "report.csv", "Release notes"}


def test_an_item_holding_a_control_leaves_the_ref_to_the_control() -> None:
    view = view_of("items")
    assert line_of(view, "Select data") == '- data checkbox#10 "Select data"'
    assert "Folder data" not in view.text


def test_an_item_prints_what_its_label_does_not_say() -> None:
    """On one line after its ref when it is small; a bigger one line by line below it."""
    assert item_line("items", "report.csv") == '- item#9 "report.csv"'  # its text is its label
    assert item_line("items", "Name: notes.md Size: 1 KB") == (
        '- item#8 "Name: notes.md Size: 1 KB" notes.mdyesterday')
    assert item_line("items", "Home folder") == 'item#6 "Home folder" /'
    lines = view_of("items").text.splitlines()
    notes = lines.index('item#11 "Release notes"')
    assert [line for line in lines[notes + 1:] if line] == [f"Change {i}" for i in range(1, 36)]


def test_names_from_contents_or_unfocused_titles_make_no_item() -> None:
    """A list item named by its own text is no item; nor is a span with a title (a date
    on a news line), which Chrome names nothing unless it is focusable."""
    view = view_of("items")
    assert line_of(view, "plain item") == "- plain item, no name of its author"
    assert line_of(view, "updated 1 hour ago") == "updated 1 hour ago"
    for page in PAGES[:-1]:  # pages without such items: not one ref more
        assert not author_named(page) or all(
            r.role != "item" for r in view_of(page).refs.values()), page


def test_an_item_name_must_be_the_one_chrome_used() -> None:
    """A title superseded by the contents (Chrome's own record) does not make an item."""
    data = copy.deepcopy(load("items"))
    node = next(n for n in data["frames"][0]["nodes"]
                if n.get("name", {}).get("value") == "report.csv" and n["role"]["value"]
                == "listitem")
    for source in node["name"]["sources"]:
        if source.get("attribute") == "aria-label":
            source["superseded"] = True
    node["name"]["sources"].append({"type": "contents",
                                    "value": {"type": "computedString", "value": "report.csv"}})
    view = render_view(snapshot_from_json(data))
    assert line_of(view, "report.csv") == "- report.csv"


def test_a_control_deep_in_a_big_item_is_looked_for_no_further_than_the_scan() -> None:
    """The scan for a control inside an item is bounded: past it, the item keeps its ref
    (and the control its own)."""
    data = copy.deepcopy(load("items"))
    nodes = data["frames"][0]["nodes"]
    notes = next(n for n in nodes if n.get("name", {}).get("value") == "Release notes")
    button = next(n for n in nodes if n.get("name", {}).get("value") == "Refresh")
    first = nodes[[n["nodeId"] for n in nodes].index(notes["childIds"][0])]
    first["childIds"] = [*first["childIds"], button["nodeId"]]  # near: the item loses its ref
    refs = render_view(snapshot_from_json(data)).refs.values()
    assert "Release notes" not in {r.name for r in refs}
    first["childIds"].pop()
    last = nodes[[n["nodeId"] for n in nodes].index(notes["childIds"][-1])]
    last["childIds"] = [*last["childIds"], button["nodeId"]]  # past the scan: both keep one
    refs = render_view(snapshot_from_json(data)).refs.values()
    assert {"Release notes", "Refresh"} <= {r.name for r in refs}


def test_landmarks_nest_with_short_labels() -> None:
    lines = view_of("landmarks").text.splitlines()
    for label in ("header", '  nav "Primary"', "  search", "main", '  nav "Breadcrumb"',
                  "  article", 'aside "Related"', 'dialog "Cookie notice"', "footer",
                  '  nav "Footer"'):
        assert label in lines, label
    assert "    # The European Robin" in lines
    assert "    ## Identification" in lines  # a section titled by its heading: no label
    assert "      - Heavier in winter" in lines  # nested list, two more spaces
    assert "    1. #13 \"Dawn chorus, Kent (spring)\"->" + (
        "https://xeno-canto.org/explore?query=erithacus+rubecula&area=europe&season=spri…") in lines


def test_long_urls_are_cut() -> None:
    for line in view_of("landmarks").text.splitlines():
        for url in re.findall(r"->(\S+)", line):
            assert len(url) <= URL_MAX


def test_hidden_content_is_absent() -> None:
    text = view_of("landmarks").text
    for hidden in ("Advert", "Seed deals", "Ghost button", "Hidden by", "Invisible link",
                   "hidden link", "Hidden attribute"):
        assert hidden not in text
    assert "Skip to content" in text  # visually hidden but not hidden from the tree


def test_blank_line_between_blocks_not_after_labels() -> None:
    text = view_of("landmarks").text
    assert "\n\naside \"Related\"\n  ## Related birds\n\n  - #16" in text


# --- attribute_requests and the JSON envelope --------------------------------------------

def test_attribute_requests_ask_only_for_unlabelled_controls() -> None:
    data = copy.deepcopy(load("form"))
    data["frames"][0]["attributes"] = {}
    asked = attribute_requests(snapshot_from_json(data))
    assert [b for _, b in asked] == sorted(int(k) for k in load("form")["frames"][0]["attributes"])
    assert attribute_requests(snapshot_from_json(load("form"))) == []


def test_unnamed_without_attributes() -> None:
    data = copy.deepcopy(load("form"))
    data["frames"][0]["attributes"] = {}
    text = render_view(snapshot_from_json(data)).text
    assert "textbox#8 [unnamed]" in text and "button#60 [unnamed]" in text


@pytest.mark.parametrize("bad", [
    [], {"url": "x"}, {"url": "x", "frames": []}, {"url": 1, "frames": [{}]},
    {"url": "x", "frames": [{"frame_id": "F", "session": "s", "url": "u", "nodes": {}}]},
    {"url": "x", "frames": [{"frame_id": "F", "session": "s", "url": "u", "nodes": [],
                             "attributes": {"x": {}}}]},
    {"url": "x", "frames": [{"frame_id": "F", "session": "s", "url": "u", "nodes": [],
                             "owner_backend_node_id": "7"}]},
    {"url": "x", "frames": [{"frame_id": 3, "session": "s", "url": "u", "nodes": []}]},
])
def test_snapshot_from_json_refuses_a_wrong_envelope(bad: Any) -> None:
    with pytest.raises(ValueError):
        snapshot_from_json(bad)


def test_refs_can_count_on_from_an_earlier_view() -> None:
    first = view_of("shadow")
    later = render_view(snapshot_from_json(load("shadow")), first_ref=101)
    assert list(later.refs) == [n + 100 for n in first.refs]
    assert list(later.refs.values()) == list(first.refs.values())
    assert [int(n) for n in REF.findall(later.text)] == list(later.refs)
    assert later.text == re.sub(r"#(\d+)(?= )", lambda m: f"#{int(m[1]) + 100}", first.text)
    with pytest.raises(ValueError):
        render_view(snapshot_from_json(load("shadow")), first_ref=0)


def test_empty_tree() -> None:
    snapshot = PageSnapshot("about:blank", "", [FrameSnapshot("F", None, "s", "about:blank",
                                                              None, [])])
    assert render_view(snapshot) == View("url: about:blank\ntitle: ", {})


# --- Fuzz: broken trees never raise ------------------------------------------------------

ROLES = ["RootWebArea", "generic", "StaticText", "link", "button", "textbox", "combobox",
         "listbox", "option", "MenuListPopup", "table", "row", "cell", "columnheader",
         "LayoutTable", "heading", "list", "listitem", "ListMarker", "navigation", "region",
         "group", "Iframe", "image", "slider", "treeitem", "LabelText", "paragraph",
         "blockquote", "LineBreak", "InlineTextBox", "progressbar", "none", ""]
JSON = st.recursive(st.none() | st.booleans() | st.integers(-3, 3) | st.floats(allow_nan=True)
                    | st.text(max_size=5),
                    lambda inner: st.lists(inner, max_size=3)
                    | st.dictionaries(st.text(max_size=3), inner, max_size=3), max_leaves=6)
IDS = st.sampled_from([str(i) for i in range(12)])
PROPERTIES = st.lists(st.fixed_dictionaries({
    "name": st.sampled_from(["url", "level", "checked", "expanded", "selected", "disabled",
                             "valuemin", "valuemax", "focusable", "editable", "required"]),
    "value": st.fixed_dictionaries({"value": JSON})}), max_size=4)
NODE = st.fixed_dictionaries(
    {"nodeId": IDS},
    optional={
        "role": st.fixed_dictionaries({"value": st.sampled_from(ROLES) | JSON}),
        "name": st.fixed_dictionaries({"value": st.text(max_size=8) | JSON},
                                      optional={"sources": JSON}),
        "value": st.fixed_dictionaries({"value": JSON}),
        "description": JSON,
        "ignored": st.booleans() | JSON,
        "childIds": st.lists(IDS | JSON, max_size=4),
        "parentId": IDS | JSON,
        "backendDOMNodeId": st.integers(0, 12) | JSON,
        "properties": PROPERTIES | JSON,
    })


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(frames=st.lists(st.tuples(st.lists(NODE | JSON, max_size=14),
                                 st.sampled_from([None, "F0", "F1", "F2"]),
                                 st.none() | st.integers(0, 12)), min_size=1, max_size=3))
def test_random_trees_never_raise(frames: list[tuple[list[Any], str | None, int | None]]) -> None:
    snapshot = PageSnapshot("http://a.test/", "t", [
        FrameSnapshot(f"F{i}", parent, "main", "http://a.test/x", owner, nodes,
                      {1: {"name": "n"}}) for i, (nodes, parent, owner) in enumerate(frames)])
    view = render_view(snapshot)
    assert list(view.refs) == list(range(1, len(view.refs) + 1))
    attribute_requests(snapshot)


MUTATIONS = st.lists(st.tuples(st.integers(0, 10_000), st.sampled_from(
    ["drop", "role", "children", "cycle", "ignore", "junk", "name"]), JSON), max_size=25)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(page=st.sampled_from(["form", "frames", "tables", "landmarks", "items"]),
       mutations=MUTATIONS)
def test_mutated_fixtures_never_raise(page: str, mutations: list[tuple[int, str, Any]]) -> None:
    data = copy.deepcopy(load(page))
    for where, kind, junk in mutations:
        frame = data["frames"][where % len(data["frames"])]
        nodes = frame["nodes"]
        if not nodes:
            continue
        node = nodes[where % len(nodes)]
        if kind == "drop":
            nodes.remove(node)
        elif kind == "role":
            node["role"] = {"value": ROLES[where % len(ROLES)]}
        elif kind == "children":
            node["childIds"] = junk if not isinstance(junk, list) else [*junk, node["nodeId"]]
        elif kind == "cycle":
            node["childIds"] = [nodes[0]["nodeId"], node["nodeId"]]
        elif kind == "ignore":
            node["ignored"] = not node.get("ignored")
        elif kind == "junk":
            node[["properties", "value", "name", "backendDOMNodeId"][where % 4]] = junk
        else:
            node["name"] = {"value": junk}
    view = render_view(snapshot_from_json(data))
    assert list(view.refs) == list(range(1, len(view.refs) + 1))


@pytest.mark.parametrize(("depth", "shown"), [(60, True), (5_000, False)])
def test_deep_trees_do_not_exhaust_the_stack(depth: int, shown: bool) -> None:
    """Nesting of every kind down to a button: printed when sane, cut off when absurd."""
    roles = ["generic", "list", "listitem", "table", "row", "cell", "navigation", "group"]
    nodes = [{"nodeId": str(i), "role": {"value": roles[i % len(roles)]},
              "name": {"value": "n" if i % 7 == 0 else ""}, "childIds": [str(i + 1)],
              "backendDOMNodeId": i} for i in range(depth)]
    nodes.append({"nodeId": str(depth), "role": {"value": "button"},
                  "name": {"value": "deep"}, "backendDOMNodeId": depth})
    snapshot = PageSnapshot("http://a.test/", "t", [
        FrameSnapshot("F", None, "s", "http://a.test/", None, nodes)])
    view = render_view(snapshot)
    assert ('button#1 "deep"' in view.text) is shown
    assert list(view.refs) == ([1] if shown else [])


def test_huge_names_are_cut_in_control_lines() -> None:
    """A page can give a control a 1 MB accessible name; its line stays one short line."""
    huge = "n" * 1_000_000
    roles = ["button", "link", "heading", "image", "textbox", "checkbox"]
    nodes: list[dict[str, Any]] = [{"nodeId": "0", "role": {"value": "RootWebArea"},
                                    "childIds": [str(i + 1) for i in range(len(roles))]}]
    nodes += [{"nodeId": str(i + 1), "role": {"value": role}, "name": {"value": huge},
               "backendDOMNodeId": i + 1, "properties": [{"name": "level", "value": {"value": 2}}]}
              for i, role in enumerate(roles)]
    snapshot = PageSnapshot("http://a.test/", "t", [
        FrameSnapshot("F", None, "s", "http://a.test/", None, nodes)])
    view = render_view(snapshot)
    assert len(view.refs) >= 4  # button, link, textbox, checkbox at least
    lines = [line for line in view.text.splitlines()[2:] if line]
    assert len(lines) >= 4
    for line in lines:
        assert len(line) <= 300 and line.endswith('…"'), line[:120]


def test_a_page_view_reads_as_lines_and_a_failed_step_says_why() -> None:
    """What a model reads of browse_act: the header, one line of steps naming the one
    that failed and why, then the view (``ActResult.as_text``)."""
    from gateway.page.act.models import StepResult
    from gateway.tools.view import ActResult

    result = ActResult(tab=3, target="devvm", url="https://example.com/", refs=2,
                       view="url: https://example.com/\ntitle: Example\n\nbutton#7 \"Go\"",
                       steps=[StepResult(do="scroll", ok=True),
                              StepResult(do="click", ok=False, error="ref #9 is gone")])
    assert result.as_text().split("\n") == [
        "tab 3 on devvm (2 refs)", "steps: scroll; click failed: ref #9 is gone",
        "url: https://example.com/", "title: Example", "", 'button#7 "Go"']
    cut = ActResult(tab=3, target="devvm", url="u", refs=0, view="v", steps=[],
                    truncated=True)
    assert cut.as_text().startswith("tab 3 on devvm (0 refs) (view truncated: raise "
                                    "max_chars)\n")


def test_a_link_chrome_left_unnamed_is_labelled_by_the_text_inside_it() -> None:
    """A search result as MkDocs Material makes it: a link around an article (title and
    summary), which Chrome names from nothing; the person reads its text to choose it."""
    def node(node_id: str, role: str, kids: list[str], name: str = "",
             backend: int | None = None) -> dict[str, Any]:
        made: dict[str, Any] = {"nodeId": node_id, "ignored": False,
                                "role": {"type": "role", "value": role},
                                "name": {"type": "computedString", "value": name},
                                "childIds": kids}
        if backend is not None:
            made["backendDOMNodeId"] = backend
        return made
    nodes = [
        node("1", "RootWebArea", ["2"], "docs", 1),
        node("2", "link", ["3"], "", 2),
        node("3", "article", ["4", "6"], "", 3),
        node("4", "heading", ["5"], "Workers", 4),
        node("5", "StaticText", [], "Workers", 5),
        node("6", "paragraph", ["7"], "", 6),
        node("7", "StaticText", [], "A web worker runs scripts off the main thread.", 7),
    ]
    nodes[1]["properties"] = [{"name": "url", "value": {"type": "string",
                                                        "value": "http://d/workers/"}}]
    snapshot = snapshot_from_json({"url": "http://d/", "title": "docs", "frames": [{
        "frame_id": "F", "parent_frame_id": None, "session": "main", "url": "http://d/",
        "owner_backend_node_id": None, "nodes": nodes}]})
    text = render_view(snapshot).text
    assert '#1 "Workers A web worker runs scripts off the main thread."->/workers/' in text, text
