"""How each accessibility role prints, and the length limits of the view.

Plain data, kept apart from the code that reads it so the format's rules can be
read in one place: which roles get a ref, which are containers, blocks, tables,
and the cut-off lengths of names, values and URLs.
"""

from __future__ import annotations

__all__ = [
    "BLOCKS", "BULLETS", "CAPTIONS", "CELLS", "CONTAINERS", "FLAG_PROPS", "HEADERS",
    "ITEM_NAME_SOURCES", "ITEM_ROLES", "ITEM_SCAN", "LABELLED", "LABEL_ROLES", "MAX_DEPTH",
    "NAMED_CONTAINERS", "NAMED_ITEMS", "NAME_MAX", "OPTIONS_MAX", "RANGE_ROLES", "REF_ROLES",
    "ROLE_LABELS", "ROWS", "SKIPPED", "STATE_FLAGS", "TABLES", "URL_MAX", "VALUE_MAX",
    "VALUE_ROLES",
]


REF_ROLES = frozenset({
    "link", "button", "textbox", "searchbox", "checkbox", "radio", "combobox", "listbox",
    "slider", "spinbutton", "switch", "tab", "menuitem", "menuitemcheckbox",
    "menuitemradio", "treeitem", "option", "scrollbar", "gridcell",
    # Chrome's internal roles for native controls:
    "DisclosureTriangle", "Date", "DateTime", "InputTime", "ColorWell", "PopUpButton",
    "ToggleButton",
})
"""Roles that get a ref (``gridcell`` only when focusable). Options of a native select are
listed in its braces instead; those of a listbox get refs there."""

ITEM_ROLES = frozenset({"listitem", "generic"})
"""Roles a script makes clickable without saying so (a file list's ``<li>``, a ``<div>``):
they get a ref as ``item#N`` when their author named them (``ITEM_NAME_SOURCES``) and
they hold no control of their own — Chrome marks no click listener in its tree, and a
name an author gave is the sign that the element is one thing to act on."""
ITEM_NAME_SOURCES = frozenset({"aria-label", "title"})
"""The attributes an item's name must come from: an author's, not its contents. (Chrome
names a plain ``<div title>`` nothing unless it is focusable, so titles on text spans do
not turn into refs.)"""
ITEM_SCAN = 64
"""Nodes looked at below an item for a control it holds (which then keeps the ref)."""

ROLE_LABELS = {
    "DisclosureTriangle": "summary", "Date": "date", "DateTime": "datetime",
    "InputTime": "time", "ColorWell": "color", "PopUpButton": "button",
    "ToggleButton": "button",
}
"""Chrome's internal role names, printed as the names a web developer knows."""

VALUE_ROLES = frozenset({
    "textbox", "searchbox", "combobox", "spinbutton", "slider", "scrollbar",
    "Date", "DateTime", "InputTime", "ColorWell", "progressbar", "meter",
})
"""Roles whose value is always shown; other roles show a value only if it adds to the name."""

RANGE_ROLES = frozenset({"slider", "spinbutton", "scrollbar", "progressbar", "meter"})

LABEL_ROLES = frozenset({"StaticText", "LabelText", "generic", "paragraph"})
"""Roles whose text, when it is exactly the name of the control beside it, is its label."""
NAMED_ITEMS = frozenset({"progressbar", "meter"})
"""Non-controls printed with their name, so text naming them is dropped too."""
LABELLED = REF_ROLES - {"link", "option", "tab", "treeitem", "gridcell", "menuitem",
                          "menuitemcheckbox", "menuitemradio", "DisclosureTriangle"}
"""Controls a ``<label>`` names: fields, and buttons (a file input is one). A link's text
beside a link is not its label."""

CONTAINERS = {
    "banner": "header", "navigation": "nav", "main": "main", "complementary": "aside",
    "contentinfo": "footer", "search": "search", "form": "form", "region": "section",
    "article": "article", "dialog": "dialog", "alertdialog": "dialog",
}
"""Landmarks and sections: printed as a short label line, their content indented."""

NAMED_CONTAINERS = frozenset({
    "group", "radiogroup", "tablist", "menubar", "menu", "toolbar", "tree", "list",
})
"""Groups that get a label line (and indentation) only when they have a name."""

BLOCKS = frozenset({
    "paragraph", "figure", "separator", "tabpanel", "group", "radiogroup", "tablist",
    "menubar", "menu", "toolbar", "tree", "note", "math", "DescriptionList", "feed",
    "log", "status", "alert", "timer", "marquee",
})
"""Roles set apart from their neighbours by a blank line."""

TABLES = frozenset({"table", "grid", "treegrid"})
ROWS = frozenset({"row"})
CELLS = frozenset({"cell", "gridcell", "columnheader", "rowheader"})
HEADERS = frozenset({"columnheader", "rowheader"})
CAPTIONS = frozenset({"caption", "Legend", "Figcaption"})
SKIPPED = frozenset({"InlineTextBox", "ListMarker", "MenuListPopup"})
BULLETS = frozenset("•◦▪▫■□●○‣\u2043\u2013-*")
"""List markers that are mere bullets (printed as ``- ``); others (``1.``, ``a)``) are kept."""

STATE_FLAGS = (
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
FLAG_PROPS = frozenset(prop for prop, _ in STATE_FLAGS)

NAME_MAX = 200
"""A control's name is its only text (children are not repeated), so it is cut late."""
VALUE_MAX = 100
URL_MAX = 80
OPTIONS_MAX = 25
"""A native select with more options shows this many (and the selected ones)."""
MAX_DEPTH = 150
"""Deeper nodes are not printed: bounds recursion (ignored wrappers do not count)."""
