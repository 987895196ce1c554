"""Reading Chrome's AX nodes without ever failing on odd input, and one frame indexed.

Chrome defines the nodes and a broken page or a hostile fuzz case may send
anything, so every reader checks types and falls back to "" / None / [].
``Frame`` indexes one frame's nodes by id and links the child frames hanging off
its ``<iframe>`` elements; the walkers here go by loops, not recursion, because
ignored wrappers can nest deeper than Python's stack.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from gateway.page.view.model import AXNode, FrameSnapshot, PageSnapshot
from gateway.page.view.roles import BULLETS, REF_ROLES
from gateway.page.view.text import number_text, squash

__all__ = [
    "Frame", "ax_string", "backend_id_of", "child_ids_of", "descendants", "first_heading_text",
    "hoist", "holds_control", "index_frames", "is_control", "list_marker", "name_of",
    "props_of", "role_of",
]


def role_of(node: AXNode) -> str:
    role = node.get("role")
    if type(role) is dict:
        value = role.get("value")
        if type(value) is str:
            return value
    return ""


def name_of(node: AXNode) -> str:
    return squash(ax_string(node.get("name")))


def ax_string(value: Any) -> str:
    """The text of an ``AXValue`` (strings and numbers), else ""."""
    if type(value) is dict:
        inner = value.get("value")
        if type(inner) is str:
            return inner
        if type(inner) is int or type(inner) is float:
            return number_text(inner)
    return ""


def props_of(node: AXNode) -> dict[str, Any]:
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


def backend_id_of(node: AXNode) -> int | None:
    value = node.get("backendDOMNodeId")
    return value if type(value) is int else None  # not a bool, whose type is bool


def child_ids_of(node: AXNode) -> list[str]:
    ids = node.get("childIds")
    return [i for i in ids if isinstance(i, str)] if isinstance(ids, list) else []


def is_control(node: AXNode, role: str) -> bool:
    """Whether the view gives ``node`` a ref: a control Chrome can map to a DOM node."""
    if role in REF_ROLES:
        return backend_id_of(node) is not None and (
            role != "gridcell" or props_of(node).get("focusable") is True)
    if node.get("properties") and backend_id_of(node) is not None:
        # A contenteditable root: Chrome keeps its role (often generic) but marks it.
        props = props_of(node)
        return bool(props.get("editable")) and props.get("focusable") is True
    return False


def holds_control(nodes: Mapping[Any, AXNode], node: AXNode, limit: int) -> bool:
    """Whether a control is among the first ``limit`` nodes below ``node``.

    Document order; ignored nodes count towards ``limit`` too, so the loop is bounded
    whatever the tree (a broken one may even repeat ids).
    """
    stack, seen = child_ids_of(node)[::-1], 0
    while stack and seen < limit:
        kid = nodes.get(stack.pop())
        seen += 1
        if kid is None:
            continue
        if kid.get("ignored") is not True and is_control(kid, role_of(kid)):
            return True
        stack.extend(child_ids_of(kid)[::-1])
    return False


class Frame:
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
        self.by_owner: dict[int, list[Frame]] = {}
        self.trailing: list[Frame] = []  # child frames whose <iframe> is not known


def index_frames(snapshot: PageSnapshot) -> list[Frame]:
    """Frames in snapshot order, each linked to its parent; roots first in the result."""
    frames = [Frame(snap, i) for i, snap in enumerate(snapshot.frames)]
    by_id: dict[str, Frame] = {}
    for frame in frames:
        by_id.setdefault(frame.snap.frame_id, frame)
    roots: list[Frame] = []
    for frame in frames:
        parent = by_id.get(frame.snap.parent_frame_id or "")
        if parent is None or parent is frame:
            roots.append(frame)
        elif frame.snap.owner_backend_node_id is None:
            parent.trailing.append(frame)
        else:
            parent.by_owner.setdefault(frame.snap.owner_backend_node_id, []).append(frame)
    return roots


def hoist(frame: Frame, ignored: AXNode, out: list[AXNode]) -> None:
    """Append what an ignored node holds that is not ignored itself, in order.

    A loop, not recursion: ignored wrappers can nest deeper than Python's stack.
    """
    nodes, seen = frame.nodes, frame.seen
    stack = child_ids_of(ignored)[::-1]
    while stack:
        child_id = stack.pop()
        child = nodes.get(child_id)
        if child is None or child_id in seen:
            continue
        seen.add(child_id)
        if child.get("ignored") is True:
            stack.extend(child_ids_of(child)[::-1])
        else:
            out.append(child)


def descendants(frame: Frame, node: AXNode) -> Iterator[AXNode]:
    stack = child_ids_of(node)[::-1]
    seen: set[str] = set()
    while stack:
        child_id = stack.pop()
        child = frame.nodes.get(child_id)
        if child is None or child_id in seen:
            continue
        seen.add(child_id)
        if child.get("ignored") is not True:
            yield child
        stack.extend(child_ids_of(child)[::-1])


def first_heading_text(frame: Frame, node: AXNode) -> str:
    """The first heading near the top of a container (what ``aria-labelledby`` names)."""
    for count, child in enumerate(descendants(frame, node)):
        if role_of(child) == "heading":
            return name_of(child)
        if count >= 8:
            break
    return ""


def list_marker(frame: Frame, item: AXNode) -> str:
    for child_id in child_ids_of(item)[:2]:
        child = frame.nodes.get(child_id)
        if child is not None and role_of(child) == "ListMarker":
            marker = name_of(child)
            if marker and marker not in BULLETS:
                return marker + " "
    return "- "
