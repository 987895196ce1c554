"""Emulating a device, a place, a network and a CPU on one tab: presets, state, CDP.

What a tab emulates is kept as a small dict (its *state*: the emulate tool's
arguments, merged call after call, ``reset`` emptying it) and shown as it is by
``list_tabs``. The pure part turns a state into the session-scoped CDP commands
that make it so (``overrides``: method → params) and a change of state into the
commands that get from one to the other (``changes``: a cleared setting is sent
its own clearing command). ``apply`` sends them; the tab keeps both in this
module's slot (``EMULATION``), whose overrides its next session gets again (a
reconnect or renderer crash loses the old session's; navigations, cross-process
ones too, keep them).

A device preset is a viewport, a user agent and touch; a setting given beside
it (``viewport``, ``user_agent``) wins over the preset's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from gateway.browsers.pages import GEOLOCATION
from gateway.errors import CdpError, InvalidArgument
from gateway.tabs.tab import Slot

if TYPE_CHECKING:
    from gateway.browsers.session import TabSession
    from gateway.tabs.tab import Tab

__all__ = ["DEVICES", "EMULATION", "NETWORKS", "Device", "Emulation", "Geolocation",
           "Throttle", "Viewport", "apply", "changes", "emulating", "merge", "overrides",
           "overrides_sent"]


class Viewport(BaseModel):
    width: int = Field(ge=100, le=10_000)
    height: int = Field(ge=100, le=10_000)
    device_scale: float = Field(1.0, ge=0.5, le=5)
    mobile: bool = False


class Geolocation(BaseModel):
    latitude: float = Field(ge=-90, le=90)
    longitude: float = Field(ge=-180, le=180)
    accuracy: float = Field(10.0, ge=0, le=100_000)


class Throttle(BaseModel):
    latency_ms: int = Field(ge=0, le=60_000)
    download_kbps: int = Field(ge=1, le=10_000_000)
    upload_kbps: int = Field(ge=1, le=10_000_000)


@dataclass(frozen=True)
class Device:
    viewport: Viewport
    user_agent: str | None  # None: the browser's own
    touch: bool
    platform: str | None = None  # navigator.platform, with the preset's user agent


_SAFARI_IPHONE = ("Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 "
                  "(KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1")
_SAFARI_IPAD = ("Mozilla/5.0 (iPad; CPU OS 17_5 like Mac OS X) AppleWebKit/605.1.15 "
                "(KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1")
_CHROME_PIXEL = ("Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like "
                 "Gecko) Chrome/126.0.0.0 Mobile Safari/537.36")

DEVICES = {
    "iPhone 15": Device(Viewport(width=393, height=852, device_scale=3, mobile=True),
                        _SAFARI_IPHONE, touch=True, platform="iPhone"),
    "Pixel 8": Device(Viewport(width=412, height=915, device_scale=2.625, mobile=True),
                      _CHROME_PIXEL, touch=True, platform="Linux armv81"),
    "iPad": Device(Viewport(width=820, height=1180, device_scale=2, mobile=True),
                   _SAFARI_IPAD, touch=True, platform="iPad"),
    "Desktop 1080p": Device(Viewport(width=1920, height=1080, device_scale=1),
                             None, touch=False),
}
"""The presets (``device``): sizes in CSS pixels as the makers publish them."""

NETWORKS = {
    "slow-3g": Throttle(latency_ms=2000, download_kbps=400, upload_kbps=400),
    "fast-4g": Throttle(latency_ms=165, download_kbps=8100, upload_kbps=1350),
}
"""Chrome DevTools' own presets of those names (``offline`` is no throttle but none)."""

_NO_LIMIT = {"offline": False, "latency": 0, "downloadThroughput": -1, "uploadThroughput": -1}
_CLEAR: dict[str, tuple[str, dict[str, Any]]] = {
    "Emulation.setLocaleOverride": ("Emulation.setLocaleOverride", {}),
    "Emulation.setTimezoneOverride": ("Emulation.setTimezoneOverride", {"timezoneId": ""}),
    "Emulation.setDeviceMetricsOverride": ("Emulation.clearDeviceMetricsOverride", {}),
    "Emulation.setTouchEmulationEnabled": ("Emulation.setTouchEmulationEnabled",
                                           {"enabled": False}),
    "Emulation.setUserAgentOverride": ("Emulation.setUserAgentOverride", {"userAgent": ""}),
    "Emulation.setGeolocationOverride": ("Emulation.clearGeolocationOverride", {}),
    "Emulation.setEmulatedMedia": ("Emulation.setEmulatedMedia", {"features": []}),
    "Network.emulateNetworkConditions": ("Network.emulateNetworkConditions", _NO_LIMIT),
    "Emulation.setCPUThrottlingRate": ("Emulation.setCPUThrottlingRate", {"rate": 1}),
}
"""Each override, and the command that takes it away. Ordered: the values Chrome
itself checks (locale, time zone) go first, so a refused one fails before anything
else changed."""

_GEO = GEOLOCATION
_ZONE = "Emulation.setTimezoneOverride"
"""Chrome checks a time zone only when it sets one where none is: over one in effect it
accepts any name and keeps the old zone. So a changed zone is cleared first, then set."""
_OFF = {"network": "online", "cpu_throttle": 1, "reduced_motion": False}
"""Values that mean "not emulated": given, they remove the setting."""


def merge(state: dict[str, Any], given: dict[str, Any], reset: bool) -> dict[str, Any]:
    """The state after a call: ``state`` (empty on ``reset``) with every setting
    ``given`` (None: not given) changed; a setting given as its "off" value goes."""
    merged = {} if reset else dict(state)
    for name, value in given.items():
        if value is None:
            continue
        if isinstance(value, BaseModel):
            value = value.model_dump()
        if _OFF.get(name, object()) == value:
            merged.pop(name, None)
        else:
            merged[name] = value
    return merged


def overrides(state: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The CDP commands (method → params) that make a tab emulate ``state``."""
    device = DEVICES.get(state.get("device", ""))
    wanted: dict[str, dict[str, Any]] = {}
    if "locale" in state:
        wanted["Emulation.setLocaleOverride"] = {"locale": state["locale"]}
    if "timezone" in state:
        wanted["Emulation.setTimezoneOverride"] = {"timezoneId": state["timezone"]}
    viewport = state.get("viewport") or (device.viewport.model_dump() if device else None)
    if viewport is not None:
        wanted["Emulation.setDeviceMetricsOverride"] = {
            "width": viewport["width"], "height": viewport["height"],
            "deviceScaleFactor": viewport["device_scale"], "mobile": viewport["mobile"]}
    if device is not None and device.touch:
        wanted["Emulation.setTouchEmulationEnabled"] = {"enabled": True, "maxTouchPoints": 5}
    agent = _user_agent(state, device)
    if agent:
        wanted["Emulation.setUserAgentOverride"] = agent
    if "geolocation" in state:
        wanted["Emulation.setGeolocationOverride"] = dict(state["geolocation"])
    features = [{"name": "prefers-color-scheme", "value": state["color_scheme"]}
                ] if "color_scheme" in state else []
    if state.get("reduced_motion"):
        features.append({"name": "prefers-reduced-motion", "value": "reduce"})
    if features:
        wanted["Emulation.setEmulatedMedia"] = {"features": features}
    if "network" in state:
        wanted["Network.emulateNetworkConditions"] = _network(state["network"])
    if "cpu_throttle" in state:
        wanted["Emulation.setCPUThrottlingRate"] = {"rate": state["cpu_throttle"]}
    return wanted


def _user_agent(state: dict[str, Any], device: Device | None) -> dict[str, Any]:
    """The user-agent override: the agent string (an empty one keeps the browser's) and,
    for a locale, the languages (``navigator.language``, ``Accept-Language``)."""
    agent: dict[str, Any] = {}
    if state.get("user_agent"):
        agent["userAgent"] = state["user_agent"]
    elif device is not None and device.user_agent:
        agent["userAgent"] = device.user_agent
        agent["platform"] = device.platform
    if "locale" in state:
        agent = {"userAgent": "", **agent, "acceptLanguage": state["locale"]}
    return agent


def _network(network: str | dict[str, Any]) -> dict[str, Any]:
    if network == "offline":
        return {**_NO_LIMIT, "offline": True}
    throttle = NETWORKS[network] if isinstance(network, str) else Throttle(**network)
    return {"offline": False, "latency": throttle.latency_ms,
            "downloadThroughput": throttle.download_kbps * 1000 / 8,
            "uploadThroughput": throttle.upload_kbps * 1000 / 8}


def changes(before: dict[str, dict[str, Any]], after: dict[str, dict[str, Any]]
            ) -> list[tuple[str, str, dict[str, Any]]]:
    """What to send to get from overrides ``before`` to ``after``: (override, method,
    params), in ``_CLEAR``'s order; an override that goes is sent its clearing command."""
    steps = []
    for key, clear in _CLEAR.items():
        if key in after and after[key] != before.get(key):
            if key == _ZONE and key in before:
                steps.append((key, *clear))  # see _ZONE
            steps.append((key, key, after[key]))
        elif key in before and key not in after:
            steps.append((key, *clear))
    return steps


@dataclass
class Emulation:
    """What a tab emulates (the emulate tool's state, shown by list_tabs) and the
    session-scoped commands sent to make it so (method → params)."""

    state: dict[str, Any] = field(default_factory=dict)
    overrides: dict[str, dict[str, Any]] = field(default_factory=dict)


EMULATION: Slot[Emulation] = Slot("emulation", Emulation,
                                  replay=lambda emulation: emulation.overrides.items())
"""A tab's emulation; a new session of the tab is sent its overrides again."""


def emulating(tab: Tab) -> dict[str, Any]:
    """What ``tab`` emulates (empty: nothing)."""
    emulation = tab.peek(EMULATION)
    return emulation.state if emulation is not None else {}


def overrides_sent(tab: Tab) -> dict[str, dict[str, Any]]:
    """The overrides in force on ``tab``'s session (method → params)."""
    emulation = tab.peek(EMULATION)
    return emulation.overrides if emulation is not None else {}


async def apply(session: TabSession, state: dict[str, Any], timeout_s: float) -> None:
    """Make ``tab`` emulate ``state``, and record it on the tab. Hold ``tab.lock``.

    If Chrome refuses a value, what this call already changed is changed back, so
    the tab goes on emulating exactly what it records. Whatever happens, the tab's
    ``overrides`` are the ones sent (what a new session gets again).
    """
    browser, tab = session.browser, session.tab
    emulation = tab.state(EMULATION)
    before, wanted = emulation.overrides, overrides(state)
    steps = changes(before, wanted)
    if any(key == _GEO and key in wanted for key, _, _ in steps):
        browser.pages.scope.check_own_context(browser.name, tab.context,
                                              "emulating a position (a geolocation grant)")
        await _geolocation_permission(session, grant=True)
    try:
        await _send(session, steps, wanted, timeout_s)
    except CdpError as exc:
        await _send(session, changes(emulation.overrides, before), before, timeout_s)
        raise InvalidArgument(
            f"the browser refused {exc.method} ({exc.message}); the tab's emulation is "
            "unchanged — check the value (timezone: an IANA name such as 'Europe/Berlin'; "
            "locale: a BCP 47 tag such as 'de-DE')") from None
    emulation.state = state
    if _GEO in before and _GEO not in wanted and not any(
            _GEO in overrides_sent(other) and other.context == tab.context
            for other in browser.tabs.values() if other is not tab):
        await _geolocation_permission(session, grant=False)


async def _send(session: TabSession, steps: list[tuple[str, str, dict[str, Any]]],
                wanted: dict[str, dict[str, Any]], timeout_s: float) -> None:
    """Send ``steps`` towards ``wanted``, noting each one sent in the tab's overrides."""
    emulation = session.tab.state(EMULATION)
    for key, method, params in steps:
        await session.call(method, params, timeout_s=timeout_s)
        applied = {k: v for k, v in emulation.overrides.items() if k != key}
        sets = method == key and params == wanted.get(key)  # else it cleared the override
        emulation.overrides = {**applied, key: params} if sets else applied


async def _geolocation_permission(session: TabSession, *, grant: bool) -> None:
    """An emulated position reaches a page only with the permission granted: for every
    origin of the tab's browser context, so it holds across navigations. That grant is
    the context's, not the tab's: it is withdrawn (the context's permission overrides
    reset) once no tab of the context emulates a position, so no site keeps it."""
    browser, tab = session.browser, session.tab
    info = await browser.browser_call("Target.getTargetInfo", {"targetId": tab.target_id})
    context = info.get("targetInfo", {}).get("browserContextId")
    where = {"browserContextId": context} if context else {}
    if grant:
        await browser.browser_call("Browser.setPermission", {
            "permission": {"name": "geolocation"}, "setting": "granted", **where})
    else:
        await browser.browser_call("Browser.resetPermissions", where)
