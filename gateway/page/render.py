"""The page view: Chrome's accessibility trees of every frame, printed compactly with refs.

Pure (no I/O, no async) so it is tested on captured trees alone
(``fixtures/ax``, ``tests/unit/test_view.py``). The view is what an agent reads
instead of a screenshot and pays for in tokens, so every rule here trades
noise for size while keeping what a person needs to act:

* header lines ``url:`` and ``title:``, then the page in document order;
* every control Chrome can map back to a DOM node gets a ref counted from 1
  in document order — ``role#N "name"`` plus a field's value (``= "…"``), a
  select's options (``{a, *chosen}``), a range (``[min..max]``) and state flags
  (``(checked, required)``). A link is ``#N "name"->target``: the arrow says
  it is a link, so the role word is left out, and the target is ``#frag``
  within the same document, the path on the page's own origin, else the full
  URL (cut at ``URL_MAX``). ``View.refs`` maps each number back to its frame,
  CDP session and backend node id. A control with no name is labelled from
  what Chrome saw (placeholder, aria-label, title, alt, a child icon's title),
  then from its ``name`` / ``id`` attribute (``[name=q]``), else ``[unnamed]``;
* headings as ``## text``; landmarks and named groups as a short label line
  (``nav "Primary"``) with their content indented two spaces; list items as
  ``- `` lines; data tables as Markdown grids; text compact; wrapper roles
  print nothing; text a control's name already says (its label) is dropped;
* iframes — same-process and out-of-process alike — are printed where the
  ``<iframe>`` sits, under a ``frame "title" url`` line.

Inline flow: a node's children run together on one line when at least one of
them is text (as in ``by <a>user</a> 3 hours ago``); when none is, each child
starts a line of its own. That rule stands in for CSS display, which the
accessibility tree does not carry.

What the gateway fetches for a view (see ``PageSnapshot``): per CDP session
``Page.getFrameTree``; per frame ``Accessibility.getFullAXTree {frameId}`` on
the session owning the frame; per child frame ``DOM.getFrameOwner {frameId}``
on the session owning its *parent*; then, for the few controls listed by
``attribute_requests``, ``DOM.describeNode {backendNodeId}`` on their session.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from json.encoder import encode_basestring
from typing import Any

__all__ = [
    "FrameSnapshot",
    "PageSnapshot",
    "RefTarget",
    "View",
    "attribute_requests",
    "render_view",
    "snapshot_from_json",
]

AXNode = dict[str, Any]
"""One ``Accessibility.AXNode`` exactly as Chrome sends it."""


@dataclass(frozen=True)
class FrameSnapshot:
    """One frame's accessibility tree and where it hangs in the page.

    ``session`` is whatever names the CDP session that owns the frame (the
    gateway's sessionId; ``main`` / ``oopif-N`` in fixtures) and is handed back
    in ``RefTarget`` untouched. ``owner_backend_node_id`` is the ``<iframe>``
    element in the parent frame (``DOM.getFrameOwner``), None for the main
    frame. ``attributes`` holds DOM attributes (``DOM.describeNode``) of the
    controls ``attribute_requests`` asked about, by backend node id.
    """

    frame_id: str
    parent_frame_id: str | None
    session: str
    url: str
    owner_backend_node_id: int | None
    nodes: Sequence[AXNode]
    attributes: Mapping[int, Mapping[str, str]] = field(default_factory=dict)


@dataclass(frozen=True)
class PageSnapshot:
    """Everything a view is rendered from: the page's URL and title and all its frames.

    JSON form (``snapshot_from_json``; ``fixtures/ax/*.json``)::

        {"url": str, "title": str,
         "frames": [{"frame_id": str, "parent_frame_id": str | null, "session": str,
                     "url": str, "owner_backend_node_id": int | null,
                     "attributes": {"<backendNodeId>": {"name": "q", ...}},
                     "nodes": [AXNode, ...]}]}

    The first frame without a parent in the snapshot is the main frame.
    """

    url: str
    title: str
    frames: Sequence[FrameSnapshot]


@dataclass(frozen=True)
class RefTarget:
    """What ``#N`` in a view points at: enough to act on it in the right session."""

    frame_id: str
    session: str
    backend_node_id: int
    role: str
    name: str


@dataclass(frozen=True)
class View:
    """The rendered text and its refs: the keys are exactly the ``#N`` in ``text``, counting
    up by one in document order (from 1 unless ``render_view`` was given ``first_ref``)."""

    text: str
    refs: dict[int, RefTarget]


def snapshot_from_json(data: Mapping[str, Any]) -> PageSnapshot:
    """Read the JSON form of a snapshot; raise ``ValueError`` if its shape is wrong.

    Only the envelope is checked: AX nodes are Chrome's to define, and the
    renderer copes with whatever they hold.
    """
    if not isinstance(data, Mapping):
        raise ValueError("a page snapshot is a JSON object")
    frames = data.get("frames")
    if not isinstance(frames, list) or not frames:
        raise ValueError("a page snapshot needs a non-empty 'frames' list")
    if not isinstance(data.get("url"), str):
        raise ValueError("a page snapshot needs its 'url'")
    return PageSnapshot(
        url=data["url"],
        title=_string(data, "title", ""),
        frames=[_frame_from_json(f, i) for i, f in enumerate(frames)],
    )


def render_view(snapshot: PageSnapshot, *, first_ref: int = 1) -> View:
    """The view of a page: header lines, then every frame in document order, with refs.

    Refs are numbered from ``first_ref`` on: a caller that keeps counting across
    views of one tab makes sure a ref from an older view never names an element
    of a newer one.
    """
    if first_ref < 1:
        raise ValueError(f"first_ref must be 1 or more, not {first_ref}")
    renderer = _Renderer(snapshot, first_ref)
    out = _Out()
    for root in _index_frames(snapshot):
        renderer.render_frame(root, out, 0)
    body = out.result()
    header = f"url: {snapshot.url}\ntitle: {_squash(snapshot.title)}"
    return View(header + ("\n\n" + body if body else ""), renderer.refs)


def attribute_requests(snapshot: PageSnapshot) -> list[tuple[str, int]]:
    """``(frame_id, backendNodeId)`` of controls the view could only call ``[unnamed]``.

    Chrome's accessibility data has no ``name`` or ``id`` attribute, which is
    all some form fields carry. The gateway answers each pair with
    ``DOM.describeNode {backendNodeId}`` on the frame's session and puts the
    attributes into ``FrameSnapshot.attributes`` before rendering; typically a
    handful of calls, sent together.
    """
    wanted: list[tuple[str, int]] = []
    for snap in snapshot.frames:
        frame: _Frame | None = None  # indexed only if a control has no plain name
        for node in snap.nodes:
            if type(node) is not dict:
                continue
            role = _role(node)
            if (role not in _REF_ROLES and not node.get("properties")) or node.get(
                    "ignored") is True or not _is_control(node, role):
                continue
            backend: int = node["backendDOMNodeId"]  # _is_control checked it is one
            name = _name(node)
            if backend in snap.attributes or any(c.isalnum() for c in name):
                continue
            frame = frame or _Frame(snap, 0)
            if not _ax_label(frame, node):
                wanted.append((snap.frame_id, backend))
    return wanted


def _frame_from_json(data: Any, index: int) -> FrameSnapshot:
    if not isinstance(data, Mapping):
        raise ValueError(f"frames[{index}] is not an object")
    nodes = data.get("nodes")
    if not isinstance(nodes, list):
        raise ValueError(f"frames[{index}].nodes is not a list")
    raw_attributes = data.get("attributes") or {}
    if not isinstance(raw_attributes, Mapping):
        raise ValueError(f"frames[{index}].attributes is not an object")
    attributes: dict[int, dict[str, str]] = {}
    for key, attrs in raw_attributes.items():
        if not (isinstance(key, str) and key.isdigit() and isinstance(attrs, Mapping)):
            raise ValueError(f"frames[{index}].attributes[{key!r}] is not "
                             "{backendNodeId: {attribute: value}}")
        attributes[int(key)] = {str(k): str(v) for k, v in attrs.items()}
    parent = data.get("parent_frame_id")
    owner = data.get("owner_backend_node_id")
    if parent is not None and not isinstance(parent, str):
        raise ValueError(f"frames[{index}].parent_frame_id is not a string or null")
    if owner is not None and (not isinstance(owner, int) or isinstance(owner, bool)):
        raise ValueError(f"frames[{index}].owner_backend_node_id is not an integer or null")
    return FrameSnapshot(
        frame_id=_string(data, "frame_id", f"frames[{index}]."),
        parent_frame_id=parent,
        session=_string(data, "session", f"frames[{index}]."),
        url=_string(data, "url", f"frames[{index}]."),
        owner_backend_node_id=owner,
        nodes=nodes,
        attributes=attributes,
    )


def _string(data: Mapping[str, Any], key: str, where: str) -> str:
    value = data.get(key, "")
    if not isinstance(value, str):
        raise ValueError(f"{where}{key} is not a string")
    return value


# --- Roles -------------------------------------------------------------------------------

_REF_ROLES = frozenset({
    "link", "button", "textbox", "searchbox", "checkbox", "radio", "combobox", "listbox",
    "slider", "spinbutton", "switch", "tab", "menuitem", "menuitemcheckbox",
    "menuitemradio", "treeitem", "option", "scrollbar", "gridcell",
    # Chrome's internal roles for native controls:
    "DisclosureTriangle", "Date", "DateTime", "InputTime", "ColorWell", "PopUpButton",
    "ToggleButton",
})
"""Roles that get a ref (``gridcell`` only when focusable). Options of a native select are
listed in its braces instead; those of a listbox get refs there."""

_ROLE_LABELS = {
    "DisclosureTriangle": "summary", "Date": "date", "DateTime": "datetime",
    "InputTime": "time", "ColorWell": "color", "PopUpButton": "button",
    "ToggleButton": "button",
}
"""Chrome's internal role names, printed as the names a web developer knows."""

_VALUE_ROLES = frozenset({
    "textbox", "searchbox", "combobox", "spinbutton", "slider", "scrollbar",
    "Date", "DateTime", "InputTime", "ColorWell", "progressbar", "meter",
})
"""Roles whose value is always shown; other roles show a value only if it adds to the name."""

_RANGE_ROLES = frozenset({"slider", "spinbutton", "scrollbar", "progressbar", "meter"})

_LABEL_ROLES = frozenset({"StaticText", "LabelText", "generic", "paragraph"})
"""Roles whose text, when it is exactly the name of the control beside it, is its label."""
_NAMED_ITEMS = frozenset({"progressbar", "meter"})
"""Non-controls printed with their name, so text naming them is dropped too."""
_LABELLED = _REF_ROLES - {"link", "option", "tab", "treeitem", "gridcell", "menuitem",
                          "menuitemcheckbox", "menuitemradio", "DisclosureTriangle"}
"""Controls a ``<label>`` names: fields, and buttons (a file input is one). A link's text
beside a link is not its label."""

_CONTAINERS = {
    "banner": "header", "navigation": "nav", "main": "main", "complementary": "aside",
    "contentinfo": "footer", "search": "search", "form": "form", "region": "section",
    "article": "article", "dialog": "dialog", "alertdialog": "dialog",
}
"""Landmarks and sections: printed as a short label line, their content indented."""

_NAMED_CONTAINERS = frozenset({
    "group", "radiogroup", "tablist", "menubar", "menu", "toolbar", "tree", "list",
})
"""Groups that get a label line (and indentation) only when they have a name."""

_BLOCKS = frozenset({
    "paragraph", "figure", "separator", "tabpanel", "group", "radiogroup", "tablist",
    "menubar", "menu", "toolbar", "tree", "note", "math", "DescriptionList", "feed",
    "log", "status", "alert", "timer", "marquee",
})
"""Roles set apart from their neighbours by a blank line."""

_TABLES = frozenset({"table", "grid", "treegrid"})
_ROWS = frozenset({"row"})
_CELLS = frozenset({"cell", "gridcell", "columnheader", "rowheader"})
_HEADERS = frozenset({"columnheader", "rowheader"})
_CAPTIONS = frozenset({"caption", "Legend", "Figcaption"})
_SKIPPED = frozenset({"InlineTextBox", "ListMarker", "MenuListPopup"})
_BULLETS = frozenset("•◦▪▫■□●○‣\u2043\u2013-*")
"""List markers that are mere bullets (printed as ``- ``); others (``1.``, ``a)``) are kept."""

_STATE_FLAGS = (
    ("checked", {"true": "checked", "mixed": "mixed"}),
    ("pressed", {"true": "pressed", "mixed": "mixed"}),
    ("selected", {True: "selected"}),
    ("expanded", {True: "expanded", False: "collapsed"}),
    ("disabled", {True: "disabled"}),
    ("required", {True: "required"}),
    ("readonly", {True: "readonly"}),
    ("invalid", {"true": "invalid", "grammar": "invalid", "spelling": "invalid"}),
    ("multiselectable", {True: "multiple"}),
    ("modal", {True: "modal"}),
)
"""AX property → value → flag printed, in this order; any other value prints nothing."""
_FLAG_PROPS = frozenset(prop for prop, _ in _STATE_FLAGS)

NAME_MAX = 200
"""A control's name is its only text (children are not repeated), so it is cut late."""
VALUE_MAX = 100
URL_MAX = 80
OPTIONS_MAX = 25
"""A native select with more options shows this many (and the selected ones)."""
MAX_DEPTH = 150
"""Deeper nodes are not printed: bounds recursion (ignored wrappers do not count)."""


# --- Small readers that never fail on odd input ------------------------------------------

def _role(node: AXNode) -> str:
    role = node.get("role")
    if type(role) is dict:
        value = role.get("value")
        if type(value) is str:
            return value
    return ""


def _name(node: AXNode) -> str:
    return _squash(_ax_string(node.get("name")))


def _ax_string(value: Any) -> str:
    """The text of an ``AXValue`` (strings and numbers), else ""."""
    if type(value) is dict:
        inner = value.get("value")
        if type(inner) is str:
            return inner
        if type(inner) is int or type(inner) is float:
            return _number(inner)
    return ""


def _number(value: float) -> str:
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


def _squash(text: str) -> str:
    """Collapse runs of whitespace (newlines, tabs, no-break spaces) to one space."""
    return " ".join(text.split())


def _props(node: AXNode) -> dict[str, Any]:
    """The node's AX properties as {name: value}."""
    props = node.get("properties")
    out: dict[str, Any] = {}
    if type(props) is list:
        for prop in props:
            if type(prop) is dict:
                name, value = prop.get("name"), prop.get("value")
                if type(name) is str:
                    out[name] = value.get("value") if type(value) is dict else None
    return out


def _backend_id(node: AXNode) -> int | None:
    value = node.get("backendDOMNodeId")
    return value if type(value) is int else None  # not a bool, whose type is bool


def _child_ids(node: AXNode) -> list[str]:
    ids = node.get("childIds")
    return [i for i in ids if isinstance(i, str)] if isinstance(ids, list) else []


def _quote(text: str, limit: int) -> str:
    """``text`` in double quotes, escaped as JSON escapes it, cut to ``limit`` characters."""
    return encode_basestring(text if len(text) <= limit else text[: limit - 1] + "…")


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


# --- One frame, indexed ------------------------------------------------------------------

class _Frame:
    """A frame's nodes by id, its root, and the child frames hanging off its iframes."""

    __slots__ = ("by_owner", "index", "nodes", "root", "seen", "snap", "trailing")

    def __init__(self, snap: FrameSnapshot, index: int) -> None:
        self.snap = snap
        self.index = index
        raw = snap.nodes if isinstance(snap.nodes, Sequence) else ()
        self.nodes: dict[str, AXNode] = {
            node["nodeId"]: node for node in raw
            if type(node) is dict and type(node.get("nodeId")) is str}
        self.root = next((n for n in self.nodes.values()
                          if type(n.get("parentId")) is not str or n["parentId"] not in self.nodes),
                         None)
        self.seen: set[str] = set()  # node ids already printed (a broken tree may repeat one)
        self.by_owner: dict[int, list[_Frame]] = {}
        self.trailing: list[_Frame] = []  # child frames whose <iframe> is not known


def _index_frames(snapshot: PageSnapshot) -> list[_Frame]:
    """Frames in snapshot order, each linked to its parent; roots first in the result."""
    frames = [_Frame(snap, i) for i, snap in enumerate(snapshot.frames)]
    by_id: dict[str, _Frame] = {}
    for frame in frames:
        by_id.setdefault(frame.snap.frame_id, frame)
    roots: list[_Frame] = []
    for frame in frames:
        parent = by_id.get(frame.snap.parent_frame_id or "")
        if parent is None or parent is frame:
            roots.append(frame)
        elif frame.snap.owner_backend_node_id is None:
            parent.trailing.append(frame)
        else:
            parent.by_owner.setdefault(frame.snap.owner_backend_node_id, []).append(frame)
    return roots


# --- Labels ------------------------------------------------------------------------------

_LABEL_SOURCES = ("placeholder", "aria-label", "title", "alt")


def _ax_label(frame: _Frame, node: AXNode) -> str:
    """The best human label Chrome's data gives a control, "" if it gives none.

    Order: the accessible name; an attribute Chrome looked at but did not use
    (``name.sources``); the description (``title``) when the name is only a
    symbol such as ``✕``; a ``title`` or ``alt`` on a descendant, as an icon
    inside a link carries.
    """
    name = _name(node)
    if name and (name[0].isalnum() or any(c.isalnum() for c in name)):
        return name
    description = _squash(_ax_string(node.get("description")))
    if name:
        return description if any(c.isalnum() for c in description) else name
    if description:
        return description
    found = _source_attribute(node)
    return found or _descendant_label(frame, node)


def _source_attribute(node: AXNode) -> str:
    raw = node.get("name")
    sources = raw.get("sources") if isinstance(raw, dict) else None
    if not isinstance(sources, list):
        return ""
    for wanted in _LABEL_SOURCES:
        for source in sources:
            if isinstance(source, dict) and source.get("attribute") == wanted:
                text = _squash(_ax_string(source.get("attributeValue")))
                if text:
                    return text
    return ""


def _descendant_label(frame: _Frame, node: AXNode) -> str:
    """Title or alt text of the first few descendants (breadth first)."""
    queue = _child_ids(node)
    i = 0
    while i < len(queue) and i < 12:  # a label worth having is near the top
        child = frame.nodes.get(queue[i])
        i += 1
        if child is None:
            continue
        text = _squash(_ax_string(child.get("description"))) or (
            _name(child) if _role(child) == "image" else "")
        if text:
            return text
        queue.extend(_child_ids(child))
    return ""


def _attribute_label(frame: _Frame, backend_id: int) -> str:
    attrs = frame.snap.attributes.get(backend_id) if isinstance(
        frame.snap.attributes, Mapping) else None
    if isinstance(attrs, Mapping):
        for key in ("name", "id"):
            value = attrs.get(key)
            if isinstance(value, str) and value.strip():
                return f"[{key}={_cut(_squash(value), 60)}]"
    return ""


def _is_control(node: AXNode, role: str) -> bool:
    """Whether the view gives ``node`` a ref: a control Chrome can map to a DOM node."""
    if role in _REF_ROLES:
        return _backend_id(node) is not None and (
            role != "gridcell" or _props(node).get("focusable") is True)
    if node.get("properties") and _backend_id(node) is not None:
        # A contenteditable root: Chrome keeps its role (often generic) but marks it.
        props = _props(node)
        return bool(props.get("editable")) and props.get("focusable") is True
    return False


# --- Output ------------------------------------------------------------------------------

_NO_SPACE_AFTER = ("(", "[", "{", "\u201c")
_NO_SPACE_BEFORE = (")", "]", "}", ",", ".", ";", ":", "!", "?", "\u201d")


class _Out:
    """Lines of the view: one inline run at a time, indentation, blank lines between blocks.

    In ``inline`` mode (a table cell) everything lands on one line.
    """

    def __init__(self, *, inline: bool = False) -> None:
        self.inline = inline
        self.lines: list[str] = []
        self.parts: list[str] = []
        self.indent: list[str] = []
        self.prefix = ""
        self.blank = False  # a blank line is due before the next line
        self.after_label = False  # just printed a label line: no blank line right after
        self.owed: str | None = None  # a space owed to "text" whitespace or after an "item"

    def text(self, text: str) -> None:
        """Page text: its own whitespace counts, runs of it become one space."""
        core = " ".join(text.split())
        if not core:
            if text and self.parts:
                self.owed = "text"
            return
        if self.parts and (self.owed == "text" or text[0].isspace() or (
                self.owed == "item" and not core.startswith(_NO_SPACE_BEFORE))):
            self.parts.append(" ")
        self.parts.append(core)
        self.owed = "text" if text[-1].isspace() else None

    def item(self, text: str) -> None:
        """A control or image: set off by a space unless it follows an opening bracket."""
        if self.parts and (self.owed or not self.parts[-1].endswith(_NO_SPACE_AFTER)):
            self.parts.append(" ")
        self.parts.append(text)
        self.owed = "item"

    def newline(self) -> None:
        if self.inline:
            if self.parts:
                self.owed = "text"
            return
        if not self.parts:
            return
        if self.blank and not self.after_label and self.lines:
            self.lines.append("")
        self.lines.append("".join(self.indent) + self.prefix + "".join(self.parts))
        self.parts.clear()
        self.prefix = ""
        self.blank = self.after_label = False
        self.owed = None

    def block(self) -> None:
        self.newline()
        self.blank = True

    def line_prefix(self, prefix: str) -> None:
        """Start a line that begins with ``prefix`` (``## ``, ``- ``) once it has content."""
        self.newline()
        if not self.inline:
            self.prefix = prefix

    def label(self, text: str) -> None:
        """A container's label line; what follows is not separated from it."""
        self.block()
        self.item(text)
        self.newline()
        self.after_label = True

    def take(self) -> str:
        """The line so far (inline mode), leaving this run empty for the next cell."""
        line = "".join(self.parts)
        self.parts.clear()
        self.owed = None
        return line

    def result(self) -> str:
        self.newline()
        if self.inline:
            return "".join(self.parts)
        return "\n".join(self.lines)


# --- Rendering ---------------------------------------------------------------------------

_Handler = Callable[[_Frame, AXNode, str, _Out, int], None]
"""How the renderer prints one role: (frame, node, role, out, depth)."""


class _Renderer:
    """One pass over all frames in document order, numbering refs as it prints them."""

    def __init__(self, snapshot: PageSnapshot, first_ref: int) -> None:
        self.page_origin = _origin(snapshot.url)
        self.first_ref = first_ref
        self.refs: dict[int, RefTarget] = {}
        self.frames_done: set[int] = set()
        self.list_depth = 0  # lists inside list items indent
        self.handlers: dict[str, _Handler] = {
            "StaticText": self.text, "LineBreak": self.line_break, "heading": self.heading,
            "image": self.image, "listitem": self.list_item, "Iframe": self.iframe,
            "blockquote": self.quote,
            **dict.fromkeys(_TABLES, self.table),
            **dict.fromkeys(_NAMED_ITEMS, self.named_item),
            **dict.fromkeys(_BLOCKS, self.block),
            **dict.fromkeys(_NAMED_CONTAINERS, self.group),
            **dict.fromkeys(_CONTAINERS, self.container),
        }

    # Traversal -------------------------------------------------------------------------

    def kids(self, frame: _Frame, node: AXNode) -> list[AXNode]:
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
                _hoist(frame, child, out)
            else:
                out.append(child)
        return out

    def render_frame(self, frame: _Frame, out: _Out, depth: int) -> None:
        if frame.index in self.frames_done or frame.root is None:
            return
        self.frames_done.add(frame.index)
        root_id = frame.root["nodeId"]
        if root_id not in frame.seen:
            frame.seen.add(root_id)
            self.visit(frame, frame.root, _role(frame.root), out, depth)
        for child in frame.trailing:
            self.embed(frame, child, "", out, depth)

    def children(self, frame: _Frame, node: AXNode, out: _Out, depth: int,
                 parent_name: str = "") -> None:
        kids = self.kids(frame, node)
        roles = list(map(_role, kids))
        flowing = "StaticText" in roles
        skip = _duplicate_labels(frame, kids, roles, parent_name) if len(kids) > 1 else ()
        depth += 1
        for i, kid in enumerate(kids):
            if i in skip:
                continue
            role = roles[i]
            if role == "StaticText":
                out.text(_ax_string(kid.get("name")))
            elif flowing:
                self.visit(frame, kid, role, out, depth)
            else:
                out.newline()
                self.visit(frame, kid, role, out, depth)
                out.newline()

    def visit(self, frame: _Frame, node: AXNode, role: str, out: _Out, depth: int) -> None:
        """Print one node (and what it holds) by what its role calls for."""
        if role in _SKIPPED or depth > MAX_DEPTH:
            return
        if _is_control(node, role):
            self.control(frame, node, role, _props(node), out, depth)
            return
        handler = self.handlers.get(role)
        if handler is None:  # a wrapper: only its children show
            self.children(frame, node, out, depth)
        else:
            handler(frame, node, role, out, depth)

    # One role each (``handlers``) -----------------------------------------------------

    def text(self, frame: _Frame, node: AXNode, role: str, out: _Out, depth: int) -> None:
        out.text(_ax_string(node.get("name")))

    def line_break(self, frame: _Frame, node: AXNode, role: str, out: _Out, depth: int) -> None:
        out.newline()

    def heading(self, frame: _Frame, node: AXNode, role: str, out: _Out, depth: int) -> None:
        level = _props(node).get("level")
        level = level if isinstance(level, int) and 1 <= level <= 6 else 2
        out.block()
        out.line_prefix("#" * level + " ")
        self.children(frame, node, out, depth)
        out.block()

    def image(self, frame: _Frame, node: AXNode, role: str, out: _Out, depth: int) -> None:
        name = _name(node)
        if name:  # an image without alt text says nothing a reader can use
            out.item("img " + _quote(name, NAME_MAX))

    def list_item(self, frame: _Frame, node: AXNode, role: str, out: _Out, depth: int) -> None:
        out.line_prefix(_bullet(frame, node))
        self.list_depth += 1
        self.children(frame, node, out, depth)
        self.list_depth -= 1
        out.newline()

    def named_item(self, frame: _Frame, node: AXNode, role: str, out: _Out, depth: int) -> None:
        out.item(self.describe(frame, node, role, _props(node), None))

    def group(self, frame: _Frame, node: AXNode, role: str, out: _Out, depth: int) -> None:
        """A named group is labelled like a landmark; an unnamed one is a plain block."""
        if _name(node):
            self.container(frame, node, role, out, depth)
        elif role == "list":
            self.bullet_list(frame, node, out, depth)
        else:
            self.block(frame, node, role, out, depth)

    def block(self, frame: _Frame, node: AXNode, role: str, out: _Out, depth: int) -> None:
        out.block()
        self.children(frame, node, out, depth)
        out.block()

    def quote(self, frame: _Frame, node: AXNode, role: str, out: _Out, depth: int) -> None:
        out.block()
        out.indent.append("> ")
        self.children(frame, node, out, depth)
        out.newline()
        out.indent.pop()
        out.block()

    # Lists, containers, frames, tables -------------------------------------------------

    def bullet_list(self, frame: _Frame, node: AXNode, out: _Out, depth: int) -> None:
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

    def container(self, frame: _Frame, node: AXNode, role: str, out: _Out, depth: int) -> None:
        """A landmark or named group: a label line, then its content indented."""
        name = _name(node)
        heading = _first_heading_text(frame, node) if name else ""
        if role == "region" and (not name or name == heading):
            out.block()  # a section titled by its own heading: the heading says enough
            self.children(frame, node, out, depth)
            out.block()
            return
        label = _CONTAINERS.get(role, role)
        if name and name != heading:
            label += " " + _quote(name, NAME_MAX)
        flags = _flags(_props(node))
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

    def iframe(self, frame: _Frame, node: AXNode, role: str, out: _Out, depth: int) -> None:
        """The child frame this ``<iframe>`` holds; a named one with none is still listed."""
        backend = _backend_id(node)
        children = frame.by_owner.get(backend, []) if backend is not None else []
        for child in children:
            self.embed(frame, child, _name(node), out, depth)
        if not children and _name(node):
            out.item("frame " + _quote(_name(node), NAME_MAX) + " (no content)")

    def embed(self, parent: _Frame, child: _Frame, title: str, out: _Out, depth: int) -> None:
        if child.index in self.frames_done:
            return
        if not title and child.root is not None:
            title = _name(child.root)
        label = "frame " + (_quote(title, NAME_MAX) + " " if title else "")
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

    def table(self, frame: _Frame, node: AXNode, role: str, out: _Out, depth: int) -> None:
        """A Markdown grid; a layout table in disguise prints one line per row instead.

        Chrome calls any table with 20 rows a data table, so a link list laid
        out with ``<table>`` (a news front page) arrives as ``table``. One with
        no header cell, no caption and rows of differing lengths is taken for
        layout: its grid would only add pipes.
        """
        name = _name(node)
        if out.inline:  # a table in a table cell: its cells simply run on
            self.children(frame, node, out, depth, name)
            return
        rows: list[list[str]] = []
        heads: list[frozenset[str]] = []  # header roles in each row
        cell_out = _Out(inline=True)
        for row in self.rows(frame, node, depth):
            cells = self.kids(frame, row) if _role(row) in _ROWS else [row]
            roles = list(map(_role, cells))
            texts = []
            for cell, cell_role in zip(cells, roles, strict=True):
                if cell_role in _CELLS:
                    self.children(frame, cell, cell_out, depth + 2)
                else:
                    self.visit(frame, cell, cell_role, cell_out, depth + 2)
                texts.append(cell_out.take())
            if any(texts):
                rows.append(texts)
                heads.append(_HEADERS.intersection(roles))
        if name:
            out.label(role + " " + _quote(name, NAME_MAX))
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

    def rows(self, frame: _Frame, table: AXNode, depth: int) -> Iterator[AXNode]:
        """Rows of a table in order, through row groups; a caption is the table's name."""
        for kid in self.kids(frame, table):
            role = _role(kid)
            if role in _ROWS or role in _CELLS:
                yield kid
            elif role not in _CAPTIONS and role not in _SKIPPED and depth < MAX_DEPTH:
                yield from self.rows(frame, kid, depth + 1)

    # Controls --------------------------------------------------------------------------

    def control(self, frame: _Frame, node: AXNode, role: str, props: dict[str, Any],
                out: _Out, depth: int) -> None:
        backend: int = node["backendDOMNodeId"]  # _is_control checked it is one
        number = self.first_ref + len(self.refs)
        shown_role = _ROLE_LABELS.get(role, role if role in _REF_ROLES else "textbox")
        label = _ax_label(frame, node)
        self.refs[number] = RefTarget(frame.snap.frame_id, frame.snap.session, backend,
                                      shown_role, label or _attribute_label(frame, backend))
        # A link's arrow already says what it is: its role word would be pure noise.
        ref = f"#{number}" if role == "link" and props.get("url") else f"{shown_role}#{number}"
        out.item(self.describe(frame, node, role, props, ref, label, backend))
        if role == "treeitem":  # nested items hang below their parent item
            out.newline()
            out.indent.append("  ")
            for kid in self.kids(frame, node):
                if _role(kid) == "group":
                    self.children(frame, kid, out, depth + 1)
                elif _role(kid) != "StaticText":
                    out.newline()
                    self.visit(frame, kid, _role(kid), out, depth + 1)
            out.newline()
            out.indent.pop()

    def describe(self, frame: _Frame, node: AXNode, role: str, props: dict[str, Any],
                 ref: str | None, label: str | None = None, backend: int | None = None) -> str:
        """``role#N "label" = value [min..max] {options} (flags)``, or ``#N "label"->url``."""
        if label is None:
            label = _ax_label(frame, node)
        if label:
            head = (ref or role) + " " + _quote(label, NAME_MAX)
        elif ref is None:  # not a control: nothing to tell it apart by
            head = role
        else:
            head = ref + " " + ((backend is not None and _attribute_label(frame, backend))
                                or "[unnamed]")
        if role == "link":
            url = props.get("url")
            if type(url) is str and url:
                head += "->" + self.short_url(url, frame.snap.url)
        parts = [head]
        options = self.options(frame, node, role) if ref and role in (
            "combobox", "listbox") else None
        value = _value(node, role, label) if "value" in node else ""
        if value and options is None:
            parts.append("= " + value)
        if role in _RANGE_ROLES:
            low, high = _as_number(props.get("valuemin")), _as_number(props.get("valuemax"))
            if low is not None and high is not None:
                parts.append(f"[{_number(low)}..{_number(high)}]")
        if options is not None:
            parts.append(options)
        flags = _flags(props, skip_collapsed=options is not None)
        if flags:
            parts.append("(" + ", ".join(flags) + ")")
        return head if len(parts) == 1 else " ".join(parts)

    def options(self, frame: _Frame, node: AXNode, role: str) -> str | None:
        """``{a, *b}`` for a select's options; ``{#7 a, #8 *b}`` when they get refs."""
        found = [n for n in _descendants(frame, node) if _role(n) == "option"]
        if not found:
            return None if role == "combobox" else "{}"  # an editable combobox's list is apart
        # A native select's options sit in a popup that cannot be clicked: no refs there.
        native_popup = any(_role(n) == "MenuListPopup" for n in _descendants(frame, node))
        shown: list[str] = []
        for option in found:
            props = _props(option)
            selected = "*" if props.get("selected") is True else ""
            text = selected + _cut(_name(option) or "[unnamed]", 60)
            if props.get("disabled") is True:
                text += " (disabled)"
            backend = _backend_id(option)
            if not native_popup and backend is not None:
                number = self.first_ref + len(self.refs)
                self.refs[number] = RefTarget(frame.snap.frame_id, frame.snap.session,
                                              backend, "option", _name(option))
                text = f"#{number} {text}"
            shown.append(text.replace(",", "\\,").replace("}", "\\}"))
        if native_popup and len(shown) > OPTIONS_MAX:
            extra = [s for s in shown[OPTIONS_MAX:] if s.startswith("*")]
            hidden = len(shown) - OPTIONS_MAX - len(extra)
            shown = [*shown[:OPTIONS_MAX], *extra, f"…+{hidden}"]
        return "{" + ", ".join(shown) + "}"

    def short_url(self, url: str, document_url: str) -> str:
        """``#frag`` within the document, the path on the page's origin, else the URL."""
        base, _, fragment = url.partition("#")
        if fragment and base == document_url.partition("#")[0]:
            return _cut("#" + fragment, URL_MAX)
        origin = self.page_origin
        if origin and url.startswith(origin) and url[len(origin):len(origin) + 1] in (
                "/", "?", "#", ""):
            return _cut(url[len(origin):] or "/", URL_MAX)
        return _cut(url, URL_MAX)


# --- What the renderer asks of nodes -----------------------------------------------------

def _origin(url: str) -> str:
    """``scheme://host:port`` of a hierarchical URL, "" for others (about:, data:)."""
    scheme, sep, rest = url.partition("://")
    if not sep or not scheme.isalpha():
        return ""
    host = rest.split("/", 1)[0].split("?", 1)[0].split("#", 1)[0]
    return f"{scheme}://{host}"


def _hoist(frame: _Frame, ignored: AXNode, out: list[AXNode]) -> None:
    """Append what an ignored node holds that is not ignored itself, in order.

    A loop, not recursion: ignored wrappers can nest deeper than Python's stack.
    """
    nodes, seen = frame.nodes, frame.seen
    stack = _child_ids(ignored)[::-1]
    while stack:
        child_id = stack.pop()
        child = nodes.get(child_id)
        if child is None or child_id in seen:
            continue
        seen.add(child_id)
        if child.get("ignored") is True:
            stack.extend(_child_ids(child)[::-1])
        else:
            out.append(child)


def _descendants(frame: _Frame, node: AXNode) -> Iterator[AXNode]:
    stack = _child_ids(node)[::-1]
    seen: set[str] = set()
    while stack:
        child_id = stack.pop()
        child = frame.nodes.get(child_id)
        if child is None or child_id in seen:
            continue
        seen.add(child_id)
        if child.get("ignored") is not True:
            yield child
        stack.extend(_child_ids(child)[::-1])


def _first_heading_text(frame: _Frame, node: AXNode) -> str:
    """The first heading near the top of a container (what ``aria-labelledby`` names)."""
    for count, child in enumerate(_descendants(frame, node)):
        if _role(child) == "heading":
            return _name(child)
        if count >= 8:
            break
    return ""


def _bullet(frame: _Frame, item: AXNode) -> str:
    for child_id in _child_ids(item)[:2]:
        child = frame.nodes.get(child_id)
        if child is not None and _role(child) == "ListMarker":
            marker = _name(child)
            if marker and marker not in _BULLETS:
                return marker + " "
    return "- "


def _duplicate_labels(frame: _Frame, kids: list[AXNode], roles: list[str],
                      parent_name: str) -> set[int]:
    """Indexes of children whose text a neighbour already says: a control's label, a legend."""
    skip: set[int] = set()
    if parent_name:
        for i, role in enumerate(roles):
            if role in _CAPTIONS and _label_text(frame, kids[i], len(parent_name)) == parent_name:
                skip.add(i)
    if _LABEL_ROLES.isdisjoint(roles):
        return skip
    names: dict[int, str] = {}  # index → name of each labelled control among the children
    for i, role in enumerate(roles):
        if role in _NAMED_ITEMS or (
                (role in _LABELLED or (role not in _REF_ROLES and kids[i].get("properties")))
                and _is_control(kids[i], role)):  # a field, a button or a contenteditable
            name = _name(kids[i]).rstrip(" :*")
            if name:
                names[i] = name
    if not names:
        return skip
    wanted = set(names.values())
    shortest, longest = min(map(len, wanted)), max(map(len, wanted)) + 2
    last = len(kids) - 1
    for i, role in enumerate(roles):
        if role not in _LABEL_ROLES:
            continue
        if role == "StaticText" and len(_ax_string(kids[i].get("name"))) < shortest:
            continue  # too short to hold any of the names (spaces, separators)
        text = _label_text(frame, kids[i], longest).rstrip(" :*")
        if text not in wanted:
            continue
        for step in (1, -1):  # the nearest non-blank sibling on either side says the same
            j = i + step
            while 0 <= j <= last and roles[j] == "StaticText" and not _name(kids[j]):
                j += step
            if names.get(j) == text:
                skip.add(i)
                break
    return skip


def _label_text(frame: _Frame, node: AXNode, limit: int) -> str:
    """The text inside ``node``, or a prefix of it once longer than ``limit``.

    Labels and captions are searched through; any other element only counts
    when its one child is text (``<div id=label>Notes</div>``), which keeps
    this cheap on the many wrappers that sit beside links.
    """
    role = _role(node)
    if role == "StaticText":
        return _name(node)
    if role not in _CAPTIONS and role != "LabelText":
        only = _child_ids(node)
        child = frame.nodes.get(only[0]) if len(only) == 1 else None
        return _name(child) if child is not None and _role(child) == "StaticText" else ""
    texts: list[str] = []
    length = 0
    for child in _descendants(frame, node):
        if _role(child) == "StaticText":
            texts.append(_ax_string(child.get("name")))
            length += len(texts[-1])
            if length > limit:
                break
    return _squash("".join(texts))


def _value(node: AXNode, role: str, label: str) -> str:
    raw = node.get("value")
    if not isinstance(raw, dict):
        return ""
    value = raw.get("value")
    if isinstance(value, int | float) and not isinstance(value, bool):
        text = _props(node).get("valuetext")
        if isinstance(text, str) and text and text != _number(value):
            return _quote(_squash(text), VALUE_MAX)
        return _number(value)
    if not isinstance(value, str) or not value or role == "link":
        return ""
    if role not in _VALUE_ROLES and _squash(value) == label:
        return ""
    return _quote(value, VALUE_MAX)


def _as_number(value: Any) -> float | None:
    return value if isinstance(value, int | float) and not isinstance(value, bool) else None


def _flags(props: dict[str, Any], *, skip_collapsed: bool = False) -> list[str]:
    if _FLAG_PROPS.isdisjoint(props):
        return []
    flags = []
    for prop, table in _STATE_FLAGS:
        value = props.get(prop)
        if value is None or isinstance(value, list | dict):
            continue
        flag = table.get(value)
        if flag and not (skip_collapsed and flag == "collapsed"):
            flags.append(flag)
    return flags
