"""The view an agent last saw of a tab: the refs it may act on and the document they name.

It lives on the tab (``Tab.view``), but the browsers layer below knows nothing
of views, so ``Tab.view`` is typed ``object``; ``current_view`` is the one
place that narrows it back.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from gateway.page.view.model import FrameSnapshot, RefTarget

if TYPE_CHECKING:
    from gateway.browsers.tab import Tab

__all__ = ["ViewState", "current_view"]


@dataclass(frozen=True)
class ViewState:
    """The refs of the view an agent last saw, and the document they belong to."""

    refs: dict[int, RefTarget]
    loader_id: str
    frames: dict[str, FrameSnapshot]   # frame id → where it hangs (session, iframe owner);
                                       # its nodes are not kept


def current_view(tab: Tab) -> ViewState | None:
    """The tab's last view, None before the first (or if something else was stored)."""
    view = tab.view
    return view if isinstance(view, ViewState) else None
