"""Refs and the one-line text of a control: ``role#N "label" = value {options} (flags)``.

``Controls`` owns the ref numbering of one render (a select's options take refs
too, so describing a control may number more than one) and knows the page's
origin, which links and frame URLs are shortened against. An element the tab's
last view of the same document numbered, with the same role and label, keeps its
number (``keep``), so a change
set after an action shows only what changed, and a ref the model holds stays good
while its element is there; an element new to the view gets the next number,
never one an earlier view gave.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gateway.page.view.labels import (
    as_number,
    attribute_label,
    ax_label,
    contents_label,
    flags_of,
    value_text,
)
from gateway.page.view.model import AXNode, RefElement
from gateway.page.view.nodes import (
    Frame,
    backend_id_of,
    descendants,
    name_of,
    props_of,
    role_of,
)
from gateway.page.view.roles import NAME_MAX, OPTIONS_MAX, RANGE_ROLES, URL_MAX
from gateway.page.view.text import cut, number_text, origin_of, quote

__all__ = ["Controls", "RefKey"]

RefKey = tuple[str, int, str, str]
"""An element across views of one document, as the view named it: its frame id, backend
node id, role and label. An element an app re-used for something else (a list row
relabelled to another file) is a new one: its old ref, acted on, must not reach it."""


class Controls:
    """Ref numbering and control descriptions for one render of one page."""

    def __init__(self, page_url: str, first_ref: int,
                 keep: Mapping[RefKey, int] | None = None) -> None:
        self.page_origin = origin_of(page_url)
        self.next_ref = first_ref
        self.keep = keep or {}
        self.refs: dict[int, RefElement] = {}

    def new_ref(self, frame: Frame, backend: int, role: str, name: str) -> int:
        """The element's number from the last view (``keep``), else the next one, now
        pointing at ``backend`` in ``frame``."""
        number = self.keep.get((frame.snap.frame_id, backend, role, name))
        if number is None or number in self.refs:
            number = self.next_ref
            self.next_ref += 1
        self.refs[number] = RefElement(frame.snap.frame_id, frame.snap.session, backend, role,
                                      name)
        return number

    def describe(self, frame: Frame, node: AXNode, role: str, props: dict[str, Any],
                 ref: str | None, label: str | None = None, backend: int | None = None) -> str:
        """``role#N "label" = value [min..max] {options} (flags)``, or ``#N "label"->url``."""
        if label is None:
            label = ax_label(frame, node)
        if label:
            head = (ref or role) + " " + quote(label, NAME_MAX)
        elif ref is None:  # not a control: nothing to tell it apart by
            head = role
        else:
            contents = contents_label(frame, node, NAME_MAX)
            head = ref + " " + ((backend is not None and attribute_label(frame, backend))
                                or (quote(contents, NAME_MAX) if contents else "[unnamed]"))
        if role == "link":
            url = props.get("url")
            if type(url) is str and url:
                head += "->" + self.short_url(url, frame.snap.url)
        parts = [head]
        options = self.options(frame, node, role) if ref and role in (
            "combobox", "listbox") else None
        value = value_text(node, role, label) if "value" in node else ""
        if value and options is None:
            parts.append("= " + value)
        if role in RANGE_ROLES:
            low, high = as_number(props.get("valuemin")), as_number(props.get("valuemax"))
            if low is not None and high is not None:
                parts.append(f"[{number_text(low)}..{number_text(high)}]")
        if options is not None:
            parts.append(options)
        flags = flags_of(props, skip_collapsed=options is not None)
        if flags:
            parts.append("(" + ", ".join(flags) + ")")
        return head if len(parts) == 1 else " ".join(parts)

    def options(self, frame: Frame, node: AXNode, role: str) -> str | None:
        """``{a, *b}`` for a select's options; ``{#7 a, #8 *b}`` when they get refs."""
        found = [n for n in descendants(frame, node) if role_of(n) == "option"]
        if not found:
            return None if role == "combobox" else "{}"  # an editable combobox's list is apart
        # A native select's options sit in a popup that cannot be clicked: no refs there.
        native_popup = any(role_of(n) == "MenuListPopup" for n in descendants(frame, node))
        shown: list[str] = []
        for option in found:
            props = props_of(option)
            selected = "*" if props.get("selected") is True else ""
            text = selected + cut(name_of(option) or "[unnamed]", 60)
            if props.get("disabled") is True:
                text += " (disabled)"
            backend = backend_id_of(option)
            if not native_popup and backend is not None:
                number = self.new_ref(frame, backend, "option", name_of(option))
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
            return cut("#" + fragment, URL_MAX)
        origin = self.page_origin
        if origin and url.startswith(origin) and url[len(origin):len(origin) + 1] in (
                "/", "?", "#", ""):
            return cut(url[len(origin):] or "/", URL_MAX)
        return cut(url, URL_MAX)
