"""The view an agent last saw of a tab: the refs it may act on and the document they name.

Page-layer state, so the page layer keeps it, in this module's slot on the tab
(``VIEW``): it goes with its tab, and the browsers layer below knows nothing of views.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gateway.page.view.controls import RefKey
from gateway.page.view.model import FrameSnapshot, RefElement
from gateway.tabs.tab import Slot

if TYPE_CHECKING:
    from gateway.tabs.tab import Tab

__all__ = ["VIEW", "ViewState", "current_view", "first_ref", "remember_view"]


@dataclass(frozen=True)
class ViewState:
    """The refs of the view an agent last saw, and the document they belong to."""

    refs: dict[int, RefElement]
    loader_id: str
    frames: dict[str, FrameSnapshot]   # frame id → where it hangs (session, iframe owner);
                                       # its nodes are not kept
    next_ref: int                      # the first new ref of the tab's next view
    text: str | None = None            # the whole view, when the agent holds it all (it
                                       # was handed whole or as changes): what the next
                                       # change set is taken against
    left_out: str = ""                 # the lines compaction left out of ``text``: a
                                       # change there is in no hunk, the header says it
    holder: str | None = None          # the client it was handed to (None: the only one);
                                       # another client's act on the tab gets no change set
                                       # against it, as it never saw it

    def keys(self, documents: Mapping[str, str]) -> dict[RefKey, int]:
        """Each element's number, for the next view of the same document to keep — but
        none of a frame whose document changed since (``documents``: frame id → its
        ``loader_id`` now): an iframe that navigated into a new process numbers its nodes
        from the start again, so an old backend id may name an element of the new one."""
        return {(ref.frame_id, ref.backend_node_id, ref.role, ref.name): number
                for number, ref in self.refs.items()
                if (frame := self.frames.get(ref.frame_id)) is not None
                and documents.get(ref.frame_id) == frame.loader_id}


VIEW: Slot[ViewState] = Slot("view")
"""The tab's last view, from its first."""


def current_view(tab: Tab) -> ViewState | None:
    """The tab's last view, None before the first."""
    return tab.peek(VIEW)


def first_ref(tab: Tab) -> int:
    """The first new ref of the tab's next view: new refs count on across a tab's views,
    so a number never names a second element."""
    view = tab.peek(VIEW)
    return view.next_ref if view is not None else 1


def remember_view(tab: Tab, view: ViewState) -> None:
    tab.put(VIEW, view)
