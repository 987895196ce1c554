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
* a list item or generic element its author named (``aria-label``, ``title``) that
  holds no control is one a script made clickable: ``item#N "label"``, then what it
  holds that the label does not say (``items``);
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

Modules, each with one job: ``model`` (the snapshot and view data, JSON
parsing), ``roles`` (which role prints how, length limits), ``text`` (quoting,
cutting), ``nodes`` (safe AX node readers, a frame indexed), ``labels`` (what a
control is called and says), ``controls`` (ref numbering, a control's line),
``items`` (the elements a script made clickable), ``out`` (lines being written),
``render`` (the pass itself), ``state`` (the
tab's last view, which refs are checked against) and ``focus`` (a view narrowed to
the lines that match, or to one part of the page). ``take`` is the one that does
I/O: a tab's view fetched, rendered and kept, for the tools (not imported here).
"""

from __future__ import annotations

from gateway.page.view.focus import Found, find_lines, line_matcher, narrow_view, scopes_of
from gateway.page.view.labels import attribute_requests
from gateway.page.view.model import (
    FrameSnapshot,
    PageSnapshot,
    RefElement,
    View,
    snapshot_from_json,
)
from gateway.page.view.render import render_view
from gateway.page.view.roles import URL_MAX
from gateway.page.view.state import ViewState, current_view, first_ref, remember_view

__all__ = [
    "URL_MAX",
    "Found",
    "FrameSnapshot",
    "PageSnapshot",
    "RefElement",
    "View",
    "ViewState",
    "attribute_requests",
    "current_view",
    "find_lines",
    "first_ref",
    "line_matcher",
    "narrow_view",
    "remember_view",
    "render_view",
    "scopes_of",
    "snapshot_from_json",
]
