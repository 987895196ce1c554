"""Narrowing a rendered view: the lines that match (``find``), or one part (``within``).

A long page costs a model thousands of tokens to read for one thing on it. ``find``
keeps the lines that match, each under the lines that place it — the heading it
sits under (and that heading's own parents) and the landmark, group, list item or
frame it is indented in — so the result reads as the view with the rest left out.
Refs are printed as rendered: the tab's remembered view stays the whole one, so a
ref from a found line acts like any other.

``within`` names the part of the page a ref's element sits in: the element itself
when it holds more than its own text (a listbox, a tree), else the nearest list
item, landmark, section, form, named group or table around it — the renderer then
prints that node's lines alone (``render_view(..., within=…)``).

Patterns from agents: plain text matches case-insensitively; ``/regex/`` runs on RE2
(linear time, no catastrophic backtracking), as the network filters do.

Pure: tested on the captured trees (``tests/unit/test_view_focus.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from gateway.errors import InvalidArgument, StaleRef
from gateway.page.view.nodes import backend_id_of, holds_control, role_of
from gateway.page.view.roles import CONTAINERS, NAMED_CONTAINERS, TABLES
from gateway.tabs.network_log import url_matcher

if TYPE_CHECKING:
    from collections.abc import Callable

    from gateway.page.view.model import AXNode, PageSnapshot, RefElement, View

__all__ = ["Found", "find_lines", "line_matcher", "narrow_view", "scopes_of"]

SCOPE_ROLES = frozenset({*CONTAINERS, *NAMED_CONTAINERS, *TABLES, "listitem",
                         "LayoutTableRow", "LayoutTable", "RootWebArea"})
"""What ``within`` widens a plain control to: the nearest of these around it (at worst
its frame's document). A data table's cells and rows are not lines of their own (a cell
is inline), so a control in one gets its table; a layout table's row (a news site's
story line) is."""
MAX_SCAN = 10_000  # nodes looked at below a control for others it holds
PART_NAMES = {**CONTAINERS, "listitem": "list item", "LayoutTableRow": "row",
              "LayoutTable": "table", "RootWebArea": "page"}
"""A part's role as the view's header names it."""


@dataclass(frozen=True)
class Found:
    """The lines kept (``text``), how many matched and how many the body had."""

    text: str
    matched: int
    total: int


def line_matcher(pattern: str) -> Callable[[str], bool]:
    """What ``find`` matches a line with; ``InvalidArgument`` for a regex RE2 refuses."""
    if len(pattern) >= 2 and pattern.startswith("/") and pattern.endswith("/"):
        try:
            return url_matcher(pattern)
        except ValueError as exc:
            raise InvalidArgument(f"find {pattern[:100]!r} is not a regex RE2 accepts "
                                  f"({exc}); backreferences and look-arounds are not "
                                  "supported — or pass plain text") from None
    folded = pattern.casefold()
    return lambda line: folded in line.casefold()


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _heading_level(line: str) -> int:
    """1-6 for a ``## text`` line, 7 for any other."""
    text = line.lstrip(" ")
    hashes = len(text) - len(text.lstrip("#"))
    return hashes if 1 <= hashes <= 6 and text[hashes:hashes + 1] == " " else 7


def find_lines(body: str, pattern: str) -> Found:
    """The lines of ``body`` (a view below its url/title lines) that match ``pattern``,
    each with the lines it sits under, in document order.

    One pass with a stack of the lines that may enclose the next: a line encloses
    those indented deeper than it, and a heading those at its own indentation until
    a heading of its level or higher (the view indents landmark content, not a
    heading's section)."""
    matches = line_matcher(pattern)
    lines = body.split("\n")
    stack: list[tuple[int, int, int]] = []  # (indent, heading level, line index)
    keep: set[int] = set()
    matched = total = 0
    for index, line in enumerate(lines):
        if not line.strip():
            continue
        total += 1
        indent, level = _indent(line), _heading_level(line)
        while stack and not (stack[-1][0] < indent
                             or (stack[-1][0] == indent and stack[-1][1] < level)):
            stack.pop()
        if matches(line.lstrip(" ")):
            matched += 1
            keep.add(index)
            keep.update(entry[2] for entry in stack)
        stack.append((indent, level, index))
    return Found("\n".join(lines[i] for i in sorted(keep)), matched, total)


def narrow_view(view: View, find: str | None, within: int | None
                ) -> tuple[str, str | None]:
    """The text of ``view`` to show — its url/title lines kept, the body narrowed to the
    ``within`` part (``view`` rendered with it) and then to the lines ``find`` matches —
    and what the narrowing left, for the view's header (None: nothing was narrowed)."""
    if find is None and within is None:
        return view.text, None
    header, _, body = view.text.partition("\n\n")
    said = []
    if within is not None:
        body = view.part or ""
        part = PART_NAMES.get(view.part_role, view.part_role) or "page"
        said.append(f"within the {part} holding #{within}")
    if find is not None:
        found = find_lines(body, find)
        body = found.text
        said.append(f"{found.matched} of {found.total} lines match {find[:100]!r}")
    return header + ("\n\n" + body if body else ""), ", ".join(said)


def scopes_of(snapshot: PageSnapshot, element: RefElement) -> list[AXNode]:
    """The nodes ``within`` a ref may print, innermost first: the ref's element if it
    holds other nodes than its text, then each part of the page around it
    (``SCOPE_ROLES``); the renderer prints the first it can. ``StaleRef`` when the
    element is no longer in the page."""
    frame = next((f for f in snapshot.frames if f.frame_id == element.frame_id), None)
    nodes = {n.get("nodeId"): n for n in (frame.nodes if frame is not None else ())
             if type(n) is dict}
    node = next((n for n in nodes.values()
                 if backend_id_of(n) == element.backend_node_id and n.get("ignored") is not True),
                None)
    if node is None:
        raise StaleRef(f'{element.role} "{element.name}" is no longer in the page; call '
                       "browse_view for fresh refs")
    # A control holding others (a listbox its options, a tree its items) is a part of its
    # own; a field holding its editor's text is not.
    scopes = [node] if holds_control(nodes, node, MAX_SCAN) else []
    seen = {node.get("nodeId")}
    parent = nodes.get(node.get("parentId"))
    while parent is not None and parent.get("nodeId") not in seen:
        seen.add(parent.get("nodeId"))
        if parent.get("ignored") is not True and role_of(parent) in SCOPE_ROLES:
            scopes.append(parent)
        parent = nodes.get(parent.get("parentId"))
    return scopes
