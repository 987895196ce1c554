"""What a control is called and what it says: labels, values, state flags.

A control with no accessible name is labelled from what Chrome saw
(placeholder, aria-label, title, alt, a child icon's title), then from its
``name`` / ``id`` attribute — which Chrome's accessibility data lacks, so
``attribute_requests`` lists the few controls the gateway must describe first.
Text beside a control that only repeats its name (its ``<label>``) is found
here too, so the view prints it once.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gateway.page.view.model import AXNode, PageSnapshot
from gateway.page.view.nodes import (
    Frame,
    ax_string,
    child_ids_of,
    descendants,
    is_control,
    name_of,
    props_of,
    role_of,
)
from gateway.page.view.roles import (
    CAPTIONS,
    FLAG_PROPS,
    LABEL_ROLES,
    LABELLED,
    NAMED_ITEMS,
    REF_ROLES,
    STATE_FLAGS,
    VALUE_MAX,
    VALUE_ROLES,
)
from gateway.page.view.text import cut, number_text, quote, squash

__all__ = [
    "as_number", "attribute_label", "attribute_requests", "ax_label", "contents_label",
    "duplicate_labels", "flags_of", "label_text", "value_text",
]


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
        frame: Frame | None = None  # indexed only if a control has no plain name
        for node in snap.nodes:
            if type(node) is not dict:
                continue
            role = role_of(node)
            if (role not in REF_ROLES and not node.get("properties")) or node.get(
                    "ignored") is True or not is_control(node, role):
                continue
            backend: int = node["backendDOMNodeId"]  # is_control checked it is one
            name = name_of(node)
            if backend in snap.attributes or any(c.isalnum() for c in name):
                continue
            frame = frame or Frame(snap, 0)
            if not ax_label(frame, node):
                wanted.append((snap.frame_id, backend))
    return wanted


_LABEL_SOURCES = ("placeholder", "aria-label", "title", "alt")


def ax_label(frame: Frame, node: AXNode) -> str:
    """The best human label Chrome's data gives a control, "" if it gives none.

    Order: the accessible name; an attribute Chrome looked at but did not use
    (``name.sources``); the description (``title``) when the name is only a
    symbol such as ``✕``; a ``title`` or ``alt`` on a descendant, as an icon
    inside a link carries.
    """
    name = name_of(node)
    if name and (name[0].isalnum() or any(c.isalnum() for c in name)):
        return name
    description = squash(ax_string(node.get("description")))
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
                text = squash(ax_string(source.get("attributeValue")))
                if text:
                    return text
    return ""


def _descendant_label(frame: Frame, node: AXNode) -> str:
    """Title or alt text of the first few descendants (breadth first)."""
    queue = child_ids_of(node)
    i = 0
    while i < len(queue) and i < 12:  # a label worth having is near the top
        child = frame.nodes.get(queue[i])
        i += 1
        if child is None:
            continue
        text = squash(ax_string(child.get("description"))) or (
            name_of(child) if role_of(child) == "image" else "")
        if text:
            return text
        queue.extend(child_ids_of(child))
    return ""


def attribute_label(frame: Frame, backend_id: int) -> str:
    attrs = frame.snap.attributes.get(backend_id) if isinstance(
        frame.snap.attributes, Mapping) else None
    if isinstance(attrs, Mapping):
        for key in ("name", "id"):
            value = attrs.get(key)
            if isinstance(value, str) and value.strip():
                return f"[{key}={cut(squash(value), 60)}]"
    return ""


def duplicate_labels(frame: Frame, kids: list[AXNode], roles: list[str],
                      parent_name: str) -> set[int]:
    """Indexes of children whose text a neighbour already says: a control's label, a legend."""
    skip: set[int] = set()
    if parent_name:
        for i, role in enumerate(roles):
            if role in CAPTIONS and label_text(frame, kids[i], len(parent_name)) == parent_name:
                skip.add(i)
    if LABEL_ROLES.isdisjoint(roles):
        return skip
    names: dict[int, str] = {}  # index → name of each labelled control among the children
    for i, role in enumerate(roles):
        if role in NAMED_ITEMS or (
                (role in LABELLED or (role not in REF_ROLES and kids[i].get("properties")))
                and is_control(kids[i], role)):  # a field, a button or a contenteditable
            name = name_of(kids[i]).rstrip(" :*")
            if name:
                names[i] = name
    if not names:
        return skip
    wanted = set(names.values())
    shortest, longest = min(map(len, wanted)), max(map(len, wanted)) + 2
    last = len(kids) - 1
    for i, role in enumerate(roles):
        if role not in LABEL_ROLES:
            continue
        if role == "StaticText" and len(ax_string(kids[i].get("name"))) < shortest:
            continue  # too short to hold any of the names (spaces, separators)
        text = label_text(frame, kids[i], longest).rstrip(" :*")
        if text not in wanted:
            continue
        for step in (1, -1):  # the nearest non-blank sibling on either side says the same
            j = i + step
            while 0 <= j <= last and roles[j] == "StaticText" and not name_of(kids[j]):
                j += step
            if names.get(j) == text:
                skip.add(i)
                break
    return skip


def label_text(frame: Frame, node: AXNode, limit: int) -> str:
    """The text inside ``node``, or a prefix of it once longer than ``limit``.

    Labels and captions are searched through; any other element only counts
    when its one child is text (``<div id=label>Notes</div>``), which keeps
    this cheap on the many wrappers that sit beside links.
    """
    role = role_of(node)
    if role == "StaticText":
        return name_of(node)
    if role not in CAPTIONS and role != "LabelText":
        only = child_ids_of(node)
        child = frame.nodes.get(only[0]) if len(only) == 1 else None
        return name_of(child) if child is not None and role_of(child) == "StaticText" else ""
    texts: list[str] = []
    length = 0
    for child in descendants(frame, node):
        if role_of(child) == "StaticText":
            texts.append(ax_string(child.get("name")))
            length += len(texts[-1])
            if length > limit:
                break
    return squash("".join(texts))


CONTENTS_SCAN = 200
"""Nodes looked at inside a control for ``contents_label``: a card is small."""


def contents_label(frame: Frame, node: AXNode, limit: int) -> str:
    """The text inside a control Chrome gave no name, up to ``limit``: a link that wraps
    an article (a search result's title and summary) gets no name from its contents,
    yet that text is what a person reads to choose it."""
    texts: list[str] = []
    length = 0
    for seen, child in enumerate(descendants(frame, node)):
        if seen >= CONTENTS_SCAN or length > limit:
            break
        if role_of(child) == "StaticText":
            texts.append(squash(ax_string(child.get("name"))))
            length += len(texts[-1]) + 1
    return " ".join(text for text in texts if text)


def value_text(node: AXNode, role: str, label: str) -> str:
    raw = node.get("value")
    if not isinstance(raw, dict):
        return ""
    value = raw.get("value")
    if isinstance(value, int | float) and not isinstance(value, bool):
        text = props_of(node).get("valuetext")
        if isinstance(text, str) and text and text != number_text(value):
            return quote(squash(text), VALUE_MAX)
        return number_text(value)
    if not isinstance(value, str) or not value or role == "link":
        return ""
    if role not in VALUE_ROLES and squash(value) == label:
        return ""
    return quote(value, VALUE_MAX)


def as_number(value: Any) -> float | None:
    return value if isinstance(value, int | float) and not isinstance(value, bool) else None


def flags_of(props: dict[str, Any], *, skip_collapsed: bool = False) -> list[str]:
    if FLAG_PROPS.isdisjoint(props):
        return []
    flags = []
    for prop, table in STATE_FLAGS:
        value = props.get(prop)
        if value is None or isinstance(value, list | dict):
            continue
        flag = table.get(value)
        if flag and not (skip_collapsed and flag == "collapsed"):
            flags.append(flag)
    return flags
