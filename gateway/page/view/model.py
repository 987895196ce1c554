"""What a page view is rendered from, and what it hands back: the snapshot data model.

A ``PageSnapshot`` is every frame's accessibility tree as Chrome sent it, plus
where each frame hangs; ``snapshot_from_json`` reads the JSON form the fixtures
(``fixtures/ax/*.json``) and the benchmark use. A ``View`` is the rendered text
with ``RefElement``s, enough to act on each ``#N`` in the right CDP session.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["AXNode", "FrameSnapshot", "PageSnapshot", "RefElement", "View", "snapshot_from_json"]


AXNode = dict[str, Any]
"""One ``Accessibility.AXNode`` exactly as Chrome sends it."""


@dataclass(frozen=True)
class FrameSnapshot:
    """One frame's accessibility tree and where it hangs in the page.

    ``session`` is whatever names the CDP session that owns the frame (the
    gateway's sessionId; ``main`` / ``oopif-N`` in fixtures) and is handed back
    in ``RefElement`` untouched. ``owner_backend_node_id`` is the ``<iframe>``
    element in the parent frame (``DOM.getFrameOwner``), None for the main
    frame. ``attributes`` holds DOM attributes (``DOM.describeNode``) of the
    controls ``attribute_requests`` asked about, by backend node id. ``loader_id`` names
    the frame's document: a frame keeps its id when it navigates, and a document in a
    new renderer process (a cross-site iframe's next site) numbers its backend nodes
    from the start again.
    """

    frame_id: str
    parent_frame_id: str | None
    session: str
    url: str
    owner_backend_node_id: int | None
    nodes: Sequence[AXNode]
    attributes: Mapping[int, Mapping[str, str]] = field(default_factory=dict)
    loader_id: str = ""


@dataclass(frozen=True)
class PageSnapshot:
    """Everything a view is rendered from: the page's URL and title and all its frames.

    JSON form (``snapshot_from_json``; ``fixtures/ax/*.json``)::

        {"url": str, "title": str,
         "frames": [{"frame_id": str, "parent_frame_id": str | null, "session": str,
                     "url": str, "owner_backend_node_id": int | null,
                     "loader_id": str (optional),
                     "attributes": {"<backendNodeId>": {"name": "q", ...}},
                     "nodes": [AXNode, ...]}]}

    The first frame without a parent in the snapshot is the main frame.
    """

    url: str
    title: str
    frames: Sequence[FrameSnapshot]


@dataclass(frozen=True)
class RefElement:
    """What ``#N`` in a view points at: enough to act on it in the right session."""

    frame_id: str
    session: str
    backend_node_id: int
    role: str
    name: str


@dataclass(frozen=True)
class View:
    """The rendered text and its refs: the keys are exactly the ``#N`` in ``text``; new
    ones count up by one in document order from ``render_view``'s ``first_ref``, and
    ``next_ref`` is the first a later view may give."""

    text: str
    refs: dict[int, RefElement]
    next_ref: int = 1
    part: str | None = None   # ``render_view(within=…)``: that part's lines, if printed
    part_role: str = ""


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
        loader_id=_string(data, "loader_id", f"frames[{index}]."),
    )


def _string(data: Mapping[str, Any], key: str, where: str) -> str:
    value = data.get(key, "")
    if not isinstance(value, str):
        raise ValueError(f"{where}{key} is not a string")
    return value
