"""Whether a browser has windows, from its captured ``Browser.getVersion`` (Chromium 156):
handoff brings a tab to the front only where there is a front."""

import json
from pathlib import Path

import pytest

from gateway.browsers.browser import is_headless

DEVTOOLS = Path(__file__).parents[2] / "fixtures" / "devtools"


def _version(name: str) -> dict[str, str]:
    return dict(json.loads((DEVTOOLS / f"chromium-156-{name}.getVersion.json").read_text()))


def test_chromium_156_headless_is_told_by_its_user_agent_not_its_product() -> None:
    version = _version("headless")
    assert version["product"].startswith("Chrome/")  # what misled the product check
    assert is_headless(version)


def test_a_headed_chromium_is_not_headless() -> None:
    assert not is_headless(_version("headed"))


@pytest.mark.parametrize("version", [
    {"product": "HeadlessChrome/120.0.6099.0", "userAgent": "Mozilla/5.0 HeadlessChrome/120"},
    {"product": "Chrome/156.0.8078.114"},  # no user agent said: no window assumed
    {},
])
def test_older_or_partial_answers_count_as_headless(version: dict[str, str]) -> None:
    assert is_headless(version)
