"""Long runs of rows and items shortened in the whole view (``gateway.page.view.compact``),
every row still found by ``find`` and acted on by its ref."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from gateway.page.view import narrow_view, render_view, snapshot_from_json
from gateway.page.view.compact import KEEP, RUN_MAX, compact_runs

AX = Path(__file__).parents[2] / "fixtures" / "ax"
MORE = "like these: browse_view find (their text) shows them"


def _table(rows: int) -> list[str]:
    return ["| id | name |", "| --- | --- |", *(f"| {i} | #{i} \"row {i}\" |"
                                               for i in range(rows))]


def test_a_long_table_keeps_its_head_and_first_rows_and_says_how_many_more() -> None:
    lines = ["url: u", "title: t", "", "## Trips", *_table(100), "", "footer"]
    shown = compact_runs("\n".join(lines)).split("\n")
    assert shown[:4 + KEEP] == lines[:4 + KEEP]  # the head, the separator, the first rows
    assert shown[4 + KEEP] == f"… {102 - KEEP} more rows {MORE}"
    assert shown[4 + KEEP + 1:] == ["", "footer"]


def test_a_run_up_to_the_limit_is_left_whole() -> None:
    text = "\n".join(_table(RUN_MAX - 2))
    assert compact_runs(text) == text


def test_list_items_go_with_their_own_deeper_lines_and_keep_their_indent() -> None:
    items = [line for i in range(40) for line in (f"  - item {i}", f"    detail {i}")]
    shown = compact_runs("\n".join(["nav", *items, "after"])).split("\n")
    assert shown[1:1 + 2 * KEEP] == items[:2 * KEEP]
    assert shown[1 + 2 * KEEP] == f"  … {40 - KEEP} more items {MORE}"
    assert shown[-1] == "after"


def test_a_long_list_nested_in_an_item_is_shortened_too() -> None:
    """A site's navigation: a few sections, one holding a hundred pages, indented under
    its item with no blank line (``render.bullet_list``) — its own run."""
    pages = [f"  - #{i} \"page {i}\"->/p/{i}" for i in range(100)]
    lines = ["- Guide", "- Reference", *pages, "- About"]
    shown = compact_runs("\n".join(lines)).split("\n")
    assert shown == ["- Guide", "- Reference", *pages[:KEEP],
                     f"  … {100 - KEEP} more items {MORE}", "- About"]


def test_runs_of_other_kinds_or_indents_are_apart() -> None:
    mixed = [f"- a{i}" if i % 2 else f"1. b{i}" for i in range(80)]
    assert compact_runs("\n".join(mixed)) == "\n".join(mixed)
    tables = [line for i in range(20) for line in (*_table(2), "")]  # many short ones
    assert compact_runs("\n".join(tables)) == "\n".join(tables)


def test_on_a_captured_table_made_long_find_and_refs_still_reach_every_row() -> None:
    data: dict[str, Any] = json.loads((AX / "tables.json").read_text())
    view = render_view(snapshot_from_json(_longer(data, 60)))
    whole = compact_runs(view.text)
    assert len(whole) < len(view.text) and "more rows like these" in whole
    hidden = [line for line in view.text.split("\n") if line not in whole.split("\n")]
    assert hidden, "rows were left out of the whole view"
    target = hidden[-1].split("|")[1].strip()
    found, said = narrow_view(view, target, None)
    assert hidden[-1] in found.split("\n") and said is not None


def _longer(data: dict[str, Any], copies: int) -> dict[str, Any]:
    """The snapshot with its first table's first body row repeated ``copies`` times, each
    copy's nodes given new ids and texts (a long table as a data browser makes one)."""
    data = copy.deepcopy(data)
    nodes: list[dict[str, Any]] = data["frames"][0]["nodes"]
    by_id = {n["nodeId"]: n for n in nodes}
    row = next(n for n in nodes if n.get("role", {}).get("value") == "row"
               and any(by_id[c].get("role", {}).get("value") == "cell"
                       for c in n.get("childIds", []) if c in by_id))
    parent = next(n for n in nodes if row["nodeId"] in n.get("childIds", []))
    made = 0

    def clone(node: dict[str, Any], copy_no: int) -> str:
        nonlocal made
        made += 1
        new = copy.deepcopy(node)
        new["nodeId"] = f"x{copy_no}-{made}"
        if "backendDOMNodeId" in new:
            new["backendDOMNodeId"] = 900_000 + made
        name = new.get("name")
        if isinstance(name, dict) and name.get("value"):
            name["value"] = f"{name['value']} copy {copy_no}"
        new["childIds"] = [clone(by_id[c], copy_no) for c in node.get("childIds", [])
                           if c in by_id]
        nodes.append(new)
        return str(new["nodeId"])

    at = parent["childIds"].index(row["nodeId"]) + 1
    parent["childIds"][at:at] = [clone(row, i) for i in range(copies)]
    return data
