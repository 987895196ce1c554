"""Emulation's pure part (``gateway.page.emulation``): presets, merging calls, the CDP
commands a state needs, what a change sends, and the bounds of every value."""

from __future__ import annotations

from typing import Any, get_args

import pytest
from pydantic import ValidationError

from gateway.page.emulation import (
    DEVICES,
    NETWORKS,
    Geolocation,
    Throttle,
    Viewport,
    changes,
    merge,
    overrides,
)
from gateway.tools.emulation import DeviceArg, NetworkArg
from gateway.tools.sets import catalogue, select


def test_every_preset_is_a_valid_viewport_with_touch_where_it_is_a_phone_or_tablet() -> None:
    assert set(DEVICES) == {"iPhone 15", "Pixel 8", "iPad", "Desktop 1080p"}
    for name, device in DEVICES.items():
        Viewport.model_validate(device.viewport.model_dump())  # within the tool's own bounds
        assert device.touch == device.viewport.mobile, name
        assert (device.user_agent is None) == (name == "Desktop 1080p"), name


def test_a_device_is_viewport_user_agent_and_touch() -> None:
    wanted = overrides({"device": "Pixel 8"})
    assert wanted == {
        "Emulation.setDeviceMetricsOverride": {"width": 412, "height": 915,
                                               "deviceScaleFactor": 2.625, "mobile": True},
        "Emulation.setTouchEmulationEnabled": {"enabled": True, "maxTouchPoints": 5},
        "Emulation.setUserAgentOverride": {"userAgent": DEVICES["Pixel 8"].user_agent,
                                           "platform": "Linux armv81"}}


def test_a_locale_is_also_the_languages_keeping_the_browsers_own_agent() -> None:
    assert overrides({"locale": "de-DE"})["Emulation.setUserAgentOverride"] == {
        "userAgent": "", "acceptLanguage": "de-DE"}  # "": Chrome keeps its own agent
    assert overrides({"locale": "fr", "user_agent": "mine"})[
        "Emulation.setUserAgentOverride"] == {"userAgent": "mine", "acceptLanguage": "fr"}


def test_a_viewport_or_user_agent_given_beside_a_device_wins() -> None:
    wanted = overrides({"device": "iPhone 15", "user_agent": "mine",
                        "viewport": {"width": 300, "height": 200, "device_scale": 1.0,
                                     "mobile": False}})
    assert wanted["Emulation.setUserAgentOverride"] == {"userAgent": "mine"}  # no platform
    assert wanted["Emulation.setDeviceMetricsOverride"]["width"] == 300
    assert "Emulation.setTouchEmulationEnabled" in wanted  # still the device's


def test_colour_scheme_and_reduced_motion_are_one_media_command() -> None:
    wanted = overrides({"color_scheme": "dark", "reduced_motion": True})
    assert wanted == {"Emulation.setEmulatedMedia": {"features": [
        {"name": "prefers-color-scheme", "value": "dark"},
        {"name": "prefers-reduced-motion", "value": "reduce"}]}}


@pytest.mark.parametrize(("network", "expected"), [
    ("offline", {"offline": True, "latency": 0, "downloadThroughput": -1,
                 "uploadThroughput": -1}),
    ("slow-3g", {"offline": False, "latency": 2000, "downloadThroughput": 50_000,
                 "uploadThroughput": 50_000}),
    ({"latency_ms": 40, "download_kbps": 8000, "upload_kbps": 800},
     {"offline": False, "latency": 40, "downloadThroughput": 1_000_000,
      "uploadThroughput": 100_000}),
])
def test_networks_in_bytes_per_second(network: Any, expected: dict[str, Any]) -> None:
    assert overrides({"network": network}) == {"Network.emulateNetworkConditions": expected}
    assert set(NETWORKS) == {"slow-3g", "fast-4g"}


def test_merge_changes_only_what_is_given_and_off_values_remove() -> None:
    state = {"timezone": "Asia/Tokyo", "network": "slow-3g", "cpu_throttle": 4.0}
    merged = merge(state, {"timezone": None, "network": "online", "cpu_throttle": 1,
                           "reduced_motion": False,
                           "geolocation": Geolocation(latitude=1, longitude=2)}, reset=False)
    assert merged == {"timezone": "Asia/Tokyo",
                      "geolocation": {"latitude": 1.0, "longitude": 2.0, "accuracy": 10.0}}
    assert state["network"] == "slow-3g"  # the tab's record is not changed in place


def test_reset_starts_from_nothing_then_applies_what_is_given() -> None:
    assert merge({"timezone": "Asia/Tokyo"}, {"locale": "de-DE"}, reset=True) == {
        "locale": "de-DE"}
    assert merge({"timezone": "Asia/Tokyo"}, {}, reset=True) == {}


def test_changes_send_what_differs_and_clear_what_went() -> None:
    before = overrides({"timezone": "Asia/Tokyo", "device": "iPad", "cpu_throttle": 2.0})
    after = overrides({"timezone": "Europe/Berlin", "device": "iPad"})
    assert changes(before, after) == [
        ("Emulation.setTimezoneOverride", "Emulation.setTimezoneOverride", {"timezoneId": ""}),
        ("Emulation.setTimezoneOverride", "Emulation.setTimezoneOverride",
         {"timezoneId": "Europe/Berlin"}),
        ("Emulation.setCPUThrottlingRate", "Emulation.setCPUThrottlingRate", {"rate": 1})]
    assert changes(after, after) == []
    cleared = changes(after, {})
    assert [method for _, method, _ in cleared] == [
        "Emulation.setTimezoneOverride", "Emulation.clearDeviceMetricsOverride",
        "Emulation.setTouchEmulationEnabled", "Emulation.setUserAgentOverride"]


def test_values_chrome_checks_itself_go_first() -> None:
    """A refused locale or time zone then fails before anything else was changed."""
    steps = changes({}, overrides({"cpu_throttle": 3.0, "device": "iPad", "locale": "fr",
                                   "timezone": "Europe/Paris"}))
    assert [key for key, _, _ in steps][:2] == ["Emulation.setLocaleOverride",
                                               "Emulation.setTimezoneOverride"]


@pytest.mark.parametrize(("model", "values"), [
    (Viewport, {"width": 99, "height": 500}),
    (Viewport, {"width": 500, "height": 10_001}),
    (Viewport, {"width": 500, "height": 500, "device_scale": 6}),
    (Geolocation, {"latitude": 90.5, "longitude": 0}),
    (Geolocation, {"latitude": 0, "longitude": -181}),
    (Geolocation, {"latitude": 0, "longitude": 0, "accuracy": -1}),
    (Throttle, {"latency_ms": -1, "download_kbps": 1, "upload_kbps": 1}),
    (Throttle, {"latency_ms": 0, "download_kbps": 0, "upload_kbps": 1}),
])
def test_out_of_range_values_are_refused(model: type[Any], values: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        model.model_validate(values)


def test_emulate_is_not_offered_read_only() -> None:
    tools = catalogue()
    assert "emulate" in select("all", tools).offered
    assert "emulate" not in select("all", tools, read_only=True).offered
    assert select("emulation", tools).offered == {"emulate"}  # its category


def test_the_tool_offers_exactly_the_presets_there_are() -> None:
    assert get_args(DeviceArg) == tuple(DEVICES)
    named = get_args(get_args(NetworkArg)[0])
    assert set(named) == {*NETWORKS, "offline", "online"}
