"""Targets: which browsers this gateway serves, and whether they answer."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import BaseModel

from gateway.errors import TargetUnavailable

from .args import TargetArg
from .definition import Tools

if TYPE_CHECKING:
    from gateway.browsers.browser import Browser
    from gateway.browsers.registry import Registry

__all__ = ["register"]


class TargetInfo(BaseModel):
    name: str
    transport: str
    host: str
    state: str
    browser: str | None
    cdp_endpoint: str | None
    tabs: int
    error: str | None
    launched: bool   # the gateway started this browser (launch = true)
    restarts: int    # times it started it again after it died


class TargetList(BaseModel):
    targets: list[TargetInfo]


class PingResult(BaseModel):
    target: str
    connected: bool
    cdp_endpoint: str | None
    browser: str | None
    protocol: str | None
    latency_ms: float | None
    error: str | None = None


def _endpoint(target: Browser) -> str | None:
    e = target.endpoint
    return f"{e.address}{e.browser_path} ({e.found_by})" if e is not None else None


def register(tools: Tools, registry: Registry) -> None:
    @tools.tool(read_only=True)
    async def list_targets() -> TargetList:
        """List the configured browsers (targets) with their connection state.

        Use first to see target names. `state` is up / connecting / down; `error`
        says why a target is down. `launched`: the gateway started this browser
        itself; `restarts`: how often it started it again after it died. Answers
        from memory, never waits on a browser.
        """
        return TargetList(targets=[
            TargetInfo(name=t.name, transport=t.host.kind, host=t.host.label,
                       state=t.state, browser=t.browser, cdp_endpoint=_endpoint(t),
                       tabs=len(t.tabs), error=t.error, launched=t.launched,
                       restarts=t.restarts)
            for t in registry.targets.values()
        ])

    @tools.tool(read_only=True)
    async def ping(target: TargetArg = None) -> PingResult:
        """Check that a target's browser answers, and measure one CDP round trip.

        Returns connected=false with the reason when the target is down.
        """
        t = registry.target(target)
        try:
            version, latency_ms = await t.ping()
        except TargetUnavailable as exc:
            return PingResult(target=t.name, connected=False, cdp_endpoint=_endpoint(t),
                              browser=None, protocol=None, latency_ms=None, error=str(exc))
        return PingResult(target=t.name, connected=True, cdp_endpoint=_endpoint(t),
                          browser=version.get("product"), protocol=version.get("protocolVersion"),
                          latency_ms=round(latency_ms, 3))
