"""Long runs of same-shaped lines shortened: a data table's hundred rows, a list's items.

A table of thousands of rows (a data browser, an admin's change list) is most of a view
and says the same thing in every row; a model reads the first ones to learn the shape,
then asks for the rows it wants. So a run of more than ``RUN_MAX`` table rows or list
items at one indent keeps its first ``KEEP`` and one line that says how many more there
are and how to see them — ``browse_view``'s ``find`` (the lines that match), which
reads the whole page, as do the refs: every row stays reachable, and a ref of a row not
shown still acts. A list item's own deeper lines (its nested list, its text) go with
it, and a long list nested in an item shown is shortened in turn.

Pure, on the rendered text: tested in ``tests/unit/test_view_compact.py``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

__all__ = ["KEEP", "RUN_MAX", "compact_runs"]

RUN_MAX = 30
"""A run longer than this is shortened."""
KEEP = 20
"""The lines of a shortened run that are kept: its first (a table's head among them)."""
_ITEM = re.compile(r"(\s*)(\| |- |\d+\. )")


def compact_runs(text: str, left_out: list[str] | None = None) -> str:
    """``text`` with each run of more than ``RUN_MAX`` same-shaped rows or items cut to
    its first ``KEEP`` and a line saying how many more and how to see them; the lines
    cut are added to ``left_out`` when it is given (a change there shows in no change
    set, so the header of one says so)."""
    return "\n".join(_compacted(text.split("\n"), [] if left_out is None else left_out))


def _compacted(lines: list[str], left_out: list[str]) -> list[str]:
    """``compact_runs`` on lines, and on the deeper lines of each item kept: a list
    nested in an item (a site's navigation, a file tree) is a run of its own."""
    out: list[str] = []
    for indent, kind, groups in _runs(lines):
        shown = groups if kind is None or len(groups) <= RUN_MAX else groups[:KEEP]
        for head, *deeper in shown:
            out.append(head)
            out.extend(_compacted(deeper, left_out) if deeper else ())
        if len(shown) < len(groups):
            left_out.extend(line for group in groups[len(shown):] for line in group)
            what = "rows" if kind == "| " else "items"
            out.append(f"{indent}… {len(groups) - KEEP} more {what} like these: "
                       "browse_view find (their text) shows them")
    return out


def _runs(lines: list[str]) -> Iterator[tuple[str, str | None, list[list[str]]]]:
    """The lines as runs: (indent, kind, groups) where each group is one row or item and
    the deeper lines under it; a line of no kind is a run of one with kind None."""
    i = 0
    while i < len(lines):
        head = _ITEM.match(lines[i])
        if head is None:
            yield "", None, [[lines[i]]]
            i += 1
            continue
        indent, kind = head[1], _kind(head[2])
        groups: list[list[str]] = []
        while i < len(lines):
            again = _ITEM.match(lines[i])
            if again is None or again[1] != indent or _kind(again[2]) != kind:
                break
            group = [lines[i]]
            i += 1
            while i < len(lines) and _deeper(lines[i], indent):
                group.append(lines[i])
                i += 1
            groups.append(group)
        yield indent, kind, groups


def _kind(marker: str) -> str:
    return "1. " if marker[0].isdigit() else marker


def _deeper(line: str, indent: str) -> bool:
    return len(line) - len(line.lstrip(" ")) > len(indent) and line.strip() != ""
