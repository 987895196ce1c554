"""``handoff`` on a headed browser brings the tab to the front of its window, where a
person at that machine already is; a headless one has no window and says nothing of it.

The browser is real and headed: Chromium launched by the gateway on an Xvfb display of
this machine (``launch = true``, ``headless = false``). Which tab is in front is read from
the browser's window: its name is its front tab's title (read with ``xdotool``; the
pages' own ``visibilityState`` cannot tell, as the gateway has the tabs it works on act
as focused ones).
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.headed import DISPLAY, xvfb
from tests.e2e.helpers import call_ok, data_url, eventually, open_gateway, write_targets

pytestmark = pytest.mark.anyio


@pytest.fixture
def display() -> Iterator[str]:
    with xvfb() as display:
        yield display


async def _window_names() -> list[str]:
    """The names of the display's browser windows: each its front tab's title."""
    found = subprocess.run(["xdotool", "search", "--onlyvisible", "--name", "Chromium",
                            "getwindowname", "%@"], env={"DISPLAY": DISPLAY},
                           capture_output=True, text=True, timeout=10)
    return found.stdout.splitlines()


async def test_handoff_brings_the_tab_to_the_front_of_a_headed_browser(
        display: str, tmp_path: Path) -> None:
    config = write_targets(tmp_path / "targets.toml", {"desk": {
        "launch": True, "headless": False, "display": display, "keep_running": False,
        "launch_profile": str(tmp_path / "profile")}})
    env = {"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}
    async with open_gateway(env, ["--config", str(config), "--tools", "all"]) as client:
        first = (await call_ok(client, "navigate", {"url": data_url("first")},
                               timeout=90))["tab"]
        second = (await call_ok(client, "navigate", {"url": data_url("second")}))["tab"]
        await eventually(_window_names, until=lambda n: any("second" in w for w in n),
                         timeout=10, what="the second tab in front")

        held = await call_ok(client, "handoff", {"tab": first, "reason": "sign in"})
        assert held["in_front"] is True, held
        names = await eventually(_window_names, until=lambda n: any("first" in w for w in n),
                                 timeout=10, what="the handed tab in front")
        assert not any("second" in w for w in names), names
        await call_ok(client, "close_tab", {"tab": second})
