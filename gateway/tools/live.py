"""Let a person watch the gateway's tabs: ``live_view``.

The URL opens the live page (``gateway.live``): the targets and tabs, the chosen tab
as it paints, the agent's recent calls on it. Viewing changes nothing, so the tool is
read-only; ``control: true`` (not in a read-only gateway) lets the person's mouse and
keyboard reach the tab. Each call makes a new link, used once, idle-expiring.
"""

from __future__ import annotations

from pydantic import BaseModel

from gateway.errors import NotAllowed
from gateway.live.links import LINK_IDLE_S
from gateway.output.absent import absent

from .args import OptionalTab
from .definition import Gateway, tool

__all__ = ["TOOLS"]


class LiveView(BaseModel):
    url: str
    tab: int | None = absent()
    control: bool = absent(False)
    idle_expiry_s: int


@tool("Watch tabs live", read_only=True)
async def live_view(gateway: Gateway, tab: OptionalTab = None, control: bool = False) -> LiveView:
    """A URL for the user to watch the tabs live (tab: only that one); control: true
    lets them use it."""
    if gateway.live is None:
        raise NotAllowed("this gateway was built without a live page")
    if control and gateway.registry.config.read_only:
        raise NotAllowed("this gateway runs read-only (--read-only): live_view offers "
                         "viewing only; call it without control")
    if tab is not None:
        await gateway.registry.tab(tab)  # an unknown id fails here, not on the page
    url = await gateway.live.url(tab, control=control)
    return LiveView(url=url, tab=tab, control=control, idle_expiry_s=LINK_IDLE_S)


TOOLS = (live_view,)
