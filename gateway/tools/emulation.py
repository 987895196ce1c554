"""Emulation: a tab as a phone, in another place, on a slow network or a slow CPU."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field

from gateway.page.emulation import Geolocation, Throttle, Viewport, apply, emulating, merge

from .args import TabArg
from .definition import TabCall, tab_tool

__all__ = ["TOOLS"]

DeviceArg = Literal["iPhone 15", "Pixel 8", "iPad", "Desktop 1080p"]  # gateway.page.emulation
NetworkArg = Literal["offline", "slow-3g", "fast-4g", "online"] | Throttle


class EmulateResult(BaseModel):
    tab: int
    target: str
    emulating: dict[str, Any]


@tab_tool("Emulate a device, place or network", idempotent=True)
async def emulate(
    on: TabCall,
    tab: TabArg,
    viewport: Viewport | None = None,
    device: DeviceArg | None = None,
    user_agent: Annotated[str | None, Field(min_length=1, max_length=1000,
                                            pattern=r"^[^\r\n]+$")] = None,
    locale: Annotated[str | None, Field(pattern=r"^[A-Za-z]{2,3}(-[A-Za-z0-9]{1,8}){0,4}$")
                      ] = None,
    timezone: Annotated[str | None, Field(pattern=r"^[A-Za-z0-9_+/-]{1,64}$")] = None,
    geolocation: Geolocation | None = None,
    color_scheme: Literal["light", "dark"] | None = None,  # as mcp.types orders it: typing
    # caches `Literal[...] | None` by set equality, so the other order would come out
    reduced_motion: bool | None = None,
    network: NetworkArg | None = None,
    cpu_throttle: Annotated[float | None, Field(ge=1, le=20)] = None,
    reset: bool = False,
) -> EmulateResult:
    """Make a tab emulate a device, place, network or CPU (kept across navigations;
    each call changes only what it names; `reset` clears all first); returns it all."""
    given = {"viewport": viewport, "device": device, "user_agent": user_agent,
             "locale": locale, "timezone": timezone, "geolocation": geolocation,
             "color_scheme": color_scheme, "reduced_motion": reduced_motion,
             "network": network, "cpu_throttle": cpu_throttle}
    state = merge(emulating(on.tab), given, reset)
    await apply(on, state, on.budget)
    return EmulateResult(tab=on.tab.id, target=on.browser.name, emulating=state)


TOOLS = (emulate,)
