"""``emulate`` on a real tab of an SSH target: what the page itself sees, before and after.

The test page (``tests/e2e/browse_site/emulation.html``, served inside host ``h1``)
reports its viewport, user agent, touch points, time zone, locale, colour scheme,
reduced motion, network state and geolocation; every check reads that report
through ``evaluate``. "Survives a navigation" is checked on a cross-site page
(``localhost`` vs ``127.0.0.1``: another site, so another renderer process).

Timeouts here only bound how long a test may wait; nothing asserts how fast anything was.
"""

from __future__ import annotations

from typing import Any

import pytest

from gateway.page.emulation import DEVICES
from tests.e2e.helpers import call_err, call_ok, eventually, present
from tests.e2e.pages import (
    DevtoolsEnv,
    image_of,
    image_size,
    js,
    page_fixtures,
    raw_call,
)
from tests.topology import Topology

pytestmark = pytest.mark.anyio

REPORT = "csgwReport()"
POSITION = "csgwPosition()"


env, tabs = page_fixtures("emulate")


def same_site(env: DevtoolsEnv) -> str:
    return env.site("h1").url("/browse/emulation.html")


def cross_site(env: DevtoolsEnv) -> str:
    return f"http://localhost:{env.site('h1').ports['b']}/browse/emulation.html"


async def open_page(env: DevtoolsEnv, tabs: list[int]) -> int:
    nav = await call_ok(env.client, "navigate", {"url": same_site(env), "target": "h1"})
    tabs.append(int(nav["tab"]))
    return int(nav["tab"])


async def report(env: DevtoolsEnv, tab: int) -> dict[str, Any]:
    """What the page sees, less the network estimates (Chrome adds noise to those on
    every load: two plain loads differ)."""
    seen = dict(await js(env.client, tab, REPORT))
    return {k: v for k, v in seen.items() if k not in ("rtt", "downlink")}


async def emulate(env: DevtoolsEnv, tab: int, **args: Any) -> dict[str, Any]:
    result = await call_ok(env.client, "emulate", {"tab": tab, **args})
    assert (result["tab"], result["target"]) == (tab, "h1")
    return dict(result["emulating"])


async def listed(env: DevtoolsEnv, tab: int) -> dict[str, Any]:
    tabs = (await call_ok(env.client, "list_tabs", {"target": "h1"}))["tabs"]
    return dict(next(t for t in tabs if t["tab"] == tab))


async def reload_at(env: DevtoolsEnv, tab: int, url: str) -> dict[str, Any]:
    await call_ok(env.client, "navigate", {"tab": tab, "url": url})
    return await report(env, tab)


async def test_a_phone_in_tokyo_in_dark_mode_survives_navigation_and_resets(
    env: DevtoolsEnv, tabs: list[int]
) -> None:
    tab = await open_page(env, tabs)
    plain = await report(env, tab)
    assert "emulates" not in await listed(env, tab)  # absent while nothing is emulated
    phone = DEVICES["iPhone 15"]

    emulating = await emulate(env, tab, device="iPhone 15", timezone="Asia/Tokyo",
                              locale="ja-JP", color_scheme="dark", reduced_motion=True)

    assert emulating == {"device": "iPhone 15", "timezone": "Asia/Tokyo", "locale": "ja-JP",
                         "color_scheme": "dark", "reduced_motion": True}
    assert (await listed(env, tab))["emulates"] == emulating
    expected = {"width": phone.viewport.width, "height": phone.viewport.height,
                "dpr": phone.viewport.device_scale, "ua": phone.user_agent, "touch": 5,
                "platform": "iPhone", "timezone": "Asia/Tokyo", "locale": "ja-JP",
                "language": "ja-JP", "dark": True, "light": False, "reduced": True}
    for url in (None, cross_site(env), same_site(env)):  # as set, then after navigations
        seen = await report(env, tab) if url is None else await reload_at(
            env, tab, url)
        assert {k: seen[k] for k in expected} == expected, (url, seen)

    assert await emulate(env, tab, reset=True) == {}
    assert "emulates" not in await listed(env, tab)
    assert await reload_at(env, tab, same_site(env)) == plain


async def test_each_call_changes_only_what_it_names(env: DevtoolsEnv, tabs: list[int]) -> None:
    tab = await open_page(env, tabs)
    plain = await report(env, tab)

    await emulate(env, tab, viewport={"width": 500, "height": 400, "device_scale": 2},
                  color_scheme="light")
    emulating = await emulate(env, tab, user_agent="csgw-agent/1.0 (test)")

    assert emulating == {"viewport": {"width": 500, "height": 400, "device_scale": 2.0,
                                      "mobile": False},
                         "color_scheme": "light", "user_agent": "csgw-agent/1.0 (test)"}
    seen = await report(env, tab)
    assert (seen["width"], seen["height"], seen["dpr"]) == (500, 400, 2)
    assert (seen["ua"], seen["light"], seen["dark"]) == ("csgw-agent/1.0 (test)", True, False)
    assert seen["touch"] == plain["touch"] and seen["timezone"] == plain["timezone"]


async def test_a_full_page_screenshot_keeps_the_emulated_viewport(
    env: DevtoolsEnv, tabs: list[int]
) -> None:
    """screenshot(full_page) resizes the emulated window for the capture: it must
    capture at the emulated width and give the emulated viewport back after."""
    tab = await open_page(env, tabs)
    await emulate(env, tab, viewport={"width": 500, "height": 400})

    shot, _ = await raw_call(env.client, "screenshot", {"tab": tab, "full_page": True})

    assert not shot.is_error, shot
    assert image_size(image_of(shot)[0])[1] == 500
    seen = await report(env, tab)
    assert (seen["width"], seen["height"]) == (500, 400)


async def test_a_locale_is_intl_navigator_language_and_accept_language(
    env: DevtoolsEnv, tabs: list[int]
) -> None:
    tab = await open_page(env, tabs)
    plain = await report(env, tab)

    await emulate(env, tab, locale="de-DE")
    seen = await reload_at(env, tab, same_site(env))

    assert (seen["locale"], seen["language"]) == ("de-DE", "de-DE")
    assert (seen["ua"], seen["platform"]) == (plain["ua"], plain["platform"])  # kept
    listed = await call_ok(env.client, "network_requests", {
        "tab": tab, "resource_types": ["Document"]})
    newest = max(r["id"] for r in listed["requests"])
    detail = await call_ok(env.client, "network_request", {"tab": tab, "id": newest})
    headers = {k.lower(): v for k, v in detail["request_headers"].items()}
    assert headers["accept-language"].startswith("de-DE"), headers


async def test_emulation_is_per_tab(env: DevtoolsEnv, tabs: list[int]) -> None:
    first, second = await open_page(env, tabs), await open_page(env, tabs)
    plain = await report(env, second)

    await emulate(env, first, device="Pixel 8", timezone="America/New_York")

    assert (await report(env, first))["timezone"] == "America/New_York"
    assert await report(env, second) == plain
    assert "emulates" not in await listed(env, second)


async def test_geolocation_reaches_the_page_across_origins(
    env: DevtoolsEnv, tabs: list[int]
) -> None:
    tab = await open_page(env, tabs)
    here = {"latitude": 48.8584, "longitude": 2.2945, "accuracy": 25.0}

    await emulate(env, tab, geolocation=here)

    assert await js(env.client, tab, POSITION) == here
    await call_ok(env.client, "navigate", {"tab": tab, "url": cross_site(env)})
    assert await js(env.client, tab, POSITION) == here
    await emulate(env, tab, reset=True)
    assert await js(env.client, tab, POSITION) != here


async def test_a_reset_withdraws_the_geolocation_grant_from_other_tabs_too(
    env: DevtoolsEnv, tabs: list[int]
) -> None:
    """The position reaches a page only with the permission granted, for every origin of
    the browser context: once no tab emulates a position, no site keeps that grant."""
    state = "navigator.permissions.query({name: 'geolocation'}).then(p => p.state)"
    tab, other = await open_page(env, tabs), await open_page(env, tabs)
    before = await js(env.client, other, state)
    assert before != "granted", "the browser already grants geolocation: nothing to test"

    await emulate(env, tab, geolocation={"latitude": 1.0, "longitude": 2.0})
    assert await js(env.client, other, state) == "granted"  # the context's grant
    await emulate(env, other, geolocation={"latitude": 3.0, "longitude": 4.0})
    await emulate(env, tab, reset=True)
    assert await js(env.client, other, state) == "granted", "other still emulates one"
    await emulate(env, other, geolocation=None, reset=True)

    assert await js(env.client, other, state) == before
    assert await js(env.client, tab, state) == before


async def test_the_grant_goes_with_the_last_tab_that_emulated_a_position(
    env: DevtoolsEnv, tabs: list[int]
) -> None:
    """Closing tabs withdraws the grant as a reset does: not while another tab of the
    context still emulates a position, then once the last one is gone — closed by
    close_tab or by somebody else (here a browser-level Target.closeTarget)."""
    state = "navigator.permissions.query({name: 'geolocation'}).then(p => p.state)"
    first, second, plain = (await open_page(env, tabs), await open_page(env, tabs),
                            await open_page(env, tabs))
    before = await js(env.client, plain, state)
    assert before != "granted", "the browser already grants geolocation: nothing to test"
    await emulate(env, first, geolocation={"latitude": 1.0, "longitude": 2.0})
    await emulate(env, second, geolocation={"latitude": 3.0, "longitude": 4.0})

    await call_ok(env.client, "close_tab", {"tab": first})
    tabs.remove(first)
    assert await js(env.client, plain, state) == "granted", "second still emulates one"
    info = await call_ok(env.client, "cdp_command", {"tab": second,
                                                     "method": "Target.getTargetInfo"})
    target_id = info["result"]["targetInfo"]["targetId"]
    await call_ok(env.client, "cdp_command", {"target": "h1", "method": "Target.closeTarget",
                                              "params": {"targetId": target_id}})
    tabs.remove(second)

    async def withdrawn() -> bool:
        return await js(env.client, plain, state) == before

    await eventually(withdrawn, timeout=10, what="the grant to be withdrawn")


async def test_network_offline_then_throttled_then_online(
    env: DevtoolsEnv, tabs: list[int]
) -> None:
    tab = await open_page(env, tabs)

    await emulate(env, tab, network="offline")
    assert (await report(env, tab))["online"] is False
    fetched = await js(env.client, tab, "fetch('/api/data.json').then(() => 'ok', "
                                        "e => 'failed: ' + e.name)")
    assert fetched == "failed: TypeError"

    # Chrome reports an emulated network to the page's Network Information API, rounded
    # and with some noise of its own (against fingerprinting): near the values set.
    await emulate(env, tab, network="slow-3g")
    seen = await js(env.client, tab, REPORT)
    assert seen["online"] is True and 1600 <= seen["rtt"] <= 2400, seen
    assert 0.3 <= seen["downlink"] <= 0.55, seen
    emulating = await emulate(env, tab, network={"latency_ms": 300, "download_kbps": 1000,
                                                 "upload_kbps": 500})
    assert emulating == {"network": {"latency_ms": 300, "download_kbps": 1000,
                                     "upload_kbps": 500}}
    seen = await js(env.client, tab, REPORT)
    assert 200 <= seen["rtt"] <= 450 and 0.75 <= seen["downlink"] <= 1.3, seen
    await call_ok(env.client, "navigate", {"tab": tab, "url": cross_site(env)})
    seen = await js(env.client, tab, REPORT)  # kept by the cross-site page too
    assert 200 <= seen["rtt"] <= 450 and 0.75 <= seen["downlink"] <= 1.3, seen

    assert await emulate(env, tab, network="online") == {}
    assert (await js(env.client, tab, "fetch('/api/data.json').then(r => r.status)")) == 200


async def test_cpu_throttle_is_recorded_and_cleared(env: DevtoolsEnv, tabs: list[int]) -> None:
    """A slower CPU shows in nothing a page can read without a stopwatch: what the
    gateway records, and that Chrome accepted it, is what is checked."""
    tab = await open_page(env, tabs)

    assert await emulate(env, tab, cpu_throttle=4) == {"cpu_throttle": 4.0}
    assert (await listed(env, tab))["emulates"] == {"cpu_throttle": 4.0}
    assert await emulate(env, tab, cpu_throttle=1) == {}


@pytest.mark.parametrize(("args", "says"), [
    ({"device": "Nokia 3310"}, "iPhone 15"),
    ({"viewport": {"width": 50, "height": 400}}, "width"),
    ({"viewport": {"width": 400, "height": 20_000}}, "height"),
    ({"cpu_throttle": 30}, "cpu_throttle"),
    ({"geolocation": {"latitude": 100, "longitude": 0}}, "latitude"),
    ({"network": "2g"}, "network"),
    ({"user_agent": "a\r\nX-Injected: 1"}, "user_agent"),
    ({"timezone": "Mars/Olympus_Mons"}, "IANA name"),
    ({"locale": "de-DE", "timezone": "Mars/Olympus_Mons"}, "IANA name"),  # locale undone
    ({"locale": "not a locale"}, "locale"),
])
async def test_bad_input_is_refused_and_changes_nothing(
    env: DevtoolsEnv, tabs: list[int], args: dict[str, Any], says: str
) -> None:
    tab = await open_page(env, tabs)
    await emulate(env, tab, color_scheme="dark")
    before = await report(env, tab)

    error = await call_err(env.client, "emulate", {"tab": tab, "cpu_throttle": 2, **args})

    assert says in error, error
    assert (await listed(env, tab))["emulates"] == {"color_scheme": "dark"}
    assert await report(env, tab) == before


async def test_a_bad_time_zone_over_an_emulated_one_is_refused(
    env: DevtoolsEnv, tabs: list[int]
) -> None:
    """Chrome checks a zone name only where no override is in effect: over one it took
    any name, kept the old zone, and emulate reported the bad name as emulated."""
    tab = await open_page(env, tabs)
    await emulate(env, tab, timezone="Asia/Tokyo")

    error = await call_err(env.client, "emulate", {"tab": tab, "timezone": "Mars/Olympus_Mons"})

    assert "IANA name" in error, error
    assert (await listed(env, tab))["emulates"] == {"timezone": "Asia/Tokyo"}
    assert (await report(env, tab))["timezone"] == "Asia/Tokyo"
    assert await emulate(env, tab, timezone="Europe/Berlin") == {"timezone": "Europe/Berlin"}
    assert (await report(env, tab))["timezone"] == "Europe/Berlin"


async def test_emulation_comes_back_after_an_ssh_reconnect(
    env: DevtoolsEnv, tabs: list[int], fault_topology: Topology
) -> None:
    """A dropped connection ends the tab's CDP session, and Chrome drops a session's
    overrides with it: the gateway's new session must set them again. (Last in the
    module: it cuts the module's gateway off once.)"""
    tab = await open_page(env, tabs)
    await emulate(env, tab, timezone="Pacific/Auckland", color_scheme="dark")

    fault_topology.host("h1").kill_ssh_sessions()

    async def seen() -> dict[str, Any] | None:
        result = await env.client.call_tool("evaluate", {"tab": tab, "expression": REPORT,
                                                         "timeout_s": 5})
        return None if result.is_error else dict(result.structured_content["value"])

    after = await eventually(seen, until=present,
                             timeout=30, what=f"evaluate on tab {tab} to work again")
    assert (after["timezone"], after["dark"]) == ("Pacific/Auckland", True)
    assert (await listed(env, tab))["emulates"] == {"timezone": "Pacific/Auckland",
                                                    "color_scheme": "dark"}
