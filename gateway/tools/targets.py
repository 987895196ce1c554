"""Targets: which browsers this gateway serves, and whether they answer."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from pydantic import BaseModel

from gateway.cdp.consent import WAITING
from gateway.errors import TargetUnavailable
from gateway.output.absent import absent

from .args import TargetArg
from .definition import Gateway, tool

if TYPE_CHECKING:
    from gateway.browsers.browser import Browser
    from gateway.fleet.group import HostGroup

__all__ = ["TOOLS"]


class TargetInfo(BaseModel):
    name: str
    transport: str
    host: str
    state: str
    browser: str | None
    cdp_endpoint: str | None
    tabs: int
    error: str | None = absent()  # why it is not up: left out while it is
    # A browser a host scan found (browsers = "all"): what tells it apart.
    pid: int | None = absent()
    started: str | None = absent()
    profile: str | None = absent()
    port: int | None = absent()
    program: str | None = absent()
    started_by: str | None = absent()
    # A share (shared = true): the machine that shares it, and until when.
    sharer: str | None = absent()
    expires: str | None = absent()
    # A scan or shares group itself: the browsers it found, by target name; a shares
    # group says so, and what it could not make a target of, and why.
    browsers: list[str] | None = absent()
    shared: bool | None = absent()
    skipped: list[str] | None = absent()
    # A target with launch = true: whether the gateway started the browser it serves,
    # and how often it started it again after it died.
    launched: bool | None = absent()
    restarts: int | None = absent()
    # "agent": the person's own browser; the agent sees only the tabs it opened or was
    # handed (``tabs = "agent"``); left out for "all".
    tab_scope: str | None = absent()
    # A person's own Chrome, reached through its remote-debugging setting: each new
    # connection asks them (state "waiting for the person to allow" meanwhile).
    personal: bool | None = absent()


def _info(browser: Browser) -> TargetInfo:
    info = TargetInfo(name=browser.name, transport=browser.host.kind,
                      host=browser.host.label,
                      state=WAITING if browser.asking else browser.state,
                      browser=browser.product, cdp_endpoint=_endpoint(browser),
                      tabs=len(browser.tabs), error=browser.error,
                      tab_scope="agent" if browser.pages.scope.agent_only else None,
                      personal=browser.personal or None)
    if browser.launcher is not None:
        info = info.model_copy(update={"launched": browser.launcher.attached,
                                       "restarts": browser.launcher.restarts})
    origin = browser.origin
    return info if origin is None else info.model_copy(update=origin.shown())


def _group_info(g: HostGroup) -> TargetInfo:
    info = TargetInfo(name=g.name, transport=g.host.kind, host=g.host.label, state=g.state,
                      browser=None, cdp_endpoint=None, tabs=0, error=g.error,
                      browsers=g.members)
    return info.model_copy(update={"shared": g.config.shared or None,
                                   "skipped": g.skipped or None})


class TargetList(BaseModel):
    targets: list[TargetInfo]


class PingResult(BaseModel):
    target: str
    connected: bool
    cdp_endpoint: str | None = absent()
    browser: str | None = absent()
    protocol: str | None = absent()
    latency_ms: float | None = absent()
    error: str | None = absent()


def _endpoint(browser: Browser) -> str | None:
    e = browser.endpoint
    return f"{e.shown} ({e.found_by})" if e is not None else None


@tool("List targets", read_only=True)
async def list_targets(gateway: Gateway) -> TargetList:
    """List the targets (browsers): state (up/connecting/down/gone, or waiting for
    the person to allow), why one is down. Call first.
    """
    return TargetList(targets=[
        *(_group_info(g) for g in gateway.registry.groups.values()),
        *(_info(browser) for browser in gateway.registry.browsers.values()),
        *(_info(browser) for browser in gateway.registry.departed()),
    ])

@tool("Check a target answers", read_only=True)
async def ping(gateway: Gateway, target: TargetArg = None) -> PingResult:
    """Check that a target's browser answers, timing a CDP round trip."""
    browser = gateway.registry.browser(target)
    start = time.perf_counter()
    try:
        version = await browser.browser_call("Browser.getVersion")
    except TargetUnavailable as exc:
        return PingResult(target=browser.name, connected=False, cdp_endpoint=_endpoint(browser),
                          browser=None, protocol=None, latency_ms=None, error=str(exc))
    return PingResult(target=browser.name, connected=True, cdp_endpoint=_endpoint(browser),
                      browser=version.get("product"), protocol=version.get("protocolVersion"),
                      latency_ms=round((time.perf_counter() - start) * 1000, 3))


TOOLS = (list_targets, ping)
