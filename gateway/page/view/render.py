"""The renderer: one pass over every frame in document order, printing by role.

The format it writes is described in the package docstring (``gateway.page.view``).
Each role has a handler (``_Renderer.handlers``); a role with none is a wrapper
whose children alone show. Controls are numbered and described by ``Controls``.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from gateway.page.view.controls import Controls, RefKey
from gateway.page.view.items import author_name, fits_a_line, is_item, label_says_all
from gateway.page.view.labels import (
    attribute_label,
    ax_label,
    contents_label,
    duplicate_labels,
    flags_of,
)
from gateway.page.view.model import AXNode, PageSnapshot, View
from gateway.page.view.nodes import (
    Frame,
    ax_string,
    backend_id_of,
    first_heading_text,
    hoist,
    index_frames,
    is_control,
    list_marker,
    name_of,
    props_of,
    role_of,
)
from gateway.page.view.out import Out
from gateway.page.view.roles import (
    BLOCKS,
    CAPTIONS,
    CELLS,
    CONTAINERS,
    HEADERS,
    MAX_DEPTH,
    NAME_MAX,
    NAMED_CONTAINERS,
    NAMED_ITEMS,
    REF_ROLES,
    ROLE_LABELS,
    ROWS,
    SKIPPED,
    TABLES,
)
from gateway.page.view.text import quote, squash

__all__ = ["render_view"]


def render_view(snapshot: PageSnapshot, *, first_ref: int = 1,
                within: Sequence[AXNode] = (), keep: Mapping[RefKey, int] | None = None,
                ) -> View:
    """The view of a page: header lines, then every frame in document order, with refs.

    New refs are numbered from ``first_ref`` on: a caller that keeps counting across
    views of one tab makes sure a number never names two elements. ``keep``: the
    numbers the last view of the same document gave (``ViewState.keys``); an element
    still there keeps its own.

    ``within``: nodes of the snapshot (``focus.scopes_of``), innermost first; the
    view's ``part`` is then the lines of the first one printed on lines of its own
    (not inside a table cell), and ``part_role`` its role. Refs are numbered over the
    whole page either way.
    """
    if first_ref < 1:
        raise ValueError(f"first_ref must be 1 or more, not {first_ref}")
    renderer = _Renderer(snapshot, first_ref, keep)
    renderer.scopes = {id(node) for node in within}
    out = Out()
    for root in index_frames(snapshot):
        renderer.render_frame(root, out, 0)
    body = out.result()
    header = f"url: {snapshot.url}\ntitle: {squash(snapshot.title)}"
    part = next((renderer.parts[id(node)] for node in within if id(node) in renderer.parts),
                None)
    return View(header + ("\n\n" + body if body else ""), renderer.refs,
                next_ref=renderer.next_ref,
                part=None if part is None else _lines(out.lines[part[0]:part[1]]),
                part_role="" if part is None else part[2])


def _lines(lines: list[str]) -> str:
    """A part's lines without the blank lines around it, and without its indentation."""
    return textwrap.dedent("\n".join(lines)).strip("\n")


_Handler = Callable[[Frame, AXNode, str, Out, int], None]
"""How the renderer prints one role: (frame, node, role, out, depth)."""


class _Renderer(Controls):
    """One pass over all frames in document order, numbering refs as it prints them."""

    def __init__(self, snapshot: PageSnapshot, first_ref: int,
                 keep: Mapping[RefKey, int] | None) -> None:
        super().__init__(snapshot.url, first_ref, keep)
        self.frames_done: set[int] = set()
        self.scopes: set[int] = set()  # ids of ``within`` nodes, not yet printed
        self.parts: dict[int, tuple[int, int, str]] = {}  # their lines: (start, end, role)
        self.list_depth = 0  # lists inside list items indent
        self.handlers: dict[str, _Handler] = {
            "StaticText": self.text, "LineBreak": self.line_break, "heading": self.heading,
            "image": self.image, "listitem": self.list_item, "generic": self.generic,
            "Iframe": self.iframe,
            "blockquote": self.quote,
            **dict.fromkeys(TABLES, self.table),
            **dict.fromkeys(NAMED_ITEMS, self.named_item),
            **dict.fromkeys(BLOCKS, self.block),
            **dict.fromkeys(NAMED_CONTAINERS, self.group),
            **dict.fromkeys(CONTAINERS, self.container),
        }

    # Traversal -------------------------------------------------------------------------

    def kids(self, frame: Frame, node: AXNode) -> list[AXNode]:
        """Children as printed: ignored nodes replaced by their own children, each node once."""
        ids = node.get("childIds")
        if type(ids) is not list:
            return []
        nodes, seen = frame.nodes, frame.seen
        out: list[AXNode] = []
        for child_id in ids:
            if type(child_id) is not str or child_id in seen:
                continue
            child = nodes.get(child_id)
            if child is None:
                continue
            seen.add(child_id)
            if child.get("ignored") is True:
                hoist(frame, child, out)
            else:
                out.append(child)
        return out

    def render_frame(self, frame: Frame, out: Out, depth: int) -> None:
        if frame.index in self.frames_done or frame.root is None:
            return
        self.frames_done.add(frame.index)
        root_id = frame.root["nodeId"]
        if root_id not in frame.seen:
            frame.seen.add(root_id)
            self.visit(frame, frame.root, role_of(frame.root), out, depth)
        for child in frame.trailing:
            self.embed(frame, child, "", out, depth)

    def children(self, frame: Frame, node: AXNode, out: Out, depth: int,
                 parent_name: str = "") -> None:
        kids = self.kids(frame, node)
        roles = list(map(role_of, kids))
        flowing = "StaticText" in roles
        skip = duplicate_labels(frame, kids, roles, parent_name) if len(kids) > 1 else ()
        depth += 1
        for i, kid in enumerate(kids):
            if i in skip:
                continue
            role = roles[i]
            if role == "StaticText":
                out.text(ax_string(kid.get("name")))
            elif flowing:
                self.visit(frame, kid, role, out, depth)
            else:
                out.newline()
                self.visit(frame, kid, role, out, depth)
                out.newline()

    def visit(self, frame: Frame, node: AXNode, role: str, out: Out, depth: int) -> None:
        """Print one node (and what it holds) by what its role calls for."""
        if role in SKIPPED or depth > MAX_DEPTH:
            return
        if self.scopes and id(node) in self.scopes and not out.inline:
            self.scopes.discard(id(node))
            out.newline()  # the part starts a line of its own
            start = len(out.lines)
            self.visit(frame, node, role, out, depth)
            out.newline()
            self.parts[id(node)] = (start, len(out.lines), role)
            return
        if is_control(node, role):
            self.control(frame, node, role, props_of(node), out, depth)
            return
        handler = self.handlers.get(role)
        if handler is None:  # a wrapper: only its children show
            self.children(frame, node, out, depth)
        else:
            handler(frame, node, role, out, depth)

    # One role each (``handlers``) -----------------------------------------------------

    def text(self, frame: Frame, node: AXNode, role: str, out: Out, depth: int) -> None:
        out.text(ax_string(node.get("name")))

    def line_break(self, frame: Frame, node: AXNode, role: str, out: Out, depth: int) -> None:
        out.newline()

    def heading(self, frame: Frame, node: AXNode, role: str, out: Out, depth: int) -> None:
        level = props_of(node).get("level")
        level = level if isinstance(level, int) and 1 <= level <= 6 else 2
        out.block()
        out.line_prefix("#" * level + " ")
        self.children(frame, node, out, depth)
        out.block()

    def image(self, frame: Frame, node: AXNode, role: str, out: Out, depth: int) -> None:
        name = name_of(node)
        if name:  # an image without alt text says nothing a reader can use
            out.item("img " + quote(name, NAME_MAX))

    def list_item(self, frame: Frame, node: AXNode, role: str, out: Out, depth: int) -> None:
        out.line_prefix(list_marker(frame, node))
        self.list_depth += 1
        if not self.item(frame, node, role, out, depth):
            self.children(frame, node, out, depth)
        self.list_depth -= 1
        out.newline()

    def generic(self, frame: Frame, node: AXNode, role: str, out: Out, depth: int) -> None:
        """A wrapper (only its children show), unless a script made it an item."""
        if not self.item(frame, node, role, out, depth):
            self.children(frame, node, out, depth)

    def named_item(self, frame: Frame, node: AXNode, role: str, out: Out, depth: int) -> None:
        out.item(self.describe(frame, node, role, props_of(node), None))

    def group(self, frame: Frame, node: AXNode, role: str, out: Out, depth: int) -> None:
        """A named group is labelled like a landmark; an unnamed one is a plain block."""
        if name_of(node):
            self.container(frame, node, role, out, depth)
        elif role == "list":
            self.bullet_list(frame, node, out, depth)
        else:
            self.block(frame, node, role, out, depth)

    def block(self, frame: Frame, node: AXNode, role: str, out: Out, depth: int) -> None:
        out.block()
        self.children(frame, node, out, depth)
        out.block()

    def quote(self, frame: Frame, node: AXNode, role: str, out: Out, depth: int) -> None:
        out.block()
        out.indent.append("> ")
        self.children(frame, node, out, depth)
        out.newline()
        out.indent.pop()
        out.block()

    # Lists, containers, frames, tables -------------------------------------------------

    def bullet_list(self, frame: Frame, node: AXNode, out: Out, depth: int) -> None:
        """A list is a block; one inside a list item is indented under it instead."""
        nested = self.list_depth > 0
        if nested:
            out.newline()
            out.indent.append("  ")
        else:
            out.block()
        outer, self.list_depth = self.list_depth, 0
        self.children(frame, node, out, depth)
        self.list_depth = outer
        out.newline()
        if nested:
            out.indent.pop()
        else:
            out.block()

    def container(self, frame: Frame, node: AXNode, role: str, out: Out, depth: int) -> None:
        """A landmark or named group: a label line, then its content indented."""
        name = name_of(node)
        heading = first_heading_text(frame, node) if name else ""
        if role == "region" and (not name or name == heading):
            out.block()  # a section titled by its own heading: the heading says enough
            self.children(frame, node, out, depth)
            out.block()
            return
        label = CONTAINERS.get(role, role)
        if name and name != heading:
            label += " " + quote(name, NAME_MAX)
        flags = flags_of(props_of(node))
        if flags:
            label += " (" + ", ".join(flags) + ")"
        if out.inline:
            out.item(label)
            self.children(frame, node, out, depth, name)
            return
        out.label(label)
        out.indent.append("  ")
        self.children(frame, node, out, depth, name)
        out.newline()
        out.indent.pop()
        out.block()

    def iframe(self, frame: Frame, node: AXNode, role: str, out: Out, depth: int) -> None:
        """The child frame this ``<iframe>`` holds; a named one with none is still listed."""
        backend = backend_id_of(node)
        children = frame.by_owner.get(backend, []) if backend is not None else []
        for child in children:
            self.embed(frame, child, name_of(node), out, depth)
        if not children and name_of(node):
            out.item("frame " + quote(name_of(node), NAME_MAX) + " (no content)")

    def embed(self, parent: Frame, child: Frame, title: str, out: Out, depth: int) -> None:
        if child.index in self.frames_done:
            return
        if not title and child.root is not None:
            title = name_of(child.root)
        label = "frame " + (quote(title, NAME_MAX) + " " if title else "")
        label += self.short_url(child.snap.url, parent.snap.url)
        if out.inline:
            out.item(label)
            self.render_frame(child, out, depth + 1)
            return
        out.label(label)
        out.indent.append("  ")
        self.render_frame(child, out, depth + 1)
        out.newline()
        out.indent.pop()
        out.block()

    def table(self, frame: Frame, node: AXNode, role: str, out: Out, depth: int) -> None:
        """A Markdown grid; a layout table in disguise prints one line per row instead.

        Chrome calls any table with 20 rows a data table, so a link list laid
        out with ``<table>`` (a news front page) arrives as ``table``. One with
        no header cell, no caption and rows of differing lengths is taken for
        layout: its grid would only add pipes.
        """
        name = name_of(node)
        if out.inline:  # a table in a table cell: its cells simply run on
            self.children(frame, node, out, depth, name)
            return
        rows: list[list[str]] = []
        heads: list[frozenset[str]] = []  # header roles in each row
        cell_out = Out(inline=True)
        for row in self.rows(frame, node, depth):
            cells = self.kids(frame, row) if role_of(row) in ROWS else [row]
            roles = list(map(role_of, cells))
            texts = []
            for cell, cell_role in zip(cells, roles, strict=True):
                if cell_role in CELLS:
                    self.children(frame, cell, cell_out, depth + 2)
                else:
                    self.visit(frame, cell, cell_role, cell_out, depth + 2)
                texts.append(cell_out.take())
            if any(texts):
                rows.append(texts)
                heads.append(HEADERS.intersection(roles))
        if name:
            out.label(role + " " + quote(name, NAME_MAX))
        else:
            out.block()
        grid = bool(name) or role != "table" or any(heads) or len(
            {len(texts) for texts in rows}) <= 1
        for i, texts in enumerate(rows):
            if not grid:
                out.item(" ".join(t for t in texts if t))
            else:
                out.item("| " + " | ".join(t.replace("|", "\\|") for t in texts) + " |")
                if i == 0 and "columnheader" in heads[0]:
                    out.newline()
                    out.item("|" + " --- |" * len(texts))
            out.newline()
        out.block()

    def rows(self, frame: Frame, table: AXNode, depth: int) -> Iterator[AXNode]:
        """Rows of a table in order, through row groups; a caption is the table's name."""
        for kid in self.kids(frame, table):
            role = role_of(kid)
            if role in ROWS or role in CELLS:
                yield kid
            elif role not in CAPTIONS and role not in SKIPPED and depth < MAX_DEPTH:
                yield from self.rows(frame, kid, depth + 1)

    # Controls (their text: ``Controls``) ----------------------------------------------

    def item(self, frame: Frame, node: AXNode, role: str, out: Out, depth: int) -> bool:
        """``item#N "label"`` for an element a script made clickable (``items.is_item``),
        then what it holds that the label does not say: on the same line if it fits one.

        False when ``node`` is no item, or a big one whose children are still to print.
        """
        if not is_item(frame, node, role):
            return False
        label = author_name(node)
        number = self.new_ref(frame, node["backendDOMNodeId"], "item", label)  # is_item
        out.item(self.describe(frame, node, role, props_of(node), f"item#{number}", label))
        if label_says_all(frame, node, label):
            return True
        if not fits_a_line(frame, node):
            return False
        line = Out(inline=True)
        self.children(frame, node, line, depth)
        out.item(line.take())
        return True

    def control(self, frame: Frame, node: AXNode, role: str, props: dict[str, Any],
                out: Out, depth: int) -> None:
        backend: int = node["backendDOMNodeId"]  # is_control checked it is one
        shown_role = ROLE_LABELS.get(role, role if role in REF_ROLES else "textbox")
        label = ax_label(frame, node)
        # An unnamed link is known by the text it holds (as ``describe`` labels it): a
        # re-used row's link that holds another result is another link. (A field's text
        # is its value, which typing changes: not its name.)
        number = self.new_ref(frame, backend, shown_role, label or attribute_label(
            frame, backend) or (contents_label(frame, node, NAME_MAX) if role == "link" else ""))
        # A link's arrow already says what it is: its role word would be pure noise.
        ref = f"#{number}" if role == "link" and props.get("url") else f"{shown_role}#{number}"
        out.item(self.describe(frame, node, role, props, ref, label, backend))
        if role == "treeitem":  # nested items hang below their parent item
            out.newline()
            out.indent.append("  ")
            for kid in self.kids(frame, node):
                if role_of(kid) == "group":
                    self.children(frame, kid, out, depth + 1)
                elif role_of(kid) != "StaticText":
                    out.newline()
                    self.visit(frame, kid, role_of(kid), out, depth + 1)
            out.newline()
            out.indent.pop()

