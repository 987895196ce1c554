"""Taking a tab's view: snapshot every frame, render it, keep its refs as the tab's.

The one entry to the page view for the tools (``take``): browse, browse_view and
browse_act end in it. It is the I/O side of this package, so the package itself does
not import it (``page.snapshot`` and ``page.element``, which it calls, import the pure
modules beside it).
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
from collections.abc import Iterator

from pydantic import BaseModel

from gateway.browsers.session import TabSession
from gateway.output.absent import absent
from gateway.output.sizing import fit
from gateway.page.act.element import TabInput
from gateway.page.snapshot import fetch_snapshot
from gateway.page.view.changes import changes_between
from gateway.page.view.compact import compact_runs
from gateway.page.view.focus import line_matcher, narrow_view, scopes_of
from gateway.page.view.model import FrameSnapshot, View
from gateway.page.view.render import render_view
from gateway.page.view.state import ViewState, current_view, first_ref, remember_view
from gateway.tabs.tab import Tab

__all__ = ["PageView", "take"]


class PageView(BaseModel):
    tab: int
    target: str
    url: str
    view: str
    refs: int
    truncated: bool = absent(False)
    narrowed: str | None = absent()  # what find / within left of the view
    changes: str | None = absent()   # ``view`` is a change set: how big, against what

    def header(self) -> str:
        """Which tab, and how many refs; the URL is the view's own first line."""
        cut = " (view truncated: raise max_chars)" if self.truncated else ""
        narrowed = "".join(f"; {said}" for said in (self.narrowed, self.changes) if said)
        return f"tab {self.tab} on {self.target} ({self.refs} refs{narrowed}){cut}"

    def as_text(self) -> str:
        """The view as plain text after a one-line header (``ReadsAsText``)."""
        return f"{self.header()}\n{self.view}"


async def take(on: TabSession, max_chars: int, find: str | None = None,
               within: int | None = None, changes: bool = False,
               holder: str | None = None) -> PageView:
    """Snapshot every frame, render, and make the new refs the tab's current ones.

    An element the last view of the same document numbered keeps its number; a new
    one gets a number no view of the tab gave, so a ref can never name a second
    element. Hold ``tab.lock``. ``find`` / ``within`` narrow what is shown, not what
    is remembered: the refs kept are the whole view's, and long runs of rows are
    shortened only in the whole view (``gateway.page.view.compact``). ``changes``: hand
    back only what changed since the whole view the agent holds
    (``gateway.page.view.changes``) when that is the same document, the last view was
    handed to this same client (``holder``: the tab is one for every client of the
    gateway, the text each holds is not) and the change set is under half the view;
    else the view.
    """
    tab = on.tab
    element = TabInput(on).ref(within)[1] if within is not None else None
    if find is not None:
        line_matcher(find)  # a bad regex is refused before any browser work
    last = current_view(tab)
    with _collector_paused():
        snapshot, loader_id = await fetch_snapshot(on)
        first = first_ref(tab)
        same = last if last is not None and last.loader_id == loader_id else None
        rendered = render_view(snapshot, first_ref=first,
                               within=scopes_of(snapshot, element) if element is not None else (),
                               keep=same.keys({f.frame_id: f.loader_id
                                               for f in snapshot.frames})
                               if same is not None else None)
        # Refs need only where each frame hangs, not its tree: a news page's AX nodes
        # are ~4 MB of objects a tab would otherwise hold until its next view.
        frames = {f.frame_id: dataclasses.replace(f, nodes=(), attributes={})
                  for f in snapshot.frames}
        url = snapshot.url
        del snapshot  # the tree is freed here, before the collector is back on
    tab.document_seen(loader_id)
    text, narrowed = narrow_view(rendered, find, within)
    hidden: list[str] = []
    whole = compact_runs(rendered.text, hidden)  # what the agent holds of the page, once shown
    left_out = "\n".join(hidden)
    if (changes and same is not None and same.text is not None and same.holder == holder
            and narrowed is None):
        found = changes_between(same.text, whole)
        if len(found.text) <= min(len(whole) // 2, max_chars):
            _remember(tab, rendered, loader_id, frames, whole, holder, left_out)
            return PageView(tab=tab.id, target=on.browser.name, url=url, view=found.text,
                            refs=len(rendered.refs),
                            changes=found.summary(left_out != same.left_out))
    fitted = fit(whole if narrowed is None else text, max_chars)
    _remember(tab, rendered, loader_id, frames,
              whole if narrowed is None and not fitted.truncated else None, holder, left_out)
    return PageView(tab=tab.id, target=on.browser.name, url=url, view=fitted.value,
                    refs=len(rendered.refs), truncated=fitted.truncated, narrowed=narrowed)


def _remember(tab: Tab, rendered: View, loader_id: str, frames: dict[str, FrameSnapshot],
              held: str | None, holder: str | None, left_out: str) -> None:
    """The view's refs as the tab's, and the text ``holder`` now holds of it all (None
    when it was shown less) with the lines compaction left out of it."""
    remember_view(tab, ViewState(rendered.refs, loader_id, frames, next_ref=rendered.next_ref,
                                 text=held, left_out=left_out, holder=holder))


_views_pausing = 0


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """The cyclic garbage collector held off while a view is fetched and rendered.

    A view parses ~15,000 containers of AX tree (a news page's ~600 kB of JSON) and
    drops them all when it is done; none is part of a cycle. Collected while they
    were made and read, they were scanned two or three times over (~2 ms of a view on
    a quiet machine); held off, their reference counts free them before any collection
    sees them. Views at once share one pause, and the collector comes back on when the
    last one ends; a collector someone else turned off (the start) is left to them.
    """
    global _views_pausing
    if _views_pausing == 0 and not gc.isenabled():
        yield
        return
    _views_pausing += 1
    gc.disable()
    try:
        yield
    finally:
        _views_pausing -= 1
        if _views_pausing == 0:
            gc.enable()
