"""Items a script made clickable: list items and plain elements an author named.

An app's file list or card grid is often ``<li>``s and ``<div>``s with click, double-click
and drag handlers, and nothing in Chrome's accessibility tree says so: no role of a
control, no click listener. What such an element does carry is a name its author gave
(``aria-label`` or ``title``: "Name: draft.txt Size: 69 B …"), which Chrome reports as
the source of the node's name. Such a node gets a ref (``item#N "label"``) so an agent
can click, double-click or drag it as it does a button — unless a control inside it
(the item's link, its checkbox) is the thing to act on: that control keeps the ref, and
the item prints as before.
"""

from __future__ import annotations

from gateway.page.view.model import AXNode
from gateway.page.view.nodes import (
    Frame,
    backend_id_of,
    descendants,
    holds_control,
    name_of,
    role_of,
)
from gateway.page.view.roles import ITEM_NAME_SOURCES, ITEM_ROLES, ITEM_SCAN

__all__ = ["author_name", "fits_a_line", "is_item", "label_says_all"]


def author_name(node: AXNode) -> str:
    """The node's name if Chrome took it from ``ITEM_NAME_SOURCES``, else "".

    Chrome lists the sources it tried in order (``name.sources``); the first with a
    value that no later one superseded is the one the name came from.
    """
    raw = node.get("name")
    sources = raw.get("sources") if isinstance(raw, dict) else None
    if not isinstance(sources, list):
        return ""
    for source in sources:
        if isinstance(source, dict) and "value" in source and not source.get("superseded"):
            if source.get("type") != "attribute" or source.get(
                    "attribute") not in ITEM_NAME_SOURCES:
                return ""
            name = name_of(node)
            return name if any(c.isalnum() for c in name) else ""
    return ""


def is_item(frame: Frame, node: AXNode, role: str) -> bool:
    """Whether the view gives ``node`` a ref as an item: a list item or generic element
    named by its author, mapped to a DOM node, with no control among ``ITEM_SCAN`` nodes
    below it."""
    return (role in ITEM_ROLES and backend_id_of(node) is not None and bool(author_name(node))
            and not holds_control(frame.nodes, node, ITEM_SCAN))


def label_says_all(frame: Frame, node: AXNode, label: str) -> bool:
    """Whether every text inside ``node`` is already in ``label``: then the item's line is
    its ref alone (looking at no more than ``ITEM_SCAN`` nodes; a bigger item never is)."""
    said = label.casefold()
    for count, child in enumerate(descendants(frame, node)):
        if count >= ITEM_SCAN:
            return False
        if role_of(child) == "StaticText" and name_of(child).casefold() not in said:
            return False
    return True


def fits_a_line(frame: Frame, node: AXNode) -> bool:
    """Whether an item is small enough (``ITEM_SCAN`` nodes at most) for what it holds to
    run on after its ref on one line, as a table cell's content does; a bigger one is
    printed line by line below its ref, so nothing of it is lost from the view."""
    return sum(1 for _ in zip(descendants(frame, node), range(ITEM_SCAN + 1),
                              strict=False)) <= ITEM_SCAN
